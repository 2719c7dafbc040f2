"""Failover between two operator replicas (the chart's ``replicaCount: 2``), with the Lease at
its default duration: the standby takes over after the leader's ``kill -9``, and
kube-apiserver's audit log shows one writer at a time. Each operator process sends its identity
in its User-Agent (``nemotron-operator/VERSION (HOST-PID)``), which the audit log records."""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path

import pytest

from tests.integration.operator.helpers import NAMESPACE, apply, deployment, status, wait_ready
from tests.integration.operator_process import OperatorProcess, ensure_namespace
from tests.kube import AuditEvent

LEASE = "--lease-seconds=30"  # the operator's default (the chart does not change it)
WRITES = frozenset({"create", "update", "patch", "delete"})


def _writes_by(events: list[AuditEvent], pid: int, since: float) -> list[tuple[float, str]]:
    """(time, object) of every write the operator process ``pid`` made after ``since``."""
    found = []
    for event in events:
        if not event.user_agent.startswith("nemotron-operator/") or event.verb not in WRITES:
            continue
        if not event.user_agent.endswith(f"-{pid})"):
            continue
        at = datetime.fromisoformat(event.at).timestamp()
        if at >= since:
            found.append((at, f"{event.resource} {event.namespace}/{event.name}"))
    return found


@pytest.mark.slow
@pytest.mark.parametrize("operator_process", [[LEASE]], indirect=True)
def test_the_standby_takes_over_after_a_kill_with_one_writer_at_a_time(
    operator_process: OperatorProcess, tmp_path: Path
) -> None:
    cluster = operator_process.cluster
    began = time.time()
    ensure_namespace(cluster, NAMESPACE)
    apply(cluster, deployment())
    wait_ready(cluster)
    standby = OperatorProcess(cluster, tmp_path / "standby.log", extra_args=[LEASE])
    standby.start()
    try:
        standby.wait_for_log("standing by: Lease")
        apply(cluster, deployment(replicas=2))
        wait_ready(cluster)
        assert operator_process.process is not None
        leader_pid = operator_process.process.pid
        killed = time.monotonic()
        operator_process.kill()
        dead_at = time.time()  # the leader's process has exited (kill waits for it)
        apply(cluster, deployment(replicas=1))  # only the standby can converge this now
        standby.wait_for_log("holding Lease", seconds=90)
        took_over = time.monotonic() - killed
        cluster.wait_until(
            lambda: status(cluster).get("ready") == "1/1", seconds=60, what="scaled back by it"
        )
        wait_ready(cluster)
        converged = time.monotonic() - killed
        print(f"FIGURE failover: kill -9 to the standby holding the Lease: {took_over:.1f} s")
        print(f"FIGURE failover: kill -9 to the change converged by the standby: {converged:.1f} s")
        assert took_over < 90
        assert standby.process is not None
        standby_pid = standby.process.pid
    finally:
        standby.stop()
        print(standby.log()[-4000:])
    standby.check_log()
    # kube-apiserver's own record: the leader wrote (children, status, Events, its Lease) only
    # before it was killed, the standby only after — never both at once, on any object.
    events = cluster.audit()
    leader = _writes_by(events, leader_pid, began)
    successor = _writes_by(events, standby_pid, began)
    assert leader
    assert successor
    # A request the leader sent as it was killed can reach kube-apiserver a moment later (a full run
    # saw one received 1.4 ms after the kill was sent): one writer at a time means none of the
    # leader's writes comes after the standby's first, and the standby writes only once the
    # leader is gone.
    assert max(at for at, _ in leader) < min(at for at, _ in successor)
    assert min(at for at, _ in successor) > dead_at
    assert any("statefulsets" in what for _, what in successor)
