"""The simulated nodes and controllers on a bare store (no HTTP): fast lifecycle checks."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from nemotron_sim.apiserver.store import Store
from nemotron_sim.controllers.kinds import (
    CLAIMS,
    ENDPOINTS,
    EVENTS,
    NODES,
    PODS,
    SERVICES,
    STATEFULSETS,
)
from nemotron_sim.controllers.kubelet import KubeletSettings
from nemotron_sim.controllers.manager import ClusterControllers, ClusterSettings
from tests.integration.cluster.manifests import service, vllm_statefulset, wait_for

pytestmark = pytest.mark.integration


@pytest.fixture
async def cluster() -> AsyncIterator[ClusterControllers]:
    settings = ClusterSettings(
        nodes="NVIDIA-H200:8x2,NVIDIA-B200:8x1",
        kubelet=KubeletSettings(init_seconds=0.01, probe_period=0.02, crash_backoff_seconds=0.05),
    )
    controllers = ClusterControllers(Store(), settings)
    await controllers.start()
    try:
        yield controllers
    finally:
        await controllers.stop()


def sts_status(store: Store, name: str) -> dict[str, Any]:
    sts = store.peek(STATEFULSETS, "default", name) or {}
    return dict(sts.get("status") or {})


def ready_replicas(store: Store, name: str, count: int) -> bool:
    return sts_status(store, name).get("readyReplicas") == count


async def test_nodes_are_registered_with_gpu_labels(cluster: ClusterControllers) -> None:
    nodes = cluster.store.list(NODES)
    assert [n["metadata"]["name"] for n in nodes] == ["sim-b200-0", "sim-h200-0", "sim-h200-1"]
    labels = nodes[1]["metadata"]["labels"]
    assert labels["nvidia.com/gpu.memory"] == "143771"  # catalog: nvidia-smi 143771 MiB
    assert labels["nvidia.com/gpu.compute.major"] == "9"
    assert nodes[1]["status"]["allocatable"]["nvidia.com/gpu"] == "8"


async def test_a_pod_asking_for_more_gpus_than_any_node_stays_pending(
    cluster: ClusterControllers,
) -> None:
    store = cluster.store
    store.create(STATEFULSETS, vllm_statefulset("huge", gpus=16))

    def unschedulable() -> dict[str, Any] | None:
        pod = store.peek(PODS, "default", "huge-0")
        conditions = ((pod or {}).get("status") or {}).get("conditions") or []
        return next((c for c in conditions if c.get("reason") == "Unschedulable"), None)

    condition = await wait_for(unschedulable, what="PodScheduled=False")
    assert condition["status"] == "False"
    assert condition["message"] == "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."
    pod = store.peek(PODS, "default", "huge-0")
    assert pod is not None
    assert pod["status"]["phase"] == "Pending"
    assert "nodeName" not in pod["spec"]
    events = store.list(EVENTS, "default", field_selector="reason=FailedScheduling")
    assert events
    assert events[0]["type"] == "Warning"


async def test_pods_become_ready_and_serve_through_pod_ip_and_service(
    cluster: ClusterControllers,
) -> None:
    store = cluster.store
    store.create(STATEFULSETS, vllm_statefulset("nano", replicas=2, product="NVIDIA-H200"))
    store.create(SERVICES, service("nano"))
    await wait_for(lambda: ready_replicas(store, "nano", 2), what="2 ready replicas")
    pods = store.list(PODS, "default", label_selector="app=nano")
    assert sorted(p["spec"]["nodeName"] for p in pods) == ["sim-h200-0", "sim-h200-1"]
    ips = [p["status"]["podIP"] for p in pods]
    assert all(ip.startswith("127.") for ip in ips)
    assert len(set(ips)) == 2
    cluster_ip = (store.peek(SERVICES, "default", "nano") or {})["spec"]["clusterIP"]
    assert cluster_ip.startswith("127.")

    def endpoints_ready() -> bool:
        endpoints = store.peek(ENDPOINTS, "default", "nano") or {}
        subsets = endpoints.get("subsets") or [{}]
        return len(subsets[0].get("addresses") or []) == 2

    await wait_for(endpoints_ready, what="2 ready endpoint addresses")
    body = {"model": "nano", "messages": [{"role": "user", "content": "hello"}]}
    async with aiohttp.ClientSession() as session:
        for base in (f"http://{ips[0]}:8000", f"http://{cluster_ip}:8000"):
            async with session.post(f"{base}/v1/chat/completions", json=body) as response:
                assert response.status == 200
                answer = await response.json()
            assert answer["model"] == "nano"
            assert answer["usage"]["completion_tokens"] > 0
        async with session.get(f"http://{ips[0]}:8000/metrics") as response:
            metrics = await response.text()
    generated = [
        line for line in metrics.splitlines() if line.startswith("vllm:generation_tokens_total{")
    ]
    assert generated
    assert float(generated[0].rsplit(" ", 1)[1]) > 0


async def test_template_change_rolls_pods_highest_ordinal_first(
    cluster: ClusterControllers,
) -> None:
    store = cluster.store
    store.create(STATEFULSETS, vllm_statefulset("roll", replicas=2))
    await wait_for(lambda: ready_replicas(store, "roll", 2), what="2 ready replicas")
    before = {p["metadata"]["name"]: p["metadata"]["uid"] for p in store.list(PODS)}
    old_revision = sts_status(store, "roll")["currentRevision"]
    deletions: list[str] = []
    queue = store.subscribe([PODS], copy=False)
    try:
        patch = {"spec": {"template": {"metadata": {"annotations": {"config-hash": "b"}}}}}
        store.merge_patch(STATEFULSETS, "default", "roll", patch)

        def rolled() -> bool:
            status = sts_status(store, "roll")
            generation = (store.peek(STATEFULSETS, "default", "roll") or {})["metadata"][
                "generation"
            ]
            return (
                status.get("observedGeneration") == generation
                and status.get("updatedReplicas") == 2
                and status.get("readyReplicas") == 2
                and status.get("currentRevision") == status.get("updateRevision")
            )

        await wait_for(rolled, what="the rollout to finish")
        while not queue.empty():
            event = queue.get_nowait()
            if event.type == "DELETED":
                deletions.append(event.obj["metadata"]["name"])
    finally:
        store.unsubscribe(queue)
    assert deletions == ["roll-1", "roll-0"]
    after = {p["metadata"]["name"]: p for p in store.list(PODS)}
    assert all(after[name]["metadata"]["uid"] != uid for name, uid in before.items())
    new_revision = sts_status(store, "roll")["updateRevision"]
    assert new_revision != old_revision
    assert all(
        p["metadata"]["labels"]["controller-revision-hash"] == new_revision for p in after.values()
    )
    assert all(p["metadata"]["annotations"]["config-hash"] == "b" for p in after.values())


async def test_claims_from_templates_are_bound_and_retained(cluster: ClusterControllers) -> None:
    store = cluster.store
    store.create(STATEFULSETS, vllm_statefulset("disk", replicas=2))
    await wait_for(lambda: ready_replicas(store, "disk", 2), what="2 ready replicas")
    claims = {c["metadata"]["name"]: c for c in store.list(CLAIMS)}
    assert sorted(claims) == ["cache-disk-0", "cache-disk-1"]
    for claim in claims.values():
        assert claim["status"]["phase"] == "Bound"
        assert claim["status"]["capacity"] == {"storage": "100Gi"}
        assert claim["spec"]["volumeName"].startswith("pvc-")
    pod = store.peek(PODS, "default", "disk-1") or {}
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    assert volumes["cache"] == {
        "name": "cache",
        "persistentVolumeClaim": {"claimName": "cache-disk-1"},
    }


async def test_deleting_the_statefulset_collects_its_pods_and_stops_the_servers(
    cluster: ClusterControllers,
) -> None:
    store = cluster.store
    store.create(STATEFULSETS, vllm_statefulset("gone", replicas=2))
    await wait_for(lambda: ready_replicas(store, "gone", 2), what="2 ready replicas")
    ip = (store.peek(PODS, "default", "gone-0") or {})["status"]["podIP"]
    store.delete(STATEFULSETS, "default", "gone")
    assert store.list(PODS, "default", label_selector="app=gone") == []
    await wait_for(lambda: cluster.kubelet.running_pods() == 0, what="the kubelet to stop pods")
    with pytest.raises(aiohttp.ClientConnectionError):
        async with aiohttp.ClientSession() as session, session.get(f"http://{ip}:8000/health"):
            pass
    # Claims outlive their StatefulSet unless its retention policy says Delete.
    assert len(store.list(CLAIMS)) == 2


async def test_a_refused_flag_crash_loops_with_vllms_error(cluster: ClusterControllers) -> None:
    store = cluster.store
    store.create(STATEFULSETS, vllm_statefulset("bad", extra_args=("--no-such-flag",)))

    def restarted() -> dict[str, Any] | None:
        pod = store.peek(PODS, "default", "bad-0") or {}
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        return statuses[0] if statuses and statuses[0]["restartCount"] >= 1 else None

    status = await wait_for(restarted, what="a restart")
    assert status["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert "--no-such-flag" in status["state"]["waiting"]["message"]
    assert sts_status(store, "bad")["readyReplicas"] == 0


async def test_scale_down_removes_the_highest_ordinal_and_frees_gpus(
    cluster: ClusterControllers,
) -> None:
    store = cluster.store
    store.create(STATEFULSETS, vllm_statefulset("big", replicas=3, gpus=8))
    await wait_for(lambda: ready_replicas(store, "big", 3), what="3 ready replicas")
    store.create(STATEFULSETS, vllm_statefulset("late", gpus=8))
    await wait_for(
        lambda: (store.peek(PODS, "default", "late-0") or {}).get("status", {}).get("conditions"),
        what="late-0 to be considered",
    )
    assert "nodeName" not in (store.peek(PODS, "default", "late-0") or {})["spec"]
    store.merge_patch(STATEFULSETS, "default", "big", {"spec": {"replicas": 2}})
    await wait_for(lambda: store.peek(PODS, "default", "big-2") is None, what="big-2 deleted")
    await wait_for(lambda: ready_replicas(store, "late", 1), what="late-0 scheduled and ready")
    assert store.peek(PODS, "default", "big-1") is not None


async def test_pod_disruption_budget_status(cluster: ClusterControllers) -> None:
    from nemotron_sim.controllers.kinds import PDBS

    store = cluster.store
    store.create(STATEFULSETS, vllm_statefulset("pdb", replicas=2))
    store.create(
        PDBS,
        {
            "metadata": {"name": "pdb", "namespace": "default"},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "pdb"}}},
        },
    )
    await wait_for(lambda: ready_replicas(store, "pdb", 2), what="2 ready replicas")

    def allowed() -> bool:
        pdb = store.peek(PDBS, "default", "pdb") or {}
        return (pdb.get("status") or {}).get("disruptionsAllowed") == 1

    await wait_for(allowed, what="disruptionsAllowed=1")
    queue = store.subscribe([PDBS], copy=False)
    seen: list[int] = []

    def allowed_values() -> list[int]:
        while not queue.empty():
            seen.append(queue.get_nowait().obj["status"]["disruptionsAllowed"])
        return seen

    try:
        store.delete(PODS, "default", "pdb-1")
        # While pdb-1 is missing or not ready, no further disruption is allowed ...
        await wait_for(lambda: 0 in allowed_values(), what="disruptionsAllowed=0")
        # ... and once the StatefulSet has brought it back, one is again.
        await wait_for(lambda: allowed_values()[-1] == 1, what="disruptionsAllowed=1 again")
    finally:
        store.unsubscribe(queue)


async def test_a_pod_is_ready_only_after_the_simulated_model_load() -> None:
    settings = ClusterSettings(
        nodes="NVIDIA-B200:8x1",
        kubelet=KubeletSettings(load_seconds=0.5, init_seconds=0.01, probe_period=0.02),
    )
    cluster = ClusterControllers(Store(), settings)
    await cluster.start()
    try:
        store = cluster.store
        store.create(STATEFULSETS, vllm_statefulset("slow"))

        def running() -> dict[str, Any] | None:
            pod = store.peek(PODS, "default", "slow-0") or {}
            return pod if (pod.get("status") or {}).get("phase") == "Running" else None

        pod = await wait_for(running, what="slow-0 Running")
        started = time.monotonic()
        conditions = {c["type"]: c["status"] for c in pod["status"]["conditions"]}
        assert conditions["Ready"] == "False"  # /health answers 503 while "loading"
        assert pod["status"]["containerStatuses"][0]["state"].get("running")
        await wait_for(lambda: ready_replicas(store, "slow", 1), what="slow-0 Ready")
        assert time.monotonic() - started >= 0.3
    finally:
        await cluster.stop()
