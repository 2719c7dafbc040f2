"""Run helm as a user would, isolated from the user's own helm configuration.

The pinned helm (v4.1.4, put beside the venv's Python by hack/fetch-helm.py) is preferred; helm
on PATH is the fallback (the kind tier on a Docker user's machine). Every run gets its own
HELM_CACHE_HOME, HELM_CONFIG_HOME and HELM_DATA_HOME, so no repository list, plugin or cache of
the user's leaks into a test, and a test writes nothing into ~/.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

CHART = Path(__file__).resolve().parent.parent / "charts" / "nemotron-operator"


def helm_binary() -> str:
    beside_python = Path(sys.executable).parent / "helm"
    if beside_python.exists():
        return str(beside_python)
    found = shutil.which("helm")
    if found is None:
        raise RuntimeError("helm not found: hack/fetch-helm.py puts the pinned one into .venv/bin")
    return found


def helm_env(base: dict[str, str], home: Path) -> dict[str, str]:
    """``base`` with helm's three homes under ``home`` (created)."""
    env = dict(base)
    for name in ("CACHE", "CONFIG", "DATA"):
        directory = home / f"helm-{name.lower()}"
        directory.mkdir(parents=True, exist_ok=True)
        env[f"HELM_{name}_HOME"] = str(directory)
    return env


def run_helm(
    env: dict[str, str], *args: str, check: bool = True, timeout: float = 120.0
) -> subprocess.CompletedProcess[str]:
    """Run helm with ``env`` (from helm_env); with ``check``, a failure fails the test."""
    result = subprocess.run(
        [helm_binary(), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )
    if check and result.returncode != 0:
        raise AssertionError(
            f"helm {' '.join(args)} failed ({result.returncode}):\n{result.stdout}{result.stderr}"
        )
    return result
