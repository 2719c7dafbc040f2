"""The simulated GPU nodes' registration and heartbeat, as their kubelets would do it.

Each node is registered with its GPU Feature Discovery labels, ``nvidia.com/gpu`` capacity and
a Ready condition, then kept alive by renewing its Lease in ``kube-node-lease`` (what the
kubelet does every 10 s; here every ``renew_seconds``). kube-controller-manager's node lifecycle
controller watches those Leases: when a node's renewals stop (:meth:`NodeAgent.stop_heartbeat`)
it marks the node NotReady (Unknown) and taints it ``node.kubernetes.io/unreachable``, as on a
real cluster. A node whose Ready condition is not True while its heartbeat runs has its status
posted again (the kubelet's status update), so it turns Ready once renewals resume.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from nemotron_operator.kube.errors import ApiError
from nemotron_operator.kube.transport import MERGE, Transport
from nemotron_sim.agents.node_objects import ready_conditions
from nemotron_sim.kubeapi.mirror import Mirror
from nemotron_sim.kubeapi.resources import ResourceKey, WatchEvent
from nemotron_sim.kubelet.events import now_rfc3339

log = logging.getLogger("nemotron_sim.nodes")
NODES = ResourceKey("", "v1", "nodes")
LEASES = ResourceKey("coordination.k8s.io", "v1", "leases")
LEASE_NAMESPACE = "kube-node-lease"
LEASE_SECONDS = 40  # what a kubelet asks for (its --node-lease-duration-seconds default)
HEARTBEAT_CONCURRENCY = 32  # Lease renewals in flight at once (the simulator's one client)
_CIDR_WAIT = 60.0


def micro_time(now: datetime | None = None) -> str:
    """A ``MicroTime`` as Leases carry it."""
    return (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def lease_for(node: dict[str, Any], now: str) -> dict[str, Any]:
    md = node["metadata"]
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": md["name"],
            "namespace": LEASE_NAMESPACE,
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Node", "name": md["name"], "uid": md["uid"]}
            ],
        },
        "spec": {
            "holderIdentity": md["name"],
            "leaseDurationSeconds": LEASE_SECONDS,
            "renewTime": now,
        },
    }


class NodeAgent:
    def __init__(
        self, api: Transport, mirror: Mirror, nodes: list[dict[str, Any]], *,
        renew_seconds: float = 2.0,
    ) -> None:  # fmt: skip
        self.api, self.mirror = api, mirror
        self.nodes = {node["metadata"]["name"]: node for node in nodes}
        self.renew_seconds = renew_seconds
        self.stopped: set[str] = set()  # nodes whose heartbeat is stopped
        # Called with a node's name when its heartbeat resumes (the kubelet acts on its pods).
        self.on_resume: list[Callable[[str], None]] = []
        self._task: asyncio.Task[None] | None = None
        self._reposting: set[str] = set()
        self._changed = asyncio.Event()  # a node object changed (its pod CIDR arrived)

    async def register(self) -> None:
        """Create every node (or take over an existing one), then wait for their pod CIDRs."""
        self.mirror.on_event([NODES], self._observe)
        for name, node in self.nodes.items():
            try:
                created = await self.api.request("POST", NODES.path(), body=node)
            except ApiError as error:
                if error.status != 409:
                    raise
                created = await self.api.request(
                    "PATCH", NODES.path(None, name, "status"),
                    body={"status": node["status"]}, content_type=MERGE,
                )  # fmt: skip
            node["metadata"]["uid"] = created["metadata"]["uid"]
            await self._renew(name)
        await self._wait_for_pod_cidrs()

    async def _wait_for_pod_cidrs(self) -> None:
        async with asyncio.timeout(_CIDR_WAIT):
            while any(not self.pod_cidr(name) for name in self.nodes):
                self._changed.clear()
                await self._changed.wait()

    def pod_cidr(self, name: str) -> str | None:
        """The node's ``spec.podCIDR`` (kube-controller-manager's node IPAM assigns it)."""
        node = self.mirror.peek(NODES, None, name)
        cidr = ((node or {}).get("spec") or {}).get("podCIDR")
        return str(cidr) if cidr else None

    def start(self) -> None:
        self._task = asyncio.create_task(self._heartbeat(), name="sim-node-heartbeat")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def stop_heartbeat(self, name: str) -> None:
        """The node's kubelet stops renewing its Lease (a lost node)."""
        self.stopped.add(name)

    def resume_heartbeat(self, name: str) -> None:
        was_stopped = name in self.stopped
        self.stopped.discard(name)
        if was_stopped:
            for listener in self.on_resume:
                listener(name)
        node = self.mirror.peek(NODES, None, name)
        if node is not None:
            self._repost_if_not_ready(node)

    async def _heartbeat(self) -> None:
        # Every node's renewal in flight together (up to HEARTBEAT_CONCURRENCY), as independent
        # kubelets renew: one after another, 417 renewals at 50 ms each under load took 21 s, past
        # the 20 s grace, and the node lifecycle controller flapped healthy nodes to Unknown.
        gate = asyncio.Semaphore(HEARTBEAT_CONCURRENCY)

        async def renew(name: str) -> None:
            async with gate:
                try:
                    await self._renew(name)
                except Exception as error:  # noqa: BLE001 - the API server restarting
                    log.info("renewing the Lease of %s failed: %s", name, error)

        while True:
            await asyncio.sleep(self.renew_seconds)
            await asyncio.gather(*(renew(n) for n in list(self.nodes) if n not in self.stopped))

    async def _renew(self, name: str) -> None:
        now = micro_time()
        try:
            await self.api.request(
                "PATCH", LEASES.path(LEASE_NAMESPACE, name),
                body={"spec": {"renewTime": now, "holderIdentity": name}},
                content_type=MERGE,
            )  # fmt: skip
        except ApiError as error:
            if error.status != 404:
                raise
            lease = lease_for(self.nodes[name], now)
            await self.api.request("POST", LEASES.path(LEASE_NAMESPACE), body=lease)

    def _observe(self, event: WatchEvent) -> None:
        self._changed.set()
        if event.type != "DELETED":
            self._repost_if_not_ready(event.obj)

    def _repost_if_not_ready(self, node: dict[str, Any]) -> None:
        name = str(node["metadata"]["name"])
        if name not in self.nodes or name in self.stopped or name in self._reposting:
            return
        conditions = (node.get("status") or {}).get("conditions") or []
        if any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions):
            return
        self._reposting.add(name)
        self.mirror.merge_patch(
            NODES, None, name, {"status": {"conditions": ready_conditions(now_rfc3339())}},
            subresource="status",
        )  # fmt: skip
        asyncio.get_running_loop().call_later(self.renew_seconds, self._reposting.discard, name)
