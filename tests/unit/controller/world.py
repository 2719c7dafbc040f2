"""A reconcile's world for the unit tests: the fake API server (``fake_kube.FakeKube``) with
nodes, a NemotronDeployment, and a ``Reconciler`` built as the ``Controller`` builds it (its
watches never started, so every read is a list, unless ``watched`` serves them from caches).
Shared by ``test_reconcile*.py``."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from nemotron_operator.api import API_VERSION, KIND
from nemotron_operator.controller.decide.rollout import Rollouts
from nemotron_operator.controller.pods.adapters import AdapterSync
from nemotron_operator.controller.pods.autoscaler import Autoscaler
from nemotron_operator.controller.pods.scraper import Scraper
from nemotron_operator.controller.pods.verifier import Verifier
from nemotron_operator.controller.queue import WorkQueue
from nemotron_operator.controller.reconcile.finalizer import FINALIZER
from nemotron_operator.controller.reconcile.parts import Parts
from nemotron_operator.controller.reconcile.progress_hold import ProgressHold
from nemotron_operator.controller.reconcile.reconciler import Outcome, Reconciler
from nemotron_operator.controller.settings import OperatorConfig
from nemotron_operator.controller.watch.child_cache import ChildCache
from nemotron_operator.controller.watch.deployment_store import DeploymentStore
from nemotron_operator.controller.watch.inventory import InventoryReader
from nemotron_operator.controller.watch.served_kinds import ServedKinds
from nemotron_operator.kube import KubeClient
from nemotron_operator.kube.resources import (
    NEMOTRON_DEPLOYMENTS,
    NODE_POOLS,
    NODES,
    OPTIONAL_RESOURCES,
    PODS,
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
]  # one serving pod: no PodDisruptionBudget (render/services.py)
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
class Clock:
    """The progress hold's clock (``ProgressHold``): moved by the test."""

    now: float = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class World:
    kube: FakeKube
    reconciler: Reconciler
    clock: Clock
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
    *nodes: dict[str, Any],
    crds: frozenset[Any] = frozenset(),
    gateway: bool = False,
    progress_hold: float = 0.0,
) -> World:
    """A world whose reconciles write every step of progress at once unless ``progress_hold``
    (the operator's ``--progress-hold-seconds``, on ``World.clock``) is given."""
    kube = FakeKube(served_crds=set(crds))
    for item in nodes or (node("h200-a"), node("h200-b")):
        kube.put(NODES, item)
    config = OperatorConfig(
        resync_seconds=60.0,
        scrape_seconds=0.0,
        inference_gateway=gateway,
        progress_hold_seconds=progress_hold,
    )
    clock = Clock()
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
            progress=ProgressHold(config.progress_hold_seconds, clock=clock),
        ),
    )
    return World(kube, reconciler, clock)


async def new(**spec: Any) -> World:
    """A NemotronDeployment just created."""
    found = world()
    found.kube.put(NEMOTRON_DEPLOYMENTS, deployment(**spec))
    return found


def rolled_out(w: World) -> None:
    """The StatefulSet controller's status once its one pod is Ready at revision r1."""
    sts = w.kube.stored(STATEFULSETS, NS, NAMES.statefulset)
    sts["status"] = {
        "observedGeneration": 1,
        "replicas": 1,
        "readyReplicas": 1,
        "updatedReplicas": 1,
        "currentRevision": "r1",
        "updateRevision": "r1",
    }


async def ready() -> World:
    """Converged: children applied, the StatefulSet rolled out, its pod Ready, status Ready."""
    found = await new()
    await found.reconcile()
    rolled_out(found)
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
