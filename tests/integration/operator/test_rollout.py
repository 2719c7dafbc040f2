"""spec.rollout on the real control plane (the StatefulSet controller is kube-controller-manager's):
a canary whose new revision never becomes Ready halts with Degraded=RolloutStalled naming the pod
while the old replica keeps serving; a fixed revision on the canary waits for promotion; removing
the canary from the spec promotes it to every replica."""

from __future__ import annotations

from typing import Any

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
