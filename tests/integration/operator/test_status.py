"""Status that tells the truth: infeasible specs, missing Secrets, missing GPUs, layout changes,
node pools and monitors."""

from __future__ import annotations

import pytest
import yaml

from nemotron_sim.kubeapi.kinds import NODES as NODE_KEY
from tests.integration.operator.helpers import (
    EVENTS,
    NAMESPACE,
    NDS,
    NODE_POOLS,
    POD_MONITORS,
    STATEFULSETS,
    apply,
    children,
    condition,
    deployment,
    status,
    wait_ready,
)
from tests.integration.operator_process import OperatorProcess, ensure_namespace
from tests.kube import KubeHandle


def _nd_writes(operator: OperatorProcess, since: int) -> list[dict[str, object]]:
    return [w for w in operator.writes(since) if "nemotrondeployments" in str(w["path"])]


def test_infeasible_spec_is_reported_once_and_not_retried(
    operator_process: OperatorProcess,
) -> None:
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    mark = operator_process.mark()
    apply(cluster, deployment(capacity={"minConcurrency": 100000}))
    cluster.wait_until(
        lambda: condition(cluster, "Feasible").get("status") == "False", what="Feasible=False"
    )
    feasible = condition(cluster, "Feasible")
    assert feasible["reason"] == "InsufficientGPUMemory"
    assert "minConcurrency" in feasible["message"]
    assert status(cluster)["phase"] == "Infeasible"
    assert not children(cluster, STATEFULSETS)
    # Several resync periods later: the one status write (and its Warning Event), nothing more.
    operator_process.wait_reconciles(5)
    writes = operator_process.writes(mark)
    status_writes = [w for w in writes if str(w["path"]).endswith("/status")]
    assert len(status_writes) == 1
    assert [w for w in writes if "/events" in str(w["path"])]
    warnings = [
        e for e in cluster.list(EVENTS, NAMESPACE) if e.get("reason") == "InsufficientGPUMemory"
    ]
    assert warnings  # Feasible=False and Ready=False
    assert {e["type"] for e in warnings} == {"Warning"}
    # Fixing the spec recovers without a restart.
    apply(cluster, deployment())
    wait_ready(cluster)
    assert condition(cluster, "Feasible")["status"] == "True"


def test_missing_secret_is_reported_then_ready_once_it_exists(
    operator_process: OperatorProcess,
) -> None:
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    source = {"huggingFace": {"tokenSecretRef": {"name": "hf-token"}}}
    apply(cluster, deployment(model={"source": source}))
    cluster.wait_until(
        lambda: condition(cluster, "Ready").get("reason") == "SecretNotFound",
        what="Ready=False SecretNotFound",
    )
    ready = condition(cluster, "Ready")
    assert ready["status"] == "False"
    assert 'secret "hf-token" not found' in ready["message"]
    assert "tokenSecretRef" in ready["message"]
    assert condition(cluster, "Degraded")["status"] == "True"
    cluster.kubectl(
        "create", "secret", "generic", "hf-token", "-n", NAMESPACE, "--from-literal=token=x"
    )
    wait_ready(cluster)
    assert condition(cluster, "Degraded")["status"] == "False"


@pytest.mark.parametrize("sim_cluster", [{"nodes": "NVIDIA-H200:8x1"}], indirect=True)
def test_not_enough_free_gpus_names_what_is_missing(
    operator_process: OperatorProcess,
) -> None:
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    # Another workload holds 6 of the node's 8 GPUs.
    node = cluster.list(NODE_KEY)[0]["metadata"]["name"]
    squatter = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "squatter", "namespace": "default"},
        "spec": {
            "nodeName": node,
            "containers": [
                {
                    "name": "c",
                    "image": "busybox",
                    "resources": {"limits": {"nvidia.com/gpu": 6}},
                }
            ],
        },
    }
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(squatter))
    apply(cluster, deployment(capacity={"gpu": {"count": 4}}))
    cluster.wait_until(
        lambda: condition(cluster, "CapacityAvailable").get("status") == "False",
        what="CapacityAvailable=False",
    )
    capacity = condition(cluster, "CapacityAvailable")
    assert capacity["reason"] == "InsufficientGPUs"
    assert "needs 1 node with 4 free NVIDIA-H200; the largest free slot is 2" in capacity["message"]
    assert status(cluster)["phase"] == "WaitingForCapacity"
    cluster.kubectl("delete", "pod", "squatter", "-n", "default")
    wait_ready(cluster)
    assert condition(cluster, "CapacityAvailable")["status"] == "True"


@pytest.mark.parametrize("sim_cluster", [{"nodes": "NVIDIA-H200:4x2"}], indirect=True)
def test_layout_change_from_two_nodes_to_one_deletes_the_worker_statefulset(
    operator_process: OperatorProcess,
) -> None:
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    apply(cluster, deployment(capacity={"gpu": {"count": 8}}))
    wait_ready(cluster)
    assert status(cluster)["plan"]["nodesPerReplica"] == 2
    names = sorted(s["metadata"]["name"] for s in children(cluster, STATEFULSETS))
    assert names == ["nano-0", "nano-0-w"]
    apply(cluster, deployment(capacity={"gpu": {"count": 4}}))
    cluster.wait_until(
        lambda: sorted(s["metadata"]["name"] for s in children(cluster, STATEFULSETS)) == ["nano"],
        what="only the single-node StatefulSet",
    )
    wait_ready(cluster)
    assert status(cluster)["plan"]["nodesPerReplica"] == 1


def _pools(cluster: KubeHandle) -> list[dict[str, object]]:
    return cluster.list(NODE_POOLS, None, "app.kubernetes.io/instance=nano")


def test_node_pool_and_pod_monitor_follow_the_spec_and_the_finalizer_removes_the_pool(
    operator_process: OperatorProcess,
) -> None:
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    karpenter = {"provisioner": "Karpenter", "karpenter": {"nodeClassRef": {"name": "gpu"}}}
    monitoring = {"podMonitor": {"enabled": True}}
    apply(cluster, deployment(nodePool=karpenter, monitoring=monitoring))
    wait_ready(cluster)
    (pool,) = _pools(cluster)
    node_pool = status(cluster)["nodePool"]
    assert node_pool["provisioner"] == "Karpenter"
    assert node_pool["objectName"] == pool["metadata"]["name"]
    owner = cluster.get(NDS, NAMESPACE, "nano") or {}
    assert "serving.nemotron.io/node-pool-cleanup" in owner["metadata"]["finalizers"]
    assert cluster.list(POD_MONITORS, NAMESPACE)

    # Provisioner None and monitoring off: the NodePool, the PodMonitor and the finalizer go.
    apply(cluster, deployment())
    cluster.wait_until(
        lambda: not _pools(cluster) and not cluster.list(POD_MONITORS, NAMESPACE),
        what="the NodePool and PodMonitor deleted",
    )
    cluster.wait_until(
        lambda: not (cluster.get(NDS, NAMESPACE, "nano") or {})["metadata"].get("finalizers"),
        what="the finalizer released",
    )

    # Back to Karpenter, then delete: the finalizer deletes the NodePool, then lets go.
    apply(cluster, deployment(nodePool=karpenter))
    cluster.wait_until(lambda: _pools(cluster), what="the NodePool again")
    cluster.kubectl("delete", "nd", "nano", "-n", NAMESPACE, "--wait=false")
    cluster.wait_until(
        lambda: cluster.get(NDS, NAMESPACE, "nano") is None and not _pools(cluster),
        what="the deployment and its NodePool gone",
    )
