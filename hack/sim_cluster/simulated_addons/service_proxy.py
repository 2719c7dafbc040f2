"""A userspace kube-proxy: each Service's ClusterIP:port forwards to its ready endpoints.

It reads what kube-proxy reads — Services and the EndpointSlices kube-controller-manager's
EndpointSlice controller writes for them (``kubernetes.io/service-name``) — and listens on every
TCP port of every Service with a ClusterIP (the addresses are local inside the network
namespace). Each connection goes to the next ready endpoint (round robin); with none the
connection is closed at once. The ``kubernetes`` Service reaches kube-apiserver the same way,
through the EndpointSlice the API server keeps for itself.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from nemotron_sim.kubeapi.mirror import Mirror
from nemotron_sim.kubeapi.resources import ResourceKey, WatchEvent
from sim_cluster.simulated_addons.tcp_proxy import Backend, ServiceProxy

log = logging.getLogger("nemotron_sim.proxy")
SERVICES = ResourceKey("", "v1", "services")
ENDPOINT_SLICES = ResourceKey("discovery.k8s.io", "v1", "endpointslices")
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
Listener = tuple[str, str, str, int]  # (namespace, service, clusterIP, port)


def backends(port: dict[str, Any], slices: list[dict[str, Any]]) -> list[Backend]:
    """The ready (address, port) pairs for one Service port, as kube-proxy computes them:
    the slice port with the Service port's name, endpoints whose ``ready`` is not false."""
    name = port.get("name") or ""
    out: list[Backend] = []
    for endpoint_slice in slices:
        number = next(
            (p.get("port") for p in endpoint_slice.get("ports") or []
             if (p.get("name") or "") == name),
            None,
        )  # fmt: skip
        if number is None:
            continue
        for endpoint in endpoint_slice.get("endpoints") or []:
            if (endpoint.get("conditions") or {}).get("ready") is False:
                continue
            out.extend((address, int(number)) for address in endpoint.get("addresses", [])[:1])
    return sorted(set(out))


def listeners(service: dict[str, Any]) -> list[tuple[Listener, dict[str, Any]]]:
    md, spec = service["metadata"], service.get("spec") or {}
    ip = spec.get("clusterIP")
    if not ip or ip == "None" or spec.get("type") == "ExternalName":
        return []
    return [
        ((md.get("namespace", ""), md["name"], str(ip), int(port["port"])), port)
        for port in spec.get("ports") or []
        if (port.get("protocol") or "TCP") == "TCP"
    ]


class ServiceProxies:
    def __init__(self, mirror: Mirror) -> None:
        self.mirror = mirror
        self._proxies: dict[Listener, ServiceProxy] = {}
        self._dirty: set[tuple[str, str]] = set()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.mirror.on_event([SERVICES, ENDPOINT_SLICES], self._observe)
        for service in self.mirror.scan(SERVICES):
            self._dirty.add((service["metadata"].get("namespace", ""), service["metadata"]["name"]))
        self._wake.set()
        self._task = asyncio.create_task(self._run(), name="sim-service-proxy")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        for proxy in self._proxies.values():
            await proxy.stop()
        self._proxies.clear()

    def _observe(self, event: WatchEvent) -> None:
        md = event.obj.get("metadata") or {}
        if event.key == SERVICES:
            name = md.get("name")
        else:
            name = (md.get("labels") or {}).get(SERVICE_NAME_LABEL)
        if name:
            self._dirty.add((md.get("namespace", ""), str(name)))
            self._wake.set()

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            dirty, self._dirty = self._dirty, set()
            for namespace, name in sorted(dirty):
                try:
                    await self._sync(namespace, name)
                except Exception:
                    log.exception("proxying %s/%s failed", namespace, name)

    async def _sync(self, namespace: str, name: str) -> None:
        service = self.mirror.peek(SERVICES, namespace, name)
        wanted = dict(listeners(service)) if service is not None else {}
        for listener in [k for k in self._proxies if k[:2] == (namespace, name)]:
            if listener not in wanted:
                await self._proxies.pop(listener).stop()
        for listener, port in wanted.items():
            if listener in self._proxies:
                continue
            proxy = ServiceProxy(self._backends_of(namespace, name, port))
            try:
                await proxy.start(listener[2], listener[3])
            except OSError as error:
                log.warning("cannot listen on %s:%s for %s/%s: %s", *listener[2:], namespace,
                            name, error)  # fmt: skip
                continue
            self._proxies[listener] = proxy

    def _backends_of(
        self, namespace: str, name: str, port: dict[str, Any]
    ) -> Callable[[], list[Backend]]:
        def current() -> list[Backend]:
            service = self.mirror.peek(SERVICES, namespace, name)
            if service is None:
                return []
            slices = self.mirror.scan(ENDPOINT_SLICES, namespace, {SERVICE_NAME_LABEL: name})
            return backends(port, slices)

        return current
