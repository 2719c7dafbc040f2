"""The behavioural check before traffic, on the real control plane with stand-in vLLMs: a pod
joins the Service only after the check passes; a pod whose reasoning split is wrong stays out,
with ``Verified=False`` naming the check, a Warning Event and a metric, and is not re-checked in
a storm; turning the check off admits it; on a multi-node replica the leader is checked and the
worker follows."""

from __future__ import annotations

import urllib.request
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from nemotron_sim.kubeapi.resources import ResourceKey
from nemotron_sim.vllm.parsers import OutputFault
from tests.integration.operator.helpers import (
    EVENTS,
    NAMESPACE,
    PODS,
    apply,
    children,
    condition,
    deployment,
    wait_ready,
)
from tests.integration.operator_process import OperatorProcess, ensure_namespace
from tests.kube import KubeHandle

ENDPOINT_SLICES = ResourceKey("discovery.k8s.io", "v1", "endpointslices")
GATE = "serving.nemotron.io/verified"


def pod_condition(pod: dict[str, Any], type_: str) -> dict[str, Any]:
    for item in (pod.get("status") or {}).get("conditions") or []:
        if item["type"] == type_:
            return dict(item)
    return {}


def serving_pods(cluster: KubeHandle, name: str = "nano") -> list[dict[str, Any]]:
    return sorted(children(cluster, PODS, name), key=lambda p: p["metadata"]["name"])


def ready_addresses(cluster: KubeHandle, service: str = "nano") -> set[str]:
    slices = cluster.list(ENDPOINT_SLICES, NAMESPACE, f"kubernetes.io/service-name={service}")
    return {
        address
        for s in slices
        for endpoint in s.get("endpoints") or []
        if (endpoint.get("conditions") or {}).get("ready")
        for address in endpoint.get("addresses") or []
    }


def checks_metric(operator: OperatorProcess, result: str) -> float:
    with urllib.request.urlopen(operator.metrics_url, timeout=5) as response:  # noqa: S310
        text = response.read().decode()
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "nemotron_operator_verification_checks_total"
        and sample.labels.get("check") == "all"
        and sample.labels.get("result") == result
    )


def wait_in_service(cluster: KubeHandle, pod: dict[str, Any]) -> None:
    """Until the Service's EndpointSlice holds exactly this pod: kube-controller-manager's
    EndpointSlice controller follows the pod's Ready a moment after it."""
    cluster.wait_until(
        lambda: ready_addresses(cluster) == {pod["status"]["podIP"]}, what="the pod in the Service"
    )


def test_a_pod_joins_the_service_only_after_the_check(operator_process: OperatorProcess) -> None:
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    apply(cluster, deployment())
    wait_ready(cluster)
    [pod] = serving_pods(cluster)
    assert pod["spec"]["readinessGates"] == [{"conditionType": GATE}]
    gate = pod_condition(pod, GATE)
    assert (gate["status"], gate["reason"]) == ("True", "Passed")
    # Ready (the endpoints' source) turned True only once the gate did, after vLLM was up.
    containers = pod_condition(pod, "ContainersReady")["lastTransitionTime"]
    ready = pod_condition(pod, "Ready")["lastTransitionTime"]
    assert containers <= gate["lastTransitionTime"] <= ready
    wait_in_service(cluster, pod)
    verified = condition(cluster, "Verified")
    assert (verified["status"], verified["reason"]) == ("True", "Passed")
    assert checks_metric(operator_process, "passed") == 1


def test_a_wrong_reasoning_split_keeps_the_pod_out_until_the_check_is_off(
    operator_process: OperatorProcess,
) -> None:
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    cluster.call(lambda c: c.set_output_faults(frozenset({OutputFault.REASONING_IN_CONTENT})))
    apply(cluster, deployment())
    cluster.wait_until(
        lambda: condition(cluster, "Verified").get("status") == "False", what="Verified=False"
    )
    verified = condition(cluster, "Verified")
    [pod] = serving_pods(cluster)
    name = pod["metadata"]["name"]
    assert verified["reason"] == "CheckFailed"
    assert verified["message"].startswith(
        f"pod {name}: check reasoning failed: thinking text is left in the content: "
    )
    assert "</think>" in verified["message"]
    assert pod_condition(pod, "ContainersReady")["status"] == "True"
    assert pod_condition(pod, "Ready")["status"] == "False"
    assert ready_addresses(cluster) == set()

    def warnings() -> list[str]:
        return [
            e["type"]
            for e in cluster.list(EVENTS, NAMESPACE)
            if e["involvedObject"].get("name") == "nano" and e["reason"] == "CheckFailed"
        ]

    # The Event is posted just after the status patch that carries the condition.
    cluster.wait_until(lambda: warnings() != [], what="the CheckFailed Event")
    assert warnings() == ["Warning"]
    assert condition(cluster, "Ready")["reason"] == "VerificationFailed"
    # No storm: resyncs every second, one check (the next waits out a 30 s back-off).
    operator_process.wait_reconciles(10)
    assert checks_metric(operator_process, "failed") == 1
    assert pod_condition(serving_pods(cluster)[0], "Ready")["status"] == "False"

    # The off switch: the pods roll without the gate and take traffic unchecked.
    apply(cluster, deployment(verification={"enabled": False}))
    wait_ready(cluster)
    [pod] = serving_pods(cluster)
    assert "readinessGates" not in pod["spec"]
    wait_in_service(cluster, pod)
    verified = condition(cluster, "Verified")
    assert (verified["status"], verified["reason"]) == ("Unknown", "CheckDisabled")


@pytest.mark.parametrize("sim_cluster", [{"nodes": "NVIDIA-H200:4x2"}], indirect=True)
def test_multi_node_replica_leader_is_checked_and_the_worker_follows(
    operator_process: OperatorProcess,
) -> None:
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    apply(cluster, deployment(capacity={"gpu": {"count": 8}}))
    wait_ready(cluster)
    leader, worker = serving_pods(cluster)
    assert leader["metadata"]["labels"]["serving.nemotron.io/role"] == "leader"
    assert worker["metadata"]["labels"]["serving.nemotron.io/role"] == "worker"
    assert pod_condition(leader, GATE)["reason"] == "Passed"
    follow = pod_condition(worker, GATE)
    assert (follow["status"], follow["reason"]) == ("True", "FollowingLeader")
    assert follow["message"] == f"leader {leader['metadata']['name']} passed the behavioural check"
    assert pod_condition(worker, "Ready")["status"] == "True"
    assert checks_metric(operator_process, "passed") == 1  # the worker runs no API server
