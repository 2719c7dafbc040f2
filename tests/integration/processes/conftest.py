"""A simulated cluster that runs ``lister.py`` for the image ``sim.local/lister``, and helm."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

PROGRAM = Path(__file__).with_name("lister.py")
CHART = Path(__file__).parents[1] / "charts" / "lister"
# Probes, back-off and restarts at test speed: probe periods x0.1, back-off 0.3 s doubling to 1.2 s.
PROCESS_OPTIONS: dict[str, Any] = {
    "images": {"sim.local/lister": [sys.executable, str(PROGRAM)]},
    "probe_time_scale": 0.1,
    "crash_backoff_seconds": 0.3,
    "crash_backoff_cap_seconds": 1.2,
    "stop_grace_seconds": 2.0,
    "system_nodes": 1,
}


def helm_binary() -> str:
    beside_python = Path(sys.executable).parent / "helm"
    if not beside_python.exists():
        raise RuntimeError("helm not found beside python: run hack/lib.sh ensure_venv")
    return str(beside_python)


class Helm:
    def __init__(self, env: dict[str, str], home: Path) -> None:
        self.env = {
            **env,
            "HELM_CACHE_HOME": str(home / "cache"),
            "HELM_CONFIG_HOME": str(home / "config"),
            "HELM_DATA_HOME": str(home / "data"),
        }

    def __call__(self, *args: str, check: bool = True, timeout: float = 60.0) -> str:
        result = subprocess.run(
            [helm_binary(), *args],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=timeout,
            check=False,
        )
        if check and result.returncode != 0:
            raise AssertionError(f"helm {' '.join(args)} failed:\n{result.stdout}{result.stderr}")
        return result.stdout + result.stderr


@pytest.fixture
def helm(sim_cluster: Any, tmp_path: Path) -> Helm:
    return Helm(sim_cluster.env, tmp_path / "helm")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "sim_cluster" in metafunc.fixturenames:
        metafunc.parametrize("sim_cluster", [PROCESS_OPTIONS], indirect=True, ids=["procs"])


__all__ = ["CHART", "Helm", "os"]
