"""The e2e tier: a simulated cluster on a real control plane of its own (kind with KIND_E2E=1),
see tests/e2e/cluster.py."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.cluster import KIND, E2ECluster, e2e_cluster

# The real-node tier (hack/test.sh as root): every node but the DRA ones runs a real kubelet and
# containerd, so the operator and the serving pods are real containers from images built
# without Docker. Where real nodes cannot run, the tier fails and says why.
REAL_NODES = os.environ.get("NEMOTRON_REAL_NODES") == "1"
ROOT = Path(__file__).resolve().parents[2]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "/e2e/" in str(item.fspath):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="module")
def cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[E2ECluster]:
    """The cluster of the module: kind with KIND_E2E=1, else a simulated cluster of the e2e
    suite's own (the chart installs the CRD into it, as on a fresh cluster)."""
    workdir = tmp_path_factory.mktemp("e2e")
    if KIND:
        with e2e_cluster(workdir, None) as handle:
            yield handle
        return
    from tests.kube import SHARED_OPTIONS

    if REAL_NODES:  # an image older than the code would test the old code
        check = subprocess.run(
            [sys.executable, str(ROOT / "hack/build-images.py"), "--check"],
            capture_output=True, text=True, check=False, timeout=60,
        )  # fmt: skip
        if check.returncode != 0:
            pytest.fail(f"{check.stderr.strip()}: run hack/build-images.sh (hack/test.sh does)")
    pool = request.getfixturevalue("cluster_pool")
    options = {**SHARED_OPTIONS, "purpose": "e2e", "real_nodes": 4 if REAL_NODES else 0}
    with pool.lease(options, workdir, through_proxy=False) as simulated:
        note = simulated.background.cluster.real_node_note
        if note is not None:
            pytest.fail(f"NEMOTRON_REAL_NODES=1 but real nodes cannot run here: {note}")
        try:
            with e2e_cluster(workdir, simulated, port_forward=REAL_NODES) as handle:
                yield handle
        finally:
            simulated.reset()
