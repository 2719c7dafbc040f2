"""The operator's life cycle of one NemotronDeployment: create, idle, update, drift, delete."""

from __future__ import annotations

import json

from tests.integration.operator.helpers import (
    NAMESPACE,
    NDS,
    PDBS,
    PODS,
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


def _pod_uids(operator: OperatorProcess) -> set[str]:
    return {p["metadata"]["uid"] for p in children(operator.cluster, PODS)}


def test_create_owns_children_and_reports_ready_then_idles_without_writes(
    operator_process: OperatorProcess,
) -> None:
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    apply(cluster, deployment())
    wait_ready(cluster)
    owner = cluster.get(NDS, NAMESPACE, "nano")
    assert owner is not None
    for key in (STATEFULSETS, SERVICES):  # one serving pod: no PodDisruptionBudget
        found = children(cluster, key)
        assert found, key
        for child in found:
            reference = child["metadata"]["ownerReferences"][0]
            assert reference["uid"] == owner["metadata"]["uid"]
            assert reference["controller"] is True
    current = status(cluster)
    assert current["ready"] == "1/1"
    assert current["plan"]["gpuProduct"]
    assert current["endpoint"] == "http://nano.ai.svc:8000/v1"
    assert condition(cluster, "Ready")["reason"] == "AllReplicasReady"
    # kopf wrote none of its own bookkeeping: no annotations, no finalizer on a plain object.
    annotations = owner["metadata"].get("annotations") or {}
    assert not [k for k in annotations if "kopf" in k or "last-handled" in k]
    assert not owner["metadata"].get("finalizers")
    # printer columns are filled
    table = cluster.kubectl("get", "nd", "nano", "-n", NAMESPACE).stdout
    row = table.splitlines()[1].split()
    assert row[0] == "nano"
    assert current["plan"]["gpuProduct"] in row
    assert "1/1" in row
    assert "Ready" in row

    # Several resync ticks (1 s each) with nothing changed: no write at all (Lease aside), and no
    # request either: the object, its children and pods, the GPU inventory and the optional
    # kinds' CRDs all come from watches, and a reconcile on unchanged inputs is skipped.
    operator_process.wait_reconciles(1, result="unchanged")
    mark = operator_process.mark()
    operator_process.wait_reconciles(5, result="unchanged")
    assert operator_process.writes(mark) == []
    requests = [
        f"{r['method']} {r['path']}"
        for r in operator_process.requests()[mark:]
        if "watch=" not in r["path"]
        and "/leases" not in r["path"]
        # discovery of the optional kinds (every 30 s), allowed to every authenticated user
        and r["path"] not in ("/apis/monitoring.coreos.com/v1", "/apis/karpenter.sh/v1")
    ]
    assert requests == []
    resource_version = (cluster.get(NDS, NAMESPACE, "nano") or {})["metadata"]["resourceVersion"]

    # A restart with nothing changed: no write either, and no pod restarted.
    pods = _pod_uids(operator_process)
    mark = operator_process.mark()
    operator_process.restart()
    operator_process.wait_reconciles(5)
    assert operator_process.writes(mark) == []
    assert _pod_uids(operator_process) == pods
    after = (cluster.get(NDS, NAMESPACE, "nano") or {})["metadata"]["resourceVersion"]
    assert after == resource_version


def _template_hash(sts: dict[str, object]) -> str:
    return str(
        sts["spec"]["template"]["metadata"]["annotations"]["serving.nemotron.io/config-hash"]  # type: ignore[index]
    )


def test_updates_change_children_and_roll_pods_only_for_template_changes(
    operator_process: OperatorProcess,
) -> None:
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    apply(cluster, deployment())
    wait_ready(cluster)
    (sts,) = children(cluster, STATEFULSETS)
    first_pods = _pod_uids(operator_process)

    # replicas: the StatefulSet scales; the running pod is not replaced.
    apply(cluster, deployment(replicas=2))
    wait_ready(cluster)
    (scaled,) = children(cluster, STATEFULSETS)
    assert scaled["spec"]["replicas"] == 2
    assert _template_hash(scaled) == _template_hash(sts)
    assert first_pods <= _pod_uids(operator_process)
    assert status(cluster)["ready"] == "2/2"

    # maxModelLen reaches the vLLM command line: a new pod template, so the pods roll.
    apply(cluster, deployment(replicas=2, engine={"maxModelLen": 65536}))
    cluster.wait_until(
        lambda: not (first_pods & _pod_uids(operator_process)), what="the pods to roll"
    )
    wait_ready(cluster)
    (rolled,) = children(cluster, STATEFULSETS)
    assert _template_hash(rolled) != _template_hash(scaled)
    args = " ".join(rolled["spec"]["template"]["spec"]["containers"][0]["args"])
    assert "65536" in args
    assert status(cluster)["plan"]["maxModelLen"] == 65536

    # The GPU product: the plan and the node selector follow.
    product = status(cluster)["plan"]["gpuProduct"]
    other = "NVIDIA-H200" if product != "NVIDIA-H200" else "NVIDIA-B200"
    apply(
        cluster,
        deployment(
            replicas=2, engine={"maxModelLen": 65536}, capacity={"gpu": {"products": [other]}}
        ),
    )
    cluster.wait_until(
        lambda: (status(cluster).get("plan") or {}).get("gpuProduct") == other,
        what=f"the plan on {other}",
    )
    wait_ready(cluster)
    (moved,) = children(cluster, STATEFULSETS)
    selector = moved["spec"]["template"]["spec"]["nodeSelector"]
    assert selector["nvidia.com/gpu.product"] == other


def test_drift_is_repaired_on_the_next_tick_and_delete_removes_children(
    operator_process: OperatorProcess,
) -> None:
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    apply(cluster, deployment())
    wait_ready(cluster)
    (sts,) = children(cluster, STATEFULSETS)
    image = sts["spec"]["template"]["spec"]["containers"][0]["image"]
    patch = [
        {
            "op": "replace",
            "path": "/spec/template/spec/containers/0/image",
            "value": "example.com/not-vllm:latest",
        }
    ]
    cluster.kubectl(
        "patch", "statefulset", "nano", "-n", NAMESPACE, "--type=json", "-p", json.dumps(patch)
    )
    cluster.wait_until(
        lambda: (
            children(cluster, STATEFULSETS)[0]["spec"]["template"]["spec"]["containers"][0]["image"]
            == image
        ),
        seconds=10,
        what="the edited image to be reverted",
    )
    service = cluster.get(SERVICES, NAMESPACE, "nano")
    assert service is not None
    cluster.kubectl("delete", "service", "nano", "-n", NAMESPACE)
    recreated = cluster.wait_until(
        lambda: cluster.get(SERVICES, NAMESPACE, "nano"), seconds=10, what="the Service back"
    )
    assert recreated["metadata"]["uid"] != service["metadata"]["uid"]
    wait_ready(cluster)

    cluster.kubectl("delete", "nd", "nano", "-n", NAMESPACE, "--wait=true", "--timeout=30s")
    cluster.wait_until(
        lambda: not any(children(cluster, key) for key in (STATEFULSETS, SERVICES, PDBS, PODS)),
        what="the children to be collected",
    )
    assert cluster.get(NDS, NAMESPACE, "nano") is None
