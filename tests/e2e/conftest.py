"""The e2e tier: one cluster per session (simulated unless KIND_E2E=1), see tests/e2e/cluster.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.cluster import E2ECluster, e2e_cluster


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "/e2e/" in str(item.fspath):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[E2ECluster]:
    with e2e_cluster(tmp_path_factory.mktemp("e2e")) as handle:
        yield handle
