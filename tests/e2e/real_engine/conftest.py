"""The real-engine tier: one simulated cluster whose vLLM containers run vLLM's CPU build
(``--engine vllm``, docs/simulated-cluster.md "The real engine"), the real operator against it,
tiny Nemotron-H checkpoints written onto the claims the deployments name.

At most three engines run at once (each ~3.8 GB and both cores while it starts). The engine is
installed by ``hack/build-vllm-cpu.sh`` (hack/test.sh runs it first)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sim_cluster.real_engine import engine_mappings
from tests.integration.operator_process import OperatorProcess, install_crds
from tests.kube import KubeHandle, start_cluster

ROOT = Path(__file__).resolve().parents[3]
# Three GPU nodes of a small product (45 GB): with gpuMemoryUtilization ~0.04 the plan leaves a
# pool of a few hundred MiB, which the engine then allocates in this machine's memory. Three:
# the served deployment, the mis-planned one starting beside it, the refused one after it.
NODES = "NVIDIA-L40S:1x3"


def engine_python() -> Path:
    venv = subprocess.run(
        [str(ROOT / "hack" / "build-vllm-cpu.sh"), "--print-dir"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    return Path(venv) / "bin" / "python"


@pytest.fixture(scope="session")
def vllm_python() -> Path:
    python = engine_python()
    if not python.is_file():
        pytest.fail(f"vLLM's CPU build is not installed at {python}: run hack/build-vllm-cpu.sh")
    return python


@pytest.fixture(scope="module")
def engine_cluster(
    vllm_python: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KubeHandle]:
    images, commands = engine_mappings("vllm", vllm_python)
    workdir = tmp_path_factory.mktemp("real-engine")
    options: dict[str, Any] = {
        "nodes": NODES,
        "images": images,
        "commands": commands,
        "probe_time_scale": 3.0,  # probes 3x slower: on a loaded 2-core machine start-up is minutes
        "crash_backoff_seconds": 1.0,
        "stop_grace_seconds": 10.0,
        # The real endpoint picker and Envoy as the Gateway (one request path through them)
        "addons": ["gateway"],
    }
    with start_cluster(workdir, **options) as cluster:
        install_crds(cluster)
        yield cluster


@pytest.fixture(scope="module")
def engine_operator(
    engine_cluster: KubeHandle, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    log = tmp_path_factory.mktemp("operator") / "operator.log"
    operator = OperatorProcess(engine_cluster, log, extra_args=["--inference-gateway"])
    operator.start()
    try:
        yield operator
    finally:
        operator.stop()
        print(f"--- operator log (last 8000 characters of {log}) ---")
        print(operator.log()[-8000:])
