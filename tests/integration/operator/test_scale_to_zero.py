"""Scale to zero on the real control plane: with autoscaling.minReplicas 0 a deployment that serves
no request for idleSeconds (the scraped vLLM counters stand still) goes to zero replicas, reports
phase Idle and keeps its plan and weight claims; `kubectl scale` wakes it on the same claim."""

from __future__ import annotations

import pytest

from tests.integration.operator.helpers import (
    CLAIMS,
    EVENTS,
    NAMESPACE,
    NDS,
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

SCRAPE_ARGS = ["--scrape-seconds=0.3", "--scrape-timeout-seconds=0.5"]


def spec_replicas(operator: OperatorProcess) -> int:
    return int((operator.cluster.get(NDS, NAMESPACE, "nano") or {})["spec"]["replicas"])


@pytest.mark.parametrize("operator_process", [SCRAPE_ARGS], indirect=True)
def test_idle_goes_to_zero_reports_idle_and_kubectl_scale_wakes_it(
    operator_process: OperatorProcess,
) -> None:
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    autoscaling = {"minReplicas": 0, "maxReplicas": 2, "idleSeconds": 10}
    apply(cluster, deployment(autoscaling=autoscaling))
    wait_ready(cluster)
    claims = {c["metadata"]["name"] for c in children(cluster, CLAIMS)}
    assert claims  # one weight claim per pod (volumeClaimTemplates)
    plan = status(cluster)["plan"]

    # No request: after the idle window the operator scales to zero.
    cluster.wait_until(lambda: spec_replicas(operator_process) == 0, seconds=60, what="0 replicas")
    cluster.wait_until(lambda: status(cluster).get("phase") == "Idle", seconds=30, what="Idle")
    cluster.wait_until(lambda: not children(cluster, PODS), seconds=30, what="the pods gone")
    (sts,) = children(cluster, STATEFULSETS)
    assert sts["spec"]["replicas"] == 0
    ready = condition(cluster, "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "ScaledToZero")
    # The layout stays planned (per replica); only the totals follow the replica count.
    totals = {"replicas", "nodes", "totalGPUs"}
    kept = status(cluster)["plan"]
    assert {k: v for k, v in kept.items() if k not in totals} == {
        k: v for k, v in plan.items() if k not in totals
    }
    assert kept["replicas"] == 0
    assert {c["metadata"]["name"] for c in children(cluster, CLAIMS)} == claims
    scaled = [
        e
        for e in cluster.list(EVENTS, NAMESPACE)
        if e["involvedObject"].get("name") == "nano" and e["reason"] == "ScaledToZero"
    ]
    # The autoscaler's Event and the Ready condition's, both Normal: idle is by design.
    assert {e["type"] for e in scaled} == {"Normal"}
    assert any("Scaled from 1 to 0 replicas: no request for" in e["message"] for e in scaled)
    assert any(e["message"].startswith("Ready=False: 0 replicas") for e in scaled)

    # A scale-up of the scale subresource wakes it, on the claim it kept.
    cluster.kubectl("scale", "-n", NAMESPACE, "nemotrondeployment/nano", "--replicas=1")
    wait_ready(cluster)
    assert status(cluster)["ready"] == "1/1"
    (pod,) = children(cluster, PODS)
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    used = {
        v["persistentVolumeClaim"]["claimName"]
        for v in volumes.values()
        if "persistentVolumeClaim" in v
    }
    assert used <= claims
    assert used
