"""A simulated cluster that runs ``lister.py`` for the image ``sim.local/lister``, and helm."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helm import helm_env, run_helm

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


class Helm:
    """helm (the pinned one, tests/helm.py) against the test's simulated cluster."""

    def __init__(self, env: dict[str, str], home: Path) -> None:
        self.env = helm_env(env, home)

    def __call__(self, *args: str, check: bool = True, timeout: float = 60.0) -> str:
        result = run_helm(self.env, *args, check=check, timeout=timeout)
        return result.stdout + result.stderr


@pytest.fixture
def helm(sim_cluster: Any, tmp_path: Path) -> Helm:
    return Helm(sim_cluster.env, tmp_path / "helm")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "sim_cluster" in metafunc.fixturenames:
        metafunc.parametrize("sim_cluster", [PROCESS_OPTIONS], indirect=True, ids=["procs"])


__all__ = ["CHART", "Helm", "os"]
