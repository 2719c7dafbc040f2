"""The ``sim_cluster`` fixture: the simulated GPU cluster on a real control plane.

    def test_something(sim_cluster):
        sim_cluster.kubectl("apply", "-f", path)
        sim_cluster.wait_until(lambda: sim_cluster.ready_replicas("ai", "nano") == 1)

Other node layouts, timings or image mappings through indirect parametrisation (each set of
options is a cluster of its own, kept for the session by tests/kube.py's pool):

    @pytest.mark.parametrize("sim_cluster", [{"nodes": "NVIDIA-B200:8x1"}], indirect=True)

After the test, what it created is deleted and the cluster is reused.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kube import PROJECT_CRDS, SHARED_OPTIONS, ClusterPool, KubeHandle
from tests.kubectl import kubectl_binary, run_kubectl

__all__ = ["KUBECTL_TIMEOUT", "KubeHandle", "kubectl_binary", "run_kubectl"]
KUBECTL_TIMEOUT = 60.0
# The integration tier's default cluster: the project's CRD installed before the controllers
# start (the garbage collector knows NemotronDeployments from its first sync), fast probes.
DEFAULT_OPTIONS: dict[str, Any] = {
    **SHARED_OPTIONS,
    "probe_period": 0.02,
    "crds": [PROJECT_CRDS],
}


# What starts the real control plane, a simulated cluster, helm or a benchmark run: a test that
# uses one of these fixtures, or lives in one of these directories, is marked ``cluster`` and is
# left out of ``make test-fast`` (hack/test-fast.sh); the rest of this tier is pure checks.
CLUSTER_FIXTURES = frozenset({"cluster_pool", "admission", "helm_environment"})
CLUSTER_DIRS = ("controlplane", "processes", "benchmarks", "cluster")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        path = str(item.fspath)
        if "/integration/" not in path:
            continue
        item.add_marker(pytest.mark.integration)
        uses = CLUSTER_FIXTURES & set(getattr(item, "fixturenames", ()))
        if uses or any(f"/integration/{d}/" in path for d in CLUSTER_DIRS):
            item.add_marker(pytest.mark.cluster)


@pytest.fixture
def sim_cluster(
    request: pytest.FixtureRequest, tmp_path: Path, cluster_pool: ClusterPool
) -> Iterator[KubeHandle]:
    """A simulated cluster (on a real control plane) for this test; reset afterwards."""
    options = {**DEFAULT_OPTIONS, **(getattr(request, "param", None) or {})}
    with cluster_pool.lease(options, tmp_path) as handle:
        try:
            yield handle
        finally:
            handle.reset()


@pytest.fixture
def operator_process(
    request: pytest.FixtureRequest, sim_cluster: KubeHandle, tmp_path: Path
) -> Iterator[Any]:
    """The real operator against ``sim_cluster`` (the CRD installed, the operator started with
    fast test flags, its kubeconfig through the fault proxy) — an ``OperatorProcess``
    (tests/integration/operator_process.py documents its interface). Extra ``run`` flags by
    indirect parametrisation:
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
