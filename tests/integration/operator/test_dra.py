"""capacity.gpu.allocation: DRA on the real control plane: kube-controller-manager makes each
pod's ResourceClaim from the operator's template and kube-scheduler allocates it from the
simulated DRA driver's ResourceSlices. A mixed cluster: one H200 node with the device plugin,
two B200 nodes whose GPUs only DRA publishes (no nvidia.com/gpu, no GFD product label)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nemotron_sim.kubeapi.resources import ResourceKey
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
from tests.integration.operator.rbac_setup import chart_rbac, service_account_kubeconfig
from tests.integration.operator_process import OperatorProcess, ensure_namespace, install_crds
from tests.kube import KubeHandle

TEMPLATES = ResourceKey("resource.k8s.io", "v1", "resourceclaimtemplates")
RESOURCE_CLAIMS = ResourceKey("resource.k8s.io", "v1", "resourceclaims")
MIXED = {"nodes": "NVIDIA-H200:8x1,NVIDIA-B200:8x2:dra"}
DRA_CLUSTER = pytest.mark.parametrize("sim_cluster", [MIXED], indirect=True)
WITH_DRA = pytest.mark.parametrize("operator_process", [["--dra"]], indirect=True)
DRA = {"gpu": {"allocation": "DRA"}}


def serving_pods(cluster: KubeHandle, name: str) -> list[dict[str, Any]]:
    return [
        p
        for p in children(cluster, PODS, name)
        if p["metadata"]["labels"].get("app.kubernetes.io/component") == "serving"
    ]


def claims_of(cluster: KubeHandle, pod: dict[str, Any]) -> list[dict[str, Any]]:
    statuses = (pod.get("status") or {}).get("resourceClaimStatuses") or []
    found = [cluster.get(RESOURCE_CLAIMS, NAMESPACE, s["resourceClaimName"]) for s in statuses]
    return [c for c in found if c is not None]


def allocated_devices(claim: dict[str, Any]) -> list[dict[str, Any]]:
    allocation = (claim.get("status") or {}).get("allocation") or {}
    results: list[dict[str, Any]] = (allocation.get("devices") or {}).get("results") or []
    return results


def gpu_limits(pod: dict[str, Any]) -> list[Any]:
    return [
        ((c.get("resources") or {}).get("limits") or {}).get("nvidia.com/gpu")
        for c in pod["spec"]["containers"]
    ]


@DRA_CLUSTER
@WITH_DRA
def test_dra_and_device_plugin_deployments_side_by_side_on_a_mixed_cluster(
    operator_process: OperatorProcess,
) -> None:
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    # No product named: each plans among the products its own kind of node has.
    apply(cluster, deployment("claimed", capacity={**DRA, "gpu": {**DRA["gpu"], "count": 2}}))
    apply(cluster, deployment("plugged", capacity={"gpu": {"count": 2}}))
    wait_ready(cluster, "claimed")
    wait_ready(cluster, "plugged")

    # The DRA deployment: planned on the GPUs only the ResourceSlices show.
    assert status(cluster, "claimed")["plan"]["gpuProduct"] == "NVIDIA-B200"
    (template,) = children(cluster, TEMPLATES, "claimed")
    request = template["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert (request["deviceClassName"], request["count"]) == ("gpu.nvidia.com", 2)
    (pod,) = serving_pods(cluster, "claimed")
    assert pod["spec"]["resourceClaims"] == [
        {"name": "gpus", "resourceClaimTemplateName": template["metadata"]["name"]}
    ]
    assert gpu_limits(pod) == [None]
    assert pod["spec"]["nodeName"].startswith("sim-b200-dra-")
    (claim,) = claims_of(cluster, pod)
    devices = allocated_devices(claim)
    # kube-scheduler allocated exactly the planned count, on the pod's node, for this pod.
    assert len(devices) == 2
    assert {d["driver"] for d in devices} == {"gpu.nvidia.com"}
    assert {d["pool"] for d in devices} == {pod["spec"]["nodeName"]}
    reserved = claim["status"]["reservedFor"]
    assert [r["uid"] for r in reserved] == [pod["metadata"]["uid"]]

    # The device-plugin deployment: unchanged — nvidia.com/gpu, the GFD label, no claims.
    assert status(cluster, "plugged")["plan"]["gpuProduct"] == "NVIDIA-H200"
    (plugged,) = serving_pods(cluster, "plugged")
    assert gpu_limits(plugged) == ["2"]
    assert "resourceClaims" not in plugged["spec"]
    assert plugged["spec"]["nodeSelector"]["nvidia.com/gpu.product"] == "NVIDIA-H200"
    assert plugged["spec"]["nodeName"] == "sim-h200-0"
    assert children(cluster, TEMPLATES, "plugged") == []

    # Both settled: another reconcile of each finds nothing to write.
    mark = operator_process.mark()
    operator_process.wait_reconciles(2)
    assert operator_process.writes(mark) == []


@DRA_CLUSTER
@WITH_DRA
def test_a_multi_node_replica_claims_per_pod_and_switching_back_removes_the_template(
    operator_process: OperatorProcess,
) -> None:
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    capacity = {**DRA, "parallelism": {"tensor": 8, "pipeline": 2}}
    apply(cluster, deployment("wide", capacity=capacity))
    wait_ready(cluster, "wide")
    assert status(cluster, "wide")["plan"]["nodesPerReplica"] == 2
    pods = serving_pods(cluster, "wide")
    assert len(pods) == 2
    nodes = set()
    for pod in pods:
        (claim,) = claims_of(cluster, pod)
        devices = allocated_devices(claim)
        assert len(devices) == 8
        assert {d["pool"] for d in devices} == {pod["spec"]["nodeName"]}
        nodes.add(pod["spec"]["nodeName"])
    assert nodes == {"sim-b200-dra-0", "sim-b200-dra-1"}

    # Back to the device plugin: no B200 has nvidia.com/gpu here, so the plan moves to H200 (one
    # node of 8: TP 8, one node per replica) and the template goes.
    apply(cluster, deployment("wide", capacity={"gpu": {"count": 8}}))
    wait_ready(cluster, "wide")
    cluster.wait_until(
        lambda: children(cluster, TEMPLATES, "wide") == [], what="the template deleted"
    )
    assert status(cluster, "wide")["plan"]["gpuProduct"] == "NVIDIA-H200"
    assert [s["metadata"]["name"] for s in children(cluster, STATEFULSETS, "wide")] == ["wide"]


@DRA_CLUSTER
@WITH_DRA
def test_not_enough_devices_capacity_says_so_and_the_pod_waits_with_the_schedulers_message(
    operator_process: OperatorProcess,
) -> None:
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    # Three pods of 8 B200; the DRA nodes have room for two.
    apply(cluster, deployment("big", replicas=3, capacity={"gpu": {**DRA["gpu"], "count": 8}}))

    def capacity() -> dict[str, Any]:
        return condition(cluster, "CapacityAvailable", "big")

    cluster.wait_until(lambda: capacity().get("status") == "False", what="CapacityAvailable=False")
    message = capacity()["message"]
    assert "3 pods with 8 free NVIDIA-B200" in message, message
    assert "room for 2" in message, message

    def unschedulable() -> list[str]:
        return [
            c.get("message", "")
            for p in serving_pods(cluster, "big")
            for c in (p.get("status") or {}).get("conditions") or []
            if c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable"
        ]

    # (At first the scheduler may wait for the pod's weight-cache claim to be bound.)
    cluster.wait_until(
        lambda: any("cannot allocate all claims" in m for m in unschedulable()),
        what="the scheduler's own message: no node has the devices",
    )
    # The third pod's refusal can come before the other two are bound (the scheduler binds
    # their claims, WaitForFirstConsumer, while it tries the third): wait for the two.
    cluster.wait_until(
        lambda: len([p for p in serving_pods(cluster, "big") if p["spec"].get("nodeName")]) == 2,
        what="two pods bound",
    )
    running = [p for p in serving_pods(cluster, "big") if p["spec"].get("nodeName")]
    assert len(running) == 2
    cluster.wait_until(
        lambda: status(cluster, "big").get("readyReplicas") == 2, what="the two that fit Ready"
    )
    assert capacity()["status"] == "False"
    assert status(cluster, "big")["phase"] != "Ready"
    # The deployment's status passes the scheduler's words on.
    cluster.wait_until(
        lambda: (
            "cannot allocate all claims" in condition(cluster, "Ready", "big").get("message", "")
        ),
        what="Ready=False with the scheduler's message",
    )


@DRA_CLUSTER
def test_without_dra_in_the_operator_a_dra_deployment_says_what_to_change(
    operator_process: OperatorProcess,
) -> None:
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    apply(cluster, deployment("claimed", capacity=DRA))
    cluster.wait_until(
        lambda: condition(cluster, "Feasible", "claimed").get("reason") == "DRANotAvailable",
        what="Feasible=False DRANotAvailable",
    )
    assert "rbac.dra=true" in condition(cluster, "Feasible", "claimed")["message"]
    assert children(cluster, STATEFULSETS, "claimed") == []


@DRA_CLUSTER
def test_the_charts_dra_rbac_is_enough(sim_cluster: KubeHandle, tmp_path: Path) -> None:
    """As the chart's ServiceAccount with rbac.dra: templates written, slices and claims read,
    without a 403."""
    install_crds(sim_cluster)
    ensure_namespace(sim_cluster, "nemotron-system")
    ensure_namespace(sim_cluster, NAMESPACE)
    rbac = chart_rbac(sim_cluster, tmp_path / "helm", "--set=rbac.dra=true")
    sim_cluster.kubectl("apply", "-f", "-", input=rbac)
    sim_cluster.wait_until(
        lambda: sim_cluster.kubectl(
            "auth", "can-i", "watch", "resourceslices.resource.k8s.io",
            "--as=system:serviceaccount:nemotron-system:nemotron-operator", check=False,
        ).stdout.strip() == "yes",
        what="the chart's RBAC in force",
    )  # fmt: skip
    kubeconfig = service_account_kubeconfig(sim_cluster, tmp_path / "operator-kubeconfig")
    operator = OperatorProcess(
        sim_cluster,
        tmp_path / "operator.log",
        extra_args=["--lease-namespace=nemotron-system", "--dra"],
        env={"KUBECONFIG": str(kubeconfig)},
    )
    operator.start()
    try:
        apply(sim_cluster, deployment("claimed", capacity=DRA))
        wait_ready(sim_cluster, "claimed")
        assert children(sim_cluster, TEMPLATES, "claimed")
        forbidden = [r for r in operator.requests() if r["status"] in (401, 403)]
        assert forbidden == [], forbidden
    finally:
        operator.stop()
        print(operator.log()[-8000:])
    operator.check_log()
