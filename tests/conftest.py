"""Shared fixtures for every tier.

The whole test session runs in a network namespace of its own (``sim_cluster.netns``), entered
before pytest starts any thread: the simulated cluster's real control plane, nodes, pods and
Services get private 10.x addresses that are local there, and nothing a test starts can reach
outside it. Tests that never start a cluster are unaffected (loopback works as before).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings

from sim_cluster import netns

if TYPE_CHECKING:
    from tests.kube import ClusterPool, KubeHandle

ROOT = Path(__file__).resolve().parent.parent
_NAMESPACE_ERROR: list[str] = []
# hack/mutation.sh runs the unit tier once per mutant with --hypothesis-profile=mutation: fewer
# generated examples per property (the properties without an explicit max_examples inherit it).
settings.register_profile("mutation", max_examples=25, deadline=None)
# hack/test-fast.sh (make test-fast): the same, so that the fast loop stays under two minutes;
# the full suite (hack/test.sh) runs hypothesis' default 100 examples per property.
settings.register_profile("fast", max_examples=25, deadline=None)


def pytest_configure(config: pytest.Config) -> None:
    try:
        # Under pytest-xdist (hack/test.sh runs two workers, whole modules on one worker) each
        # worker is a test session of its own in a namespace of its own: the clusters two
        # workers start have the same addresses and ports, which must not meet.
        netns.enter(fresh=bool(os.environ.get("PYTEST_XDIST_WORKER")))
    except (netns.NamespaceError, OSError) as error:
        # Only the tests that start a cluster need it; they fail with this message.
        _NAMESPACE_ERROR.append(f"cannot make the simulated cluster's network namespace: {error}")


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def cluster_pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterPool]:
    """The session's simulated clusters on real control planes (tests/kube.py), one per set of
    options, started on first use and stopped at the end."""
    if _NAMESPACE_ERROR:
        raise RuntimeError(_NAMESPACE_ERROR[0])
    from tests.kube import ClusterPool  # only sessions that use a cluster import it

    pool = ClusterPool(tmp_path_factory.mktemp("clusters"))
    try:
        yield pool
    finally:
        pool.stop()


@pytest.fixture
def kube_cluster(cluster_pool: ClusterPool, tmp_path: Path) -> Iterator[KubeHandle]:
    """The shared simulated cluster (its default nodes, no project CRD installed); each test
    works in namespaces of its own, and what it leaves is deleted afterwards."""
    from tests.kube import SHARED_OPTIONS

    with cluster_pool.lease({**SHARED_OPTIONS, "purpose": "shared"}, tmp_path) as handle:
        try:
            yield handle
        finally:
            handle.reset()


@pytest.fixture
def kube_namespace(kube_cluster: KubeHandle) -> Iterator[str]:
    """A namespace of the test's own in the shared cluster, deleted afterwards."""
    with kube_cluster.namespace() as name:
        yield name
