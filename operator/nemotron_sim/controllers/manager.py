"""Starts the simulated nodes and controllers on a store and feeds them its watch events."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from nemotron_operator.catalog.gpus import GPUS, lookup_gpu
from nemotron_sim.apiserver.discovery import SIM_VERSION
from nemotron_sim.apiserver.store import Store
from nemotron_sim.controllers import ipam
from nemotron_sim.controllers.deployment_controller import DeploymentController
from nemotron_sim.controllers.kinds import NODES, WATCHED
from nemotron_sim.controllers.kubelet import Kubelet, KubeletSettings
from nemotron_sim.controllers.nodes import (
    GpuFacts,
    NodeGroup,
    NodeSpecError,
    build_nodes,
    build_system_node,
    parse_node_spec,
)
from nemotron_sim.controllers.pdb import DisruptionController
from nemotron_sim.controllers.podfiles import ApiAccess
from nemotron_sim.controllers.process_pods import PodTokenSource
from nemotron_sim.controllers.runtime import EventRecorder, WorkQueue, log
from nemotron_sim.controllers.scheduler_controller import SchedulerController
from nemotron_sim.controllers.service_controller import ServiceController
from nemotron_sim.controllers.statefulset_controller import StatefulSetController
from nemotron_sim.kubeapi.resources import WatchEvent

DEFAULT_NODES = "NVIDIA-H200:8x2,NVIDIA-B200:8x1"
_SETTLE_POLL = 0.02


def gpu_facts(product: str) -> GpuFacts:
    """GFD's view of a catalog GPU; the simulated nodes take their numbers from the catalog."""
    gpu = lookup_gpu(product)
    if gpu is None:
        known = ", ".join(g.name for g in GPUS)
        raise NodeSpecError(f"unknown GPU product {product!r}; the catalog has: {known}")
    major, minor = gpu.compute_capability
    memory = gpu.memory_mib if gpu.memory_reported else None
    return GpuFacts(memory_mib=memory, compute_major=major, compute_minor=minor, family=gpu.family)


@dataclass(frozen=True)
class ClusterSettings:
    nodes: str = DEFAULT_NODES
    kubelet: KubeletSettings = field(default_factory=KubeletSettings)
    record_events: bool = True
    system_nodes: int = 0  # nodes without GPUs or taints, for controllers such as the operator


class ClusterControllers:
    """Nodes, scheduler, StatefulSet controller, kubelet, Services and PDBs on one store."""

    def __init__(
        self,
        store: Store,
        settings: ClusterSettings | None = None,
        *,
        api: ApiAccess | None = None,
        token_source: PodTokenSource | None = None,
    ) -> None:
        self.settings = settings or ClusterSettings()
        self.groups: list[NodeGroup] = parse_node_spec(self.settings.nodes)
        self.store = store
        self.recorder = EventRecorder(store, enabled=self.settings.record_events)
        self.node_ips: dict[str, str] = {}
        self.pod_ips = ipam.LoopbackPool.random(ipam.POD_OCTETS)
        self.service_ips = ipam.LoopbackPool.random(ipam.SERVICE_OCTETS)
        self.scheduler = SchedulerController(store, self.recorder)
        self.statefulsets = StatefulSetController(store, self.recorder)
        self.deployments = DeploymentController(store, self.recorder)
        self.kubelet = Kubelet(
            store,
            self.recorder,
            self.node_ips,
            lambda node: self.pod_ips,
            self.settings.kubelet,
            api=api,
            token_source=token_source,
        )
        store.deletion_grace = self.kubelet.processes.deletion_grace
        self.services = ServiceController(store, self.service_ips)
        self.disruption = DisruptionController(store)
        self._queue: asyncio.Queue[WatchEvent] | None = None
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def queues(self) -> list[WorkQueue[Any]]:
        return [
            self.statefulsets.queue,
            self.statefulsets.claims,
            self.services.queue,
            self.disruption.queue,
            *self.deployments.queues,
        ]

    async def start(self) -> None:
        node_pool = ipam.LoopbackPool.random(ipam.NODE_OCTETS)
        for node in build_nodes(self.groups, gpu_facts, node_pool.allocate, SIM_VERSION):
            self.node_ips[node["metadata"]["name"]] = node["status"]["addresses"][0]["address"]
            self.store.create(NODES, node)
        for index in range(self.settings.system_nodes):
            node = build_system_node(index, node_pool.allocate(), SIM_VERSION)
            self.node_ips[node["metadata"]["name"]] = node["status"]["addresses"][0]["address"]
            self.store.create(NODES, node)
        self._queue = self.store.subscribe(WATCHED, copy=False)
        self._tasks = [
            asyncio.create_task(self._dispatch(self._queue), name="sim-dispatch"),
            asyncio.create_task(self.scheduler.run(), name="sim-scheduler"),
            *(asyncio.create_task(q.run(), name=f"sim-{q.name}") for q in self.queues),
        ]

    async def stop(self) -> None:
        if self._queue is not None:
            self.store.unsubscribe(self._queue)
            self._queue = None
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        await self.kubelet.stop()
        await self.services.stop()
        self.store.deletion_grace = None

    async def _dispatch(self, queue: asyncio.Queue[WatchEvent]) -> None:
        observers = (
            self.scheduler.observe,
            self.statefulsets.observe,
            self.deployments.observe,
            self.kubelet.observe,
            self.services.observe,
            self.disruption.observe,
        )
        while True:
            event = await queue.get()
            for observe in observers:
                try:
                    observe(event)
                except Exception:  # noqa: BLE001 - one bad event must not stop the cluster
                    log.exception("sim: observing %s %s failed", event.type, event.key)

    def idle(self) -> bool:
        """No watch event or work key is waiting (probes and timers may still be running)."""
        waiting = self._queue.qsize() if self._queue is not None else 0
        return waiting == 0 and all(len(q) == 0 for q in self.queues)

    async def settle(self, seconds: float = 5.0) -> bool:
        """Wait (bounded) until the controllers have nothing queued; True if they got there."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        while loop.time() < deadline:
            if self.idle():
                return True
            await asyncio.sleep(_SETTLE_POLL)
        return self.idle()

    def gpu_inventory(self) -> str:
        """The nodes in the compact form ``PRODUCT:GPUSxNODES,...`` they were built from."""
        return ",".join(f"{g.product}:{g.gpus_per_node}x{g.nodes}" for g in self.groups)
