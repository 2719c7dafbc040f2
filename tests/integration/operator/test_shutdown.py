"""SIGTERM while the operator is busy (reconciles of just-created deployments, pod scrapes in
flight): it exits 0 within a bounded time, releases its Lease, and a successor takes over at
once instead of waiting the Lease's duration."""

from __future__ import annotations

import time

import pytest

from nemotron_sim.kubeapi.resources import ResourceKey
from tests.integration.operator.helpers import NAMESPACE, apply, deployment, wait_ready
from tests.integration.operator_process import OperatorProcess, ensure_namespace

LEASES = ResourceKey("coordination.k8s.io", "v1", "leases")
# A Lease of 30 s: a successor that had to wait for it would miss the 5 s asserted below.
BUSY_ARGS = ["--scrape-seconds=0.1", "--scrape-timeout-seconds=2", "--lease-seconds=30"]


@pytest.mark.parametrize("operator_process", [BUSY_ARGS], indirect=True)
def test_sigterm_while_busy_exits_0_and_hands_the_lease_over(
    operator_process: OperatorProcess,
) -> None:
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    apply(cluster, deployment("first"))
    wait_ready(cluster, "first")  # its pod is scraped every 0.1 s from now on
    for index in range(4):
        apply(cluster, deployment(f"busy-{index}"))
    operator_process.wait_for_log("reconciled ai/busy-", seconds=10)
    lease = cluster.get(LEASES, "default", "nemotron-operator")
    assert lease is not None
    assert lease["spec"]["holderIdentity"]

    started = time.monotonic()
    code = operator_process.stop(timeout=10)
    stopped_in = time.monotonic() - started
    assert code == 0, operator_process.log()[-4000:]
    assert stopped_in < 8, f"stopped in {stopped_in:.1f} s"
    lease = cluster.get(LEASES, "default", "nemotron-operator")
    assert lease is not None
    assert not lease["spec"].get("holderIdentity"), lease["spec"]

    second = OperatorProcess(
        cluster, operator_process.log_path.with_name("second.log"), extra_args=BUSY_ARGS
    )
    second.start()
    try:
        second.wait_for_log("holding Lease", seconds=5)
        assert "standing by" not in second.log()
    finally:
        assert second.stop(timeout=10) == 0
        second.check_log()
