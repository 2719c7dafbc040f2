"""spec.rollout on the real control plane (the StatefulSet controller is kube-controller-manager's):
a canary whose new revision never becomes Ready halts with Degraded=RolloutStalled naming the pod
while the old replica keeps serving; a fixed revision on the canary waits for promotion; removing
the canary from the spec promotes it to every replica."""

from __future__ import annotations

from typing import Any

import pytest

from nemotron_sim.vllm.parsers import OutputFault
from tests.integration.operator.helpers import (
    NAMESPACE,
    PODS,
    STATEFULSETS,
    apply,
    children,
    condition,
    deployment,
    status,
    wait_ready,
)
from tests.integration.operator_process import OperatorProcess, ensure_namespace

CONFIG_HASH = "serving.nemotron.io/config-hash"


def pods_by_name(operator: OperatorProcess) -> dict[str, dict[str, Any]]:
    return {
        p["metadata"]["name"]: p
        for p in children(operator.cluster, PODS)
        if not p["metadata"].get("deletionTimestamp")
    }


def is_ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def template_hash(sts: dict[str, Any]) -> str:
    return str(sts["spec"]["template"]["metadata"]["annotations"][CONFIG_HASH])


def test_a_failing_canary_stalls_then_a_good_one_is_promoted(
    operator_process: OperatorProcess,
) -> None:
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    canary = {"canary": {"replicas": 1}, "progressDeadlineSeconds": 10}
    apply(cluster, deployment(replicas=2, rollout=canary))
    wait_ready(cluster)
    (sts,) = children(cluster, STATEFULSETS)
    assert sts["spec"]["updateStrategy"]["rollingUpdate"] == {"maxUnavailable": 1, "partition": 1}
    old = template_hash(sts)

    # A new revision whose pods never pass readiness (the behavioural check fails on them).
    cluster.call(lambda c: c.set_output_faults(frozenset({OutputFault.REASONING_IN_CONTENT})))
    apply(cluster, deployment(replicas=2, engine={"maxModelLen": 65536}, rollout=canary))
    cluster.wait_until(
        lambda: condition(cluster, "Degraded").get("reason") == "RolloutStalled",
        seconds=90,
        what="Degraded=RolloutStalled",
    )
    degraded = condition(cluster, "Degraded")
    assert degraded["status"] == "True"
    assert degraded["message"].startswith("pod nano-1 of the new revision is not Ready 10 s")
    assert status(cluster)["phase"] == "Degraded"
    pods = pods_by_name(operator_process)
    # The old revision keeps serving on the replica the canary did not touch.
    assert pods["nano-0"]["metadata"]["annotations"][CONFIG_HASH] == old
    assert is_ready(pods["nano-0"])
    assert pods["nano-1"]["metadata"]["annotations"][CONFIG_HASH] != old
    assert not is_ready(pods["nano-1"])
    (sts,) = children(cluster, STATEFULSETS)
    assert sts["spec"]["updateStrategy"]["rollingUpdate"]["partition"] == 1

    # A fixed revision replaces the failed canary; the old replica still waits.
    cluster.call(lambda c: c.set_output_faults(frozenset()))
    fixed = deployment(replicas=2, engine={"maxModelLen": 32768}, rollout=canary)
    apply(cluster, fixed)
    cluster.wait_until(
        lambda: condition(cluster, "Progressing").get("reason") == "CanaryPaused",
        seconds=90,
        what="Progressing=CanaryPaused",
    )
    assert condition(cluster, "Degraded")["status"] == "False"
    pods = pods_by_name(operator_process)
    assert pods["nano-0"]["metadata"]["annotations"][CONFIG_HASH] == old
    (sts,) = children(cluster, STATEFULSETS)
    new = template_hash(sts)
    assert pods["nano-1"]["metadata"]["annotations"][CONFIG_HASH] == new
    assert is_ready(pods["nano-0"])
    assert is_ready(pods["nano-1"])
    assert "remove spec.rollout.canary" in condition(cluster, "Progressing")["message"]

    # Promotion is an edit of the spec: without the canary every replica takes the revision.
    promoted = deployment(
        replicas=2, engine={"maxModelLen": 32768}, rollout={"progressDeadlineSeconds": 10}
    )
    apply(cluster, promoted)
    cluster.wait_until(
        lambda: condition(cluster, "Progressing").get("reason") == "RolloutComplete",
        seconds=90,
        what="the promotion",
    )
    wait_ready(cluster)
    hashes = {
        p["metadata"]["annotations"][CONFIG_HASH] for p in pods_by_name(operator_process).values()
    }
    assert hashes == {new}
    (sts,) = children(cluster, STATEFULSETS)
    assert sts["spec"]["updateStrategy"]["rollingUpdate"]["partition"] == 0


def sts_hashes(operator: OperatorProcess) -> dict[str, str]:
    return {
        s["metadata"]["name"]: template_hash(s) for s in children(operator.cluster, STATEFULSETS)
    }


@pytest.mark.parametrize("sim_cluster", [{"nodes": "NVIDIA-H200:4x4"}], indirect=True)
def test_multi_node_replicas_roll_one_at_a_time_leader_and_workers_together(
    operator_process: OperatorProcess,
) -> None:
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    two_nodes = {"gpu": {"count": 8}}  # 8 GPUs on 4-GPU nodes: two nodes per replica
    apply(cluster, deployment(replicas=2, capacity=two_nodes, rollout={}))
    wait_ready(cluster)
    before = sts_hashes(operator_process)
    assert set(before) == {"nano-0", "nano-0-w", "nano-1", "nano-1-w"}
    workers = [s for s in children(cluster, STATEFULSETS) if s["metadata"]["name"].endswith("-w")]
    assert {s["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] for s in workers} == {1}

    since = len(operator_process.log())
    apply(
        cluster,
        deployment(replicas=2, capacity=two_nodes, engine={"maxModelLen": 65536}, rollout={}),
    )
    # The highest replica first, its leader and worker together (one reconcile applies both, one
    # request each: a full run read the leader updated and the worker not yet, between the two);
    # replica 0 held meanwhile.
    replica_1 = ("nano-1", "nano-1-w")
    seen = cluster.wait_until(
        lambda: all((h := sts_hashes(operator_process))[n] != before[n] for n in replica_1) and h,
        seconds=60,
        what="replica 1's leader and worker updated",
    )
    assert (seen["nano-0"], seen["nano-0-w"]) == (before["nano-0"], before["nano-0-w"])
    cluster.wait_until(
        lambda: any(
            "'StatefulSet/nano-1'" in line and "'StatefulSet/nano-1-w'" in line
            for line in operator_process.log()[since:].splitlines()
            if "reconciled ai/nano" in line and "'StatefulSet/nano-0" not in line
        ),
        seconds=10,
        what="one reconcile that applied replica 1's leader and worker",
    )
    cluster.wait_until(
        lambda: (
            condition(cluster, "Progressing").get("reason") == "RolloutComplete"
            and all(h != before[n] for n, h in sts_hashes(operator_process).items())
        ),
        seconds=120,
        what="the rollout to reach replica 0 and complete",
    )
    wait_ready(cluster)
    assert status(cluster)["ready"] == "2/2"
