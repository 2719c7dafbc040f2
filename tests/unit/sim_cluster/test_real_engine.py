"""`--engine vllm`: which program a vLLM container runs and where its checkpoint goes (the
container root it runs in, with processes and namespaces: tests/integration/processes/
test_container_root.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from sim_cluster.checkpoints.placement import checkpoint_dir
from sim_cluster.programs import local_programs
from sim_cluster.real_engine import engine_mappings

RENDERED = {"name": "vllm", "image": "vllm/vllm-openai:v0.31.0"}


def test_the_stand_in_maps_nothing() -> None:
    assert engine_mappings("stand-in", None) == ({}, {})


def test_the_rendered_command_runs_unchanged_on_the_engine_python(tmp_path: Path) -> None:
    python = tmp_path / "python"
    python.write_text("")
    images, commands = engine_mappings("vllm", python)
    programs = local_programs(images, commands)
    assert programs.runs(RENDERED)
    assert programs.runs({"image": "vllm/vllm-openai@sha256:ab"})
    argv = programs.argv(RENDERED, ["vllm", "serve"], ["/models/m", "--port", "8000"])
    launcher = [sys.executable, "-m", "sim_cluster.container_root"]
    cli = [str(python), "-m", "vllm.entrypoints.cli.main"]
    assert argv == [*launcher, *cli, "serve", "/models/m", "--port", "8000"]
    # without a command: the image's entrypoint, `vllm serve`
    assert programs.argv(RENDERED, [], ["/models/m"]) == [*launcher, *cli, "serve", "/models/m"]


def test_engine_options_that_cannot_work_name_the_option(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"--vllm-python.*hack/build-vllm-cpu\.sh"):
        engine_mappings("vllm", None)
    with pytest.raises(ValueError, match=r"--vllm-python: .*does not exist"):
        engine_mappings("vllm", tmp_path / "missing")
    with pytest.raises(ValueError, match="--engine: 'sglang' is not one of stand-in, vllm"):
        engine_mappings("sglang", None)


def test_a_checkpoint_goes_where_the_deployment_names_it(tmp_path: Path) -> None:
    deployment = {
        "metadata": {"namespace": "ai"},
        "spec": {"model": {"source": {"pvc": {"claimName": "w", "path": "/ck/step-1"}}}},
    }
    assert checkpoint_dir(deployment, tmp_path) == tmp_path / "ai" / "w" / "ck" / "step-1"
    hub: dict[str, Any] = {"spec": {"model": {"source": {"huggingFace": {}}}}}
    with pytest.raises(ValueError, match=r"spec\.model\.source\.pvc\.claimName"):
        checkpoint_dir(hub, tmp_path)
