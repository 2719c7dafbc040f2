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
        Fault(method="PATCH", path="/services/nano-headless", status=422, count=2),
    )
    apply(cluster, deployment())
    cluster.wait_until(
        lambda: condition(cluster, "Degraded").get("reason") == "ApplyRejected",
        what="Degraded=True ApplyRejected",
    )
    assert "422" in condition(cluster, "Degraded")["message"]
    wait_ready(cluster, seconds=20)
    assert condition(cluster, "Degraded")["status"] == "False"
    # From the proxy's journal: the fault fired twice, and the apply that passed came at least a
    # second after the last refusal — retried after --retry-max-seconds (2 s here), however many
    # child events arrived meanwhile.
    patches = _requests_matching(operator_process, "PATCH", "/services/nano-headless")
    refused = [r for r in patches if r["status"] == 422]
    assert len(refused) == 2
    assert all(r["fault"] is not None for r in refused)
    accepted = next(r for r in patches if r["status"] in (200, 201))
    assert float(str(accepted["at"])) - float(str(refused[-1]["at"])) >= 1.0


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
    cluster.wait_until(
        lambda: len(_requests_matching(operator_process, "PATCH", "/statefulsets/")) >= 2,
        seconds=10,
        what="the retry",
    )
    # By the proxy's clock: the fault fired on the first apply, and the retry arrived no sooner
    # than its Retry-After of 2 s.
    first, retry = _requests_matching(operator_process, "PATCH", "/statefulsets/")[:2]
    assert (first["status"], retry["fault"]) == (429, None)
    assert first["fault"] is not None
    assert float(str(retry["at"])) - float(str(first["at"])) >= 2.0
    wait_ready(cluster)
    assert "retrying in 2.0 s" in operator_process.log()


@pytest.mark.parametrize("operator_process", [["--resync-seconds=300"]], indirect=True)
def test_a_dropped_watch_comes_back(operator_process: OperatorProcess) -> None:
    """With the resync timer out of the way, only the watch can deliver the new object."""
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    time.sleep(1.0)  # let the first watch streams open
    # A fault on new watches alone would never reach the streams already open (kopf's run for
    # 300 s), so first cut every open stream: a half-second outage does, then new watches are
    # dropped 0.1 s in for two seconds.
    cut_at = time.time()
    cluster.call(lambda c: c.proxy.faults.unavailable(0.5) if c.proxy else None)
    _inject(operator_process, Fault(method="WATCH", watch_drop_after=0.1, count=None, duration=2.0))
    time.sleep(2.5)
    apply(cluster, deployment())
    wait_ready(cluster, seconds=20)
    # From the proxy's journal: the operator's watch on NemotronDeployments that was open ended
    # at the cut, long before its 300 s timeout, and a watch opened after the cut delivered the
    # new object.
    watches = [
        r for r in operator_process.requests()
        if "watch=" in str(r["path"]) and "/nemotrondeployments" in str(r["path"])
    ]  # fmt: skip
    before = [r for r in watches if float(str(r["at"])) < cut_at]
    assert before
    for watch in before:
        assert watch["seconds"] is not None, watch  # the stream ended
        assert float(str(watch["at"])) + float(str(watch["seconds"])) < cut_at + 5.0
    assert [r for r in watches if float(str(r["at"])) > cut_at]


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
    assert "503" in str(body)

    # The operator's own watches (the cache's, the inventory's) name what fails and since when.
    # Each watch crosses the staleness line at its own first failure, milliseconds apart, so
    # the first 503 may name the nodes' watch before the pods': the pods' must follow.
    def names_the_pods_watch() -> object:
        code, body = operator_process.healthz()
        return body if code == 503 and "the watch of pods" in str(body) else None

    cluster.wait_until(names_the_pods_watch, seconds=10, what="/healthz to name the pods' watch")
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
    assert children(cluster, PDBS) == []  # one serving pod: no budget (render/services.py)


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
