"""The reconcile against an in-memory API server (``fake_kube.FakeKube``), one row per situation:
the write requests it makes (in order), its outcome, and the status it computes.

Each row starts from a world (a new object, or one already converged and Ready), changes one
thing, reconciles once and compares every write the fake saw with the row's list, so a write too
many, one missing or one out of order fails the row.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import pytest

from nemotron_operator.api import API_VERSION, KIND
from nemotron_operator.controller.decide.rollout import Rollouts
from nemotron_operator.controller.pods.adapters import AdapterSync
from nemotron_operator.controller.pods.autoscaler import Autoscaler
from nemotron_operator.controller.pods.scraper import Scraper
from nemotron_operator.controller.pods.verifier import Verifier
from nemotron_operator.controller.queue import WorkQueue
from nemotron_operator.controller.reconcile.finalizer import FINALIZER
from nemotron_operator.controller.reconcile.parts import Parts
from nemotron_operator.controller.reconcile.reconciler import Outcome, Reconciler
from nemotron_operator.controller.settings import OperatorConfig
from nemotron_operator.controller.watch.child_cache import ChildCache
from nemotron_operator.controller.watch.deployment_store import DeploymentStore
from nemotron_operator.controller.watch.inventory import InventoryReader
from nemotron_operator.controller.watch.served_kinds import ServedKinds
from nemotron_operator.kube import Action, ApiError, KubeClient
from nemotron_operator.kube.resources import (
    NEMOTRON_DEPLOYMENTS,
    NODE_POOLS,
    NODES,
    OPTIONAL_RESOURCES,
    PODS,
    SERVICES,
    STATEFULSETS,
)
from nemotron_operator.render import names as n
from nemotron_operator.telemetry import OperatorMetrics
from tests.unit.controller.fake_kube import FakeKube, KubeBackedCache

NS, NAME = "ai", "nano"
NAMES = n.Names(NAME, NS)
NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
CHILDREN = [
    "apply Service/nano-headless",
    "apply Service/nano",
    "apply StatefulSet/nano",
    "apply PodDisruptionBudget/nano",
]
STATUS = "patch NemotronDeployment/nano/status"
KARPENTER = {"provisioner": "Karpenter", "karpenter": {"nodeClassRef": {"name": "gpu"}}}


def node(name: str, gpus: int = 8) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"nvidia.com/gpu.product": "NVIDIA-H200"}},
        "status": {
            "allocatable": {"nvidia.com/gpu": str(gpus)},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def other_pod(node_name: str, gpus: int) -> dict[str, Any]:
    """Someone else's pod holding GPUs of a node."""
    return {
        "metadata": {"name": f"other-{node_name}", "namespace": "default"},
        "spec": {
            "nodeName": node_name,
            "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": gpus}}}],
        },
        "status": {"phase": "Running"},
    }


def deployment(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {
            "name": NAME,
            "namespace": NS,
            "generation": 1,
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": {"model": {"id": NANO}, "engine": {"maxModelLen": 131072}, **spec},
    }


def serving_pod(*, ready: bool = True, waiting: dict[str, Any] | None = None) -> dict[str, Any]:
    """The leader pod the StatefulSet controller would have made, on node h200-a."""
    labels = {**n.serving_selector(NAMES, n.ROLE_LEADER), n.MANAGED_BY_LABEL: n.MANAGED_BY}
    container: dict[str, Any] = {"name": "vllm", "ready": ready, "restartCount": 0}
    if waiting is not None:
        container["state"] = {"waiting": waiting}
        container["restartCount"] = 5
    return {
        "metadata": {"name": f"{NAME}-0", "namespace": NS, "labels": labels},
        "spec": {
            "nodeName": "h200-a",
            "containers": [{"name": "vllm", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
        },
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "containerStatuses": [container],
        },
    }


@dataclass
class World:
    kube: FakeKube
    reconciler: Reconciler
    # Another writer acting after kopf delivered the object and before the reconcile writes.
    after_delivery: Callable[[FakeKube], None] | None = None

    def deliver(self) -> None:
        """What kopf's watch does: the object as the server holds it now, into the store."""
        obj = self.kube.objects.get(self.kube.key(NEMOTRON_DEPLOYMENTS, NS, NAME))
        if obj is None:
            self.reconciler.deployments.event("DELETED", deployment())
        else:
            self.reconciler.deployments.event("MODIFIED", copy.deepcopy(obj))
        if self.after_delivery is not None:
            self.after_delivery(self.kube)

    async def reconcile(self) -> tuple[Outcome, list[str]]:
        """One reconcile, and the writes it made."""
        mark = len(self.kube.writes)
        self.reconciler.inventory.invalidate()  # every row reads the cluster as it is now
        self.deliver()
        outcome = await self.reconciler.reconcile(NS, NAME)
        return outcome, self.kube.written()[mark:]

    def nd(self) -> dict[str, Any]:
        return self.kube.stored(NEMOTRON_DEPLOYMENTS, NS, NAME)

    def edit_spec(self, **spec: Any) -> None:
        obj = copy.deepcopy(self.nd())
        obj["spec"] = {**obj["spec"], **spec}
        obj["metadata"]["generation"] += 1
        self.kube.put(NEMOTRON_DEPLOYMENTS, obj)


def world(
    *nodes: dict[str, Any], crds: frozenset[Any] = frozenset(), gateway: bool = False
) -> World:
    kube = FakeKube(served_crds=set(crds))
    for item in nodes or (node("h200-a"), node("h200-b")):
        kube.put(NODES, item)
    config = OperatorConfig(resync_seconds=60.0, scrape_seconds=0.0, inference_gateway=gateway)
    client = cast(KubeClient, kube)
    queue = WorkQueue()
    autoscaler = Autoscaler(client, queue)
    metrics = OperatorMetrics()
    reconciler = Reconciler(
        client,
        config,
        deployments=DeploymentStore(),
        cache=ChildCache(client, config.namespaces),  # never started: every read is a list
        inventory=InventoryReader(client, ttl=5.0),  # never started: read by lists
        discovery=ServedKinds(client, OPTIONAL_RESOURCES),
        parts=Parts(
            scraper=Scraper(config, queue, metrics, after_tick=autoscaler.tick),
            autoscaler=autoscaler,
            verifier=Verifier(client, metrics),
            adapters=AdapterSync(queue),
            rollouts=Rollouts(),
        ),
    )
    return World(kube, reconciler)


async def new(**spec: Any) -> World:
    """A NemotronDeployment just created."""
    found = world()
    found.kube.put(NEMOTRON_DEPLOYMENTS, deployment(**spec))
    return found


async def ready() -> World:
    """Converged: children applied, the StatefulSet rolled out, its pod Ready, status Ready."""
    found = await new()
    await found.reconcile()
    sts = found.kube.stored(STATEFULSETS, NS, NAMES.statefulset)
    sts["status"] = {
        "observedGeneration": 1,
        "replicas": 1,
        "readyReplicas": 1,
        "updatedReplicas": 1,
        "currentRevision": "r1",
        "updateRevision": "r1",
    }
    found.kube.put(PODS, serving_pod())
    outcome, _ = await found.reconcile()
    assert outcome.status is not None
    assert outcome.status.phase == "Ready"
    return found


async def deleting(*, with_pool: bool) -> World:
    """Deleted while it held the NodePool finalizer (a Karpenter NodePool was rendered)."""
    found = world(crds=frozenset({NODE_POOLS}))
    obj = deployment(nodePool=KARPENTER)
    obj["metadata"] |= {"finalizers": [FINALIZER], "deletionTimestamp": "2026-01-02T00:00:00Z"}
    stored = found.kube.put(NEMOTRON_DEPLOYMENTS, obj)
    if with_pool:
        found.kube.put(
            NODE_POOLS,
            {
                "metadata": {
                    "name": NAMES.node_pool,
                    "labels": {n.INSTANCE: NAMES.instance, n.MANAGED_BY_LABEL: n.MANAGED_BY},
                    "annotations": {n.OWNER: f"{NS}/{NAME}"},
                },
            },
        )
    assert stored["metadata"]["finalizers"] == [FINALIZER]
    return found


def nothing(_: World) -> None:
    pass


def edit_image(w: World) -> None:
    sts = w.kube.stored(STATEFULSETS, NS, NAMES.statefulset)
    sts["spec"]["template"]["spec"]["containers"][0]["image"] = "vllm/vllm-openai:edited"


def delete_service(w: World) -> None:
    del w.kube.objects[w.kube.key(SERVICES, NS, NAMES.service)]


def too_long(w: World) -> None:
    w.edit_spec(engine={"maxModelLen": 16777216})  # admitted by the CRD; longer than Nano's


def unknown_field(w: World) -> None:
    w.edit_spec(engine={"maxModelLen": 131072, "maxModelLenn": 1})


def crash(w: World) -> None:
    waiting = {"reason": "CrashLoopBackOff", "message": "back-off 5m0s restarting failed container"}
    w.kube.put(PODS, serving_pod(ready=False, waiting=waiting))


def crash_and_someone_writes_first(w: World) -> None:
    crash(w)

    def bump(kube: FakeKube) -> None:  # another writer between kopf's event and the PATCH
        kube.put(NEMOTRON_DEPLOYMENTS, kube.stored(NEMOTRON_DEPLOYMENTS, NS, NAME))

    w.after_delivery = bump


async def full_nodes() -> World:
    found = world()
    for name in ("h200-a", "h200-b"):
        found.kube.put(PODS, other_pod(name, 8))
    found.kube.put(NEMOTRON_DEPLOYMENTS, deployment())
    return found


@dataclass(frozen=True)
class Row:
    name: str
    start: Callable[[], Any]  # an async function returning the World
    change: Callable[[World], None]
    writes: list[str]
    result: str = "ok"
    phase: str | None = None
    conditions: dict[str, tuple[str, str]] = field(default_factory=dict)  # type → status, reason
    raises: int | None = None  # the HTTP status of the ApiError the reconcile raises


ROWS = [
    Row(
        "created: every child applied, status written, one Event",
        new,
        nothing,
        [*CHILDREN, STATUS, "create Event Normal WaitingForPods"],
        phase="Deploying",
        conditions={
            "Feasible": ("True", "Planned"),
            "CapacityAvailable": ("True", "GPUsAvailable"),
            "Ready": ("False", "WaitingForPods"),
        },
    ),
    Row(
        "unchanged: no write at all",
        ready,
        nothing,
        [],
        phase="Ready",
        conditions={"Ready": ("True", "AllReplicasReady"), "Degraded": ("False", "AsExpected")},
    ),
    Row(
        "drift: an edited image is applied again, status unchanged",
        ready,
        edit_image,
        ["apply StatefulSet/nano"],
        phase="Ready",
    ),
    Row(
        "drift: a deleted Service is applied again",
        ready,
        delete_service,
        ["apply Service/nano"],
        phase="Ready",
    ),
    Row(
        "infeasible: nothing applied or deleted, status says why",
        ready,
        too_long,
        [
            STATUS,
            "create Event Warning MaxModelLenTooLong",
            "create Event Warning MaxModelLenTooLong",
        ],
        result="infeasible",
        phase="Infeasible",
        conditions={
            "Feasible": ("False", "MaxModelLenTooLong"),
            "Ready": ("False", "MaxModelLenTooLong"),
        },
    ),
    Row(
        "invalid spec: nothing applied or deleted, the field named",
        ready,
        unknown_field,
        [STATUS, "create Event Warning InvalidSpec", "create Event Warning InvalidSpec"],
        result="infeasible",
        phase="Infeasible",
        conditions={"Feasible": ("False", "InvalidSpec")},
    ),
    Row(
        "capacity missing: applied anyway, CapacityAvailable=False",
        full_nodes,
        nothing,
        [
            *CHILDREN,
            STATUS,
            "create Event Warning InsufficientGPUs",
            "create Event Normal WaitingForPods",
        ],
        phase="WaitingForCapacity",
        conditions={"CapacityAvailable": ("False", "InsufficientGPUs")},
    ),
    Row(
        "deleting: the NodePool goes first",
        lambda: deleting(with_pool=True),
        nothing,
        [f"delete NodePool/{NAMES.node_pool}"],
        result="finalizing",
    ),
    Row(
        "deleting: then the finalizer",
        lambda: deleting(with_pool=False),
        nothing,
        ["patch NemotronDeployment/nano"],
        result="finalized",
    ),
    Row(
        "pods crash-looping: Ready=False and Degraded=True, each with a Warning",
        ready,
        crash,
        [STATUS, "create Event Warning CrashLoop", "create Event Warning CrashLoop"],
        phase="Degraded",
        conditions={
            "Progressing": ("False", "CrashLoop"),
            "Ready": ("False", "CrashLoop"),
            "Degraded": ("True", "CrashLoop"),
        },
    ),
    Row(
        "status write conflict: a 409 for the worker to retry, no Event",
        ready,
        crash_and_someone_writes_first,
        [STATUS],
        raises=409,
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
async def test_reconcile(row: Row) -> None:
    w = await row.start()
    row.change(w)
    if row.raises is not None:
        mark = len(w.kube.writes)
        w.deliver()
        with pytest.raises(ApiError) as raised:
            await w.reconciler.reconcile(NS, NAME)
        assert raised.value.status == row.raises
        assert raised.value.action is Action.RETRY_SOON
        assert w.kube.written()[mark:] == row.writes
        return
    outcome, writes = await w.reconcile()
    assert writes == row.writes
    assert outcome.result == row.result
    if row.phase is not None:
        assert outcome.status is not None
        assert outcome.status.phase == row.phase
        assert outcome.status_written == (STATUS in writes)
    conditions = outcome.status.conditions if outcome.status is not None else []
    found = {c.type: (c.status, c.reason) for c in conditions}
    for type_, expected in row.conditions.items():
        assert found[type_] == expected, type_


async def test_a_converged_object_stays_quiet_over_many_reconciles() -> None:
    w = await ready()
    for _ in range(3):
        _, writes = await w.reconcile()
        assert writes == []


async def test_infeasible_keeps_the_children_of_the_earlier_spec() -> None:
    w = await ready()
    before = {key for key in w.kube.objects if key[0] in (SERVICES, STATEFULSETS)}
    too_long(w)
    await w.reconcile()
    after = {key for key in w.kube.objects if key[0] in (SERVICES, STATEFULSETS)}
    assert after == before
    # Fixed again: the same children, so nothing is applied; status goes back to Ready.
    w.edit_spec(engine={"maxModelLen": 131072})
    outcome, writes = await w.reconcile()
    assert outcome.status is not None
    assert outcome.status.phase == "Ready"
    assert [x for x in writes if x.startswith("apply")] == []


async def test_the_status_patch_carries_the_version_read_and_removes_what_went() -> None:
    w = await ready()
    crash(w)
    await w.reconcile()
    patch = next(x for x in reversed(w.kube.writes) if x.subresource == "status")
    assert patch.body["metadata"]["resourceVersion"]
    assert patch.body["status"]["phase"] == "Degraded"
    stored = w.nd()["status"]
    assert stored["phase"] == "Degraded"
    assert stored["readyReplicas"] == 0


async def test_a_karpenter_pool_gets_the_finalizer_before_it_is_applied() -> None:
    w = world(crds=frozenset({NODE_POOLS}))
    w.kube.put(NEMOTRON_DEPLOYMENTS, deployment(nodePool=KARPENTER))
    _, writes = await w.reconcile()
    assert writes[:2] == ["patch NemotronDeployment/nano", f"apply NodePool/{NAMES.node_pool}"]
    assert w.nd()["metadata"]["finalizers"] == [FINALIZER]
    # Switched back to no provisioner: the pool is pruned and the finalizer removed.
    w.edit_spec(nodePool={"provisioner": "None"})
    _, writes = await w.reconcile()
    assert f"delete NodePool/{NAMES.node_pool}" in writes
    assert "patch NemotronDeployment/nano" in writes
    assert "finalizers" not in w.nd()["metadata"] or w.nd()["metadata"]["finalizers"] == []


async def test_gone_is_nothing_to_do() -> None:
    w = world()
    outcome, writes = await w.reconcile()
    assert outcome.result == "gone"
    assert writes == []


def watched(w: World) -> None:
    """Serve the reconcile's reads from watches (the cache and the inventory's), as a running
    operator does once they have listed: the case where an unchanged reconcile is skipped."""
    w.reconciler.cache = KubeBackedCache(w.kube)
    nodes, pods = w.reconciler.inventory.follow()
    for obj in w.kube.of_kind(NODES):
        nodes.store(obj)
    for obj in w.kube.of_kind(PODS):
        pods.store(obj)
    nodes.synced.set()
    pods.synced.set()


def pod_event(w: World, pod: dict[str, Any]) -> None:
    """A pod changes on the server, and the inventory's watch delivers it."""
    stored = w.kube.put(PODS, pod)
    _, pods = w.reconciler.inventory.watches
    pods.store(stored)
    assert pods.listener is not None
    pods.listener("MODIFIED", stored)


async def test_a_reconcile_on_unchanged_inputs_is_skipped_without_a_request() -> None:
    w = await ready()
    watched(w)
    first, _ = await w.reconcile()  # the first with watched inputs runs in full
    assert first.result == "ok"
    # It may have written (status): its own write is a new input, so one more runs, writing
    # nothing; from then on the inputs are the same.
    settled, writes = await w.reconcile()
    assert (settled.result, writes) == ("ok", [])
    requests: list[str] = []
    get, list_ = w.kube.get, w.kube.list

    async def counting_get(*args: Any, **kwargs: Any) -> Any:
        requests.append("get")
        return await get(*args, **kwargs)

    async def counting_list(*args: Any, **kwargs: Any) -> Any:
        requests.append("list")
        return await list_(*args, **kwargs)

    w.kube.get, w.kube.list = counting_get, counting_list  # type: ignore[method-assign]
    for _ in range(3):  # the resync timer, three times
        outcome, writes = await w.reconcile()
        assert (outcome.result, writes) == ("unchanged", [])
    assert requests == []

    # a pod starts crash-looping: the pod's version is an input, so the reconcile runs
    crashing = serving_pod(ready=False, waiting={"reason": "CrashLoopBackOff"})
    pod_event(w, crashing)
    outcome, writes = await w.reconcile()
    assert outcome.result == "ok"
    assert STATUS in writes

    # an edit of the spec is a new resourceVersion of the object: it runs
    w.edit_spec(replicas=2)
    outcome, _ = await w.reconcile()
    assert outcome.result == "ok"
