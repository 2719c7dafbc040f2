"""The e2e tier: the session's simulated cluster on a real control plane (kind with KIND_E2E=1),
see tests/e2e/cluster.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.cluster import KIND, E2ECluster, e2e_cluster


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "/e2e/" in str(item.fspath):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[E2ECluster]:
    simulated = None if KIND else request.getfixturevalue("kube_cluster")
    with e2e_cluster(tmp_path_factory.mktemp("e2e"), simulated) as handle:
        yield handle
