"""Every serving container the operator renders for the examples starts the stand-in vLLM.

The renderer and the stand-in share the flag table, but the stand-in also makes vLLM's
post-parse checks (speculative config, modality limits, reasoning parser, ranks); a rendered
command that real vLLM would refuse must fail here, not in a cluster.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from nemotron_operator.cli import main as cli_main
from nemotron_sim.vllm import parse_serve_argv

pytestmark = pytest.mark.integration

EXAMPLES = sorted(Path(__file__).resolve().parents[3].joinpath("examples").glob("*.yaml"))


def serving_containers(objects: list[dict[str, Any]]) -> list[list[str]]:
    argvs = []
    for obj in objects:
        if obj.get("kind") != "StatefulSet":
            continue
        for container in obj["spec"]["template"]["spec"]["containers"]:
            argv = [*(container.get("command") or []), *(container.get("args") or [])]
            if "serve" in argv[:3]:
                argvs.append(argv)
    return argvs


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda path: path.stem)
def test_rendered_vllm_commands_are_accepted(
    example: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli_main(["render", "-f", str(example)]) == 0
    objects = [doc for doc in yaml.safe_load_all(capsys.readouterr().out) if doc]
    argvs = serving_containers(objects)
    assert argvs, f"{example.name}: no vllm serve container rendered"
    for argv in argvs:
        config = parse_serve_argv(argv)  # raises StubVllmArgumentError on a refusal
        assert config.model in argv
        assert config.served_model_name
