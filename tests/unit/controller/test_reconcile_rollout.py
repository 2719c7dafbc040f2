"""spec.rollout through the Reconciler: a progress deadline passing is an input of the reconcile.
Skipped on unchanged inputs before it, the reconcile runs once it has passed, reports
Degraded=RolloutStalled and freezes the StatefulSet's partition."""

from __future__ import annotations

import copy
from typing import Any

from nemotron_operator.kube.resources import NEMOTRON_DEPLOYMENTS, PODS, STATEFULSETS
from nemotron_operator.render import names as n
from tests.unit.controller.world import (
    NAME,
    NS,
    STATUS,
    deployment,
    serving_pod,
    watched,
    world,
)

CREATED = "2027-01-15T08:00:00Z"
AT_CREATION = 1_800_000_000.0  # 2027-01-15T08:00:00Z
ROLLOUT = {"maxUnavailable": 1, "progressDeadlineSeconds": 60}


def pod(ordinal: int, config: str, *, ready: bool) -> dict[str, Any]:
    found = serving_pod(ready=ready)
    metadata = found["metadata"]
    metadata["name"] = f"{NAME}-{ordinal}"
    metadata["creationTimestamp"] = CREATED
    metadata["annotations"] = {n.CONFIG_HASH: config}
    metadata["ownerReferences"] = [{"kind": "StatefulSet", "name": NAME, "uid": "sts"}]
    return found


async def test_a_passing_deadline_runs_the_skipped_reconcile_and_stalls_the_rollout() -> None:
    w = world()
    w.kube.put(NEMOTRON_DEPLOYMENTS, deployment(replicas=2, rollout=ROLLOUT))
    clock = [AT_CREATION]
    w.reconciler.parts.rollouts.clock = lambda: clock[0]
    await w.reconcile()
    sts = w.kube.stored(STATEFULSETS, NS, NAME)
    assert sts["spec"]["updateStrategy"]["rollingUpdate"] == {"maxUnavailable": 1, "partition": 0}
    rendered = sts["spec"]["template"]["metadata"]["annotations"][n.CONFIG_HASH]
    # A rollout under way: replica 0 on the old revision, replica 1 on the new, not Ready yet.
    w.kube.put(PODS, pod(0, "old-revision", ready=True))
    w.kube.put(PODS, pod(1, rendered, ready=False))
    watched(w)
    for _ in range(3):
        outcome, _ = await w.reconcile()
    assert outcome.result == "unchanged"  # nothing moves before the deadline
    assert outcome.status is None

    clock[0] = AT_CREATION + 61  # the new pod's deadline passed: no watch event says so
    outcome, writes = await w.reconcile()
    assert outcome.result == "ok"
    assert writes[:2] == ["apply StatefulSet/nano", STATUS]  # the partition frozen, status
    assert set(writes[2:]) == {"create Event Warning RolloutStalled"}  # the flips, warned
    status = w.nd()["status"]
    assert status["phase"] == "Degraded"
    degraded = next(c for c in status["conditions"] if c["type"] == "Degraded")
    assert degraded["reason"] == "RolloutStalled"
    assert degraded["message"].startswith("pod nano-1 of the new revision is not Ready 60 s")
    frozen = w.kube.stored(STATEFULSETS, NS, NAME)["spec"]["updateStrategy"]["rollingUpdate"]
    assert frozen["partition"] == 1  # replica 0 keeps the old revision

    # Settled: quiet again until something changes.
    await w.reconcile()
    outcome, writes = await w.reconcile()
    assert (outcome.result, writes) == ("unchanged", [])
    # A longer deadline is an edit: the reconcile runs, the pod is waiting again, unfrozen.
    edited = copy.deepcopy(w.nd())
    edited["spec"]["rollout"] = {**ROLLOUT, "progressDeadlineSeconds": 600}
    edited["metadata"]["generation"] += 1
    w.kube.put(NEMOTRON_DEPLOYMENTS, edited)
    outcome, _ = await w.reconcile()
    assert outcome.result == "ok"
    unfrozen = w.kube.stored(STATEFULSETS, NS, NAME)["spec"]["updateStrategy"]["rollingUpdate"]
    assert unfrozen["partition"] == 0
