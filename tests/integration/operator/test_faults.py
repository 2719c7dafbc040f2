"""API faults, watch loss, an outage, a killed operator, a second replica: the operator converges
afterwards and says how it is through /healthz."""

from __future__ import annotations

import time

import pytest

from nemotron_sim.faultproxy.faults import Fault
from tests.integration.operator.helpers import (
    NAMESPACE,
    PDBS,
    SERVICES,
    STATEFULSETS,
    apply,
    children,
    condition,
    deployment,
    status,
    wait_ready,
)
from tests.integration.operator_process import OperatorProcess, ensure_namespace


def _inject(operator: OperatorProcess, fault: Fault) -> None:
    operator.cluster.call(lambda c: c.proxy.faults.add(fault) if c.proxy else None)


def _requests_matching(
    operator: OperatorProcess, method: str, part: str
) -> list[dict[str, object]]:
    return [r for r in operator.requests() if r["method"] == method and part in str(r["path"])]


def test_server_errors_and_a_conflict_on_the_status_write_are_retried(
    operator_process: OperatorProcess,
) -> None:
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    _inject(operator_process, Fault(method="PATCH", path="/statefulsets/", status=500, count=3))
    _inject(operator_process, Fault(method="PATCH", path="/nano/status", status=409, count=1))
    apply(cluster, deployment())
    wait_ready(cluster)
    sts_patches = [
        r["status"] for r in _requests_matching(operator_process, "PATCH", "/statefulsets/")
    ]
    assert sts_patches[:3] == [500, 500, 500]
    assert {200, 201} & set(sts_patches)  # 201: kube-apiserver's answer to an apply that creates
    status_patches = [
        r["status"] for r in _requests_matching(operator_process, "PATCH", "/nano/status")
    ]
    assert status_patches[0] == 409
    assert 200 in status_patches
    assert len(children(cluster, STATEFULSETS)) == 1
    operator_process.wait_for_log("retrying in")


def test_a_refused_apply_is_reported_and_retried_slowly(operator_process: OperatorProcess) -> None:
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    _inject(
        operator_process,
        Fault(method="PATCH", path="/poddisruptionbudgets/", status=422, count=2),
    )
    apply(cluster, deployment())
    cluster.wait_until(
        lambda: condition(cluster, "Degraded").get("reason") == "ApplyRejected",
        what="Degraded=True ApplyRejected",
    )
    seen = time.monotonic()
    assert "422" in condition(cluster, "Degraded")["message"]
    wait_ready(cluster, seconds=20)
    # Retried after --retry-max-seconds (2 s here), however many child events arrive meanwhile.
    assert time.monotonic() - seen >= 1.0
    assert condition(cluster, "Degraded")["status"] == "False"


def test_too_many_requests_waits_for_retry_after(operator_process: OperatorProcess) -> None:
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    _inject(
        operator_process,
        Fault(method="PATCH", path="/statefulsets/", status=429, retry_after=2, count=1),
    )
    apply(cluster, deployment())
    cluster.wait_until(
        lambda: _requests_matching(operator_process, "PATCH", "/statefulsets/"),
        what="the throttled apply",
    )
    refused_at = time.monotonic()
    cluster.wait_until(
        lambda: len(_requests_matching(operator_process, "PATCH", "/statefulsets/")) >= 2,
        seconds=10,
        what="the retry",
    )
    assert time.monotonic() - refused_at >= 1.5  # Retry-After: 2 (polling is 50 ms)
    wait_ready(cluster)
    assert "retrying in 2.0 s" in operator_process.log()


@pytest.mark.parametrize("operator_process", [["--resync-seconds=300"]], indirect=True)
def test_a_dropped_watch_comes_back(operator_process: OperatorProcess) -> None:
    """With the resync timer out of the way, only the watch can deliver the new object."""
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    time.sleep(1.0)  # let the first watch streams open; then cut every one once
    _inject(operator_process, Fault(method="WATCH", watch_drop_after=0.1, count=None, duration=2.0))
    time.sleep(2.5)
    apply(cluster, deployment())
    wait_ready(cluster, seconds=20)


@pytest.mark.slow
@pytest.mark.parametrize("operator_process", [["--liveness-stale-seconds=4"]], indirect=True)
def test_a_thirty_second_outage_is_survived_and_liveness_recovers(
    operator_process: OperatorProcess,
) -> None:
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    apply(cluster, deployment())
    wait_ready(cluster)
    assert operator_process.healthz()[0] == 200
    cluster.call(lambda c: c.proxy.faults.unavailable(30.0) if c.proxy else None)
    started = time.monotonic()

    def unhealthy() -> object:
        code, body = operator_process.healthz()
        return body if code == 503 else None

    body = cluster.wait_until(unhealthy, seconds=15, what="/healthz to report the outage")
    # The operator's own watches (the cache's, the inventory's) name what fails and since when.
    assert "the watch of pods" in str(body)
    assert "503" in str(body)
    remaining = 30.0 - (time.monotonic() - started)
    time.sleep(max(0.0, remaining) + 0.5)
    assert operator_process.running, operator_process.log()[-3000:]
    apply(cluster, deployment(replicas=2))
    wait_ready(cluster, seconds=60)
    assert status(cluster)["ready"] == "2/2"
    cluster.wait_until(lambda: operator_process.healthz()[0] == 200, seconds=15, what="liveness")


def test_killed_mid_reconcile_restarts_to_exactly_one_of_each_child(
    operator_process: OperatorProcess,
) -> None:
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    # The StatefulSet apply hangs for 2 s: the operator is killed while it waits.
    _inject(operator_process, Fault(method="PATCH", path="/statefulsets/", delay=2.0, count=1))
    apply(cluster, deployment())
    cluster.wait_until(
        lambda: _requests_matching(operator_process, "PATCH", "/services/"),
        what="the Services applied",
    )
    operator_process.kill()
    operator_process.start()
    wait_ready(cluster)
    assert len(children(cluster, STATEFULSETS)) == 1
    assert sorted(s["metadata"]["name"] for s in children(cluster, SERVICES)) == [
        "nano",
        "nano-headless",
    ]
    assert len(children(cluster, PDBS)) == 1


def test_a_second_replica_stands_by_and_takes_over(
    operator_process: OperatorProcess,
) -> None:
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    apply(cluster, deployment())
    wait_ready(cluster)
    second = OperatorProcess(cluster, operator_process.log_path.with_name("second.log"))
    second.start()
    try:
        second.wait_for_log("standing by: Lease")
        mark = operator_process.mark()
        apply(cluster, deployment(replicas=2))
        wait_ready(cluster)
        assert "reconciled ai/nano" not in second.log()
        operator_process.stop()
        second.wait_for_log("holding Lease", seconds=10)
        apply(cluster, deployment(replicas=1))
        cluster.wait_until(lambda: status(cluster).get("ready") == "1/1", what="scaled back")
        # The status is written before the reconcile's log line: wait for the line.
        second.wait_for_log("reconciled ai/nano", seconds=10)
        assert operator_process.writes(mark)
    finally:
        second.stop()
        second.check_log()
