"""The README's RBAC commands, run verbatim against the simulated cluster's kube-apiserver."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.kube import KubeHandle
from tests.kubectl import kubectl_binary

README = Path(__file__).resolve().parents[3] / "README.md"
MARKER = "<!-- rbac-check:"


def rbac_block() -> list[tuple[str, str]]:
    """(command, expectation) for each line of the block after the marker."""
    text = README.read_text()
    after = text[text.index(MARKER) :]
    block = re.search(r"```sh\n(.*?)```", after, re.DOTALL)
    assert block is not None, "the README's rbac-check block is missing"
    lines = []
    for line in block.group(1).splitlines():
        command, _, expected = line.partition("#")
        lines.append((command.strip(), expected.strip()))
    return lines


def test_the_readme_rbac_commands_work_verbatim(kube_cluster: KubeHandle) -> None:
    lines = rbac_block()
    assert any("--token" in command for command, _ in lines)
    env = {
        **kube_cluster.env,
        "PATH": f"{Path(kubectl_binary()).parent}:{kube_cluster.env['PATH']}",
    }
    try:
        for command, expected in lines:
            result = subprocess.run(
                ["bash", "-c", command], capture_output=True, text=True, env=env, timeout=60,
                check=False,
            )  # fmt: skip
            output = result.stdout + result.stderr
            if expected == "Forbidden":
                assert result.returncode != 0, output
                assert 'User "system:serviceaccount:rb:reader" cannot list resource "pods"' in (
                    output
                )
            elif expected == "No resources found":
                assert result.returncode == 0, output
                assert "No resources found in rb namespace." in output
            elif expected == "pods [get list]":
                assert result.returncode == 0, output
                assert re.search(r"^pods\s+\[\]\s+\[\]\s+\[get list\]", output, re.M), output
            else:
                assert not expected, f"no check for the README's comment {expected!r}"
                assert result.returncode == 0, f"{command}: {output}"
    finally:
        kube_cluster.kubectl("delete", "namespace", "rb", "--wait=false", check=False)
