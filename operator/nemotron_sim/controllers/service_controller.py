"""Services: a loopback ClusterIP with a TCP proxy per port (kube-proxy), and Endpoints.

A Service without ``clusterIP`` gets one from the cluster's loopback pool right after it is
created (a real API server allocates it inside the create call, so a reader may briefly see it
empty here). Headless Services (``clusterIP: None``) get Endpoints but no proxy. Endpoints list
Ready pods under ``addresses`` and the others under ``notReadyAddresses``; EndpointSlices are
not written. ``type: LoadBalancer``/``NodePort`` behave as ClusterIP; ExternalName is ignored.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Mapping
from typing import Any

from nemotron_sim.apiserver.errors import ApiError
from nemotron_sim.apiserver.store import Store
from nemotron_sim.controllers.ipam import LoopbackPool, can_bind
from nemotron_sim.controllers.kinds import ENDPOINTS, PODS, SERVICES
from nemotron_sim.controllers.probes import resolve_port
from nemotron_sim.controllers.proxy import Backend, ServiceProxy
from nemotron_sim.controllers.runtime import WorkQueue, create_if_absent, log
from nemotron_sim.controllers.selector_index import SelectorIndex
from nemotron_sim.controllers.statefulset import is_ready, is_terminating
from nemotron_sim.kubeapi.resources import WatchEvent

_ALLOCATE_ATTEMPTS = 20

Key = tuple[str, str]


def selected_pods(
    store: Store, namespace: str, selector: Mapping[str, str]
) -> list[dict[str, Any]]:
    if not selector:
        return []  # a Service without a selector has its Endpoints managed by someone else
    text = ",".join(f"{k}={v}" for k, v in sorted(selector.items()))
    return [p for p in store.scan(PODS, namespace, label_selector=text) if not is_terminating(p)]


def target_port(service_port: Mapping[str, Any], pod: Mapping[str, Any]) -> int | None:
    target = service_port.get("targetPort", service_port.get("port"))
    if isinstance(target, int):
        return target
    for container in (pod.get("spec") or {}).get("containers") or []:
        port = resolve_port(target, container)
        if port is not None:
            return port
    return None


def build_endpoints(service: Mapping[str, Any], pods: list[dict[str, Any]]) -> dict[str, Any]:
    """One subset per distinct port set, as the endpoints controller groups them."""
    md = service["metadata"]
    subsets: dict[tuple[tuple[str, int, str], ...], dict[str, Any]] = {}
    for pod in pods:
        ip = (pod.get("status") or {}).get("podIP")
        if not ip:
            continue
        ports = []
        for port in (service.get("spec") or {}).get("ports") or []:
            number = target_port(port, pod)
            if number is not None:
                ports.append((port.get("name", ""), number, port.get("protocol", "TCP")))
        signature = tuple(ports)
        subset = subsets.setdefault(
            signature,
            {
                "ports": [
                    {**({"name": n} if n else {}), "port": p, "protocol": proto}
                    for n, p, proto in ports
                ]
            },
        )
        address = {
            "ip": ip,
            "nodeName": (pod.get("spec") or {}).get("nodeName", ""),
            "targetRef": {
                "kind": "Pod",
                "namespace": pod["metadata"].get("namespace", ""),
                "name": pod["metadata"]["name"],
                "uid": pod["metadata"].get("uid", ""),
            },
        }
        if (pod.get("spec") or {}).get("hostname"):
            address["hostname"] = pod["spec"]["hostname"]
        bucket = "addresses" if is_ready(pod) else "notReadyAddresses"
        subset.setdefault(bucket, []).append(address)
    endpoints: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {
            "name": md["name"],
            "namespace": md.get("namespace", ""),
            "labels": dict(md.get("labels") or {}),
        },
    }
    if subsets:
        endpoints["subsets"] = list(subsets.values())
    return endpoints


class ServiceController:
    def __init__(self, store: Store, service_ips: LoopbackPool) -> None:
        self._store = store
        self._ips = service_ips
        self.queue: WorkQueue[Key] = WorkQueue("services", self.reconcile)
        self._selectors: dict[str, SelectorIndex[str]] = {}  # by namespace, of services
        self._proxies: dict[Key, tuple[tuple[Any, ...], list[ServiceProxy]]] = {}

    def observe(self, event: WatchEvent) -> None:
        md = event.obj.get("metadata", {})
        namespace, name = md.get("namespace", ""), md.get("name", "")
        if event.key == SERVICES:
            services = self._selectors.setdefault(namespace, SelectorIndex())
            selector = (event.obj.get("spec") or {}).get("selector")
            if event.type == "DELETED" or not selector:
                services.discard(name)  # a Service without a selector selects no pod
            else:
                services.set(name, {"matchLabels": selector})
            self.queue.add((namespace, name))
        elif event.key == PODS:
            index = self._selectors.get(namespace)
            if index:
                for service in index.matching(md.get("labels") or {}):
                    self.queue.add((namespace, service))

    async def reconcile(self, key: Key) -> None:
        service = self._store.peek(SERVICES, *key)
        if service is None:
            await self._close(key)
            with contextlib.suppress(ApiError):
                self._store.delete(ENDPOINTS, *key)
            return
        spec = service.get("spec") or {}
        if spec.get("type") == "ExternalName":
            return
        cluster_ip = spec.get("clusterIP")
        if not cluster_ip:
            cluster_ip = self._free_ip([int(p["port"]) for p in spec.get("ports") or []])
            self._store.merge_patch(
                SERVICES, *key, {"spec": {"clusterIP": cluster_ip, "clusterIPs": [cluster_ip]}}
            )
        if cluster_ip.startswith("127."):
            await self._ensure_proxies(key, cluster_ip, spec.get("ports") or [])
        self._write_endpoints(service)

    def _free_ip(self, ports: list[int]) -> str:
        """A ClusterIP whose ports are free on this machine, where another simulated cluster
        may be listening on the same loopback address (the pools' second octet is random)."""
        for _ in range(_ALLOCATE_ATTEMPTS):
            address = self._ips.allocate()
            if all(can_bind(address, port) for port in ports):
                return address
            log.info("services: %s is taken on this machine, trying another ClusterIP", address)
        return self._ips.allocate()

    async def _ensure_proxies(self, key: Key, ip: str, ports: list[dict[str, Any]]) -> None:
        signature = (ip, tuple(sorted(int(p["port"]) for p in ports)))
        current = self._proxies.get(key)
        if current is not None and current[0] == signature:
            return
        await self._close(key)
        proxies = []
        for port in ports:
            proxy = ServiceProxy(functools.partial(self._port_backends, key, port))
            try:
                await proxy.start(ip, int(port["port"]))
            except OSError as error:
                log.warning("service %s/%s: cannot listen on %s:%s: %s", *key, ip, port, error)
                continue
            proxies.append(proxy)
        self._proxies[key] = (signature, proxies)

    def _port_backends(self, key: Key, service_port: dict[str, Any]) -> list[Backend]:
        service = self._store.peek(SERVICES, *key)
        if service is None:
            return []
        selector = (service.get("spec") or {}).get("selector") or {}
        return [
            (pod["status"]["podIP"], number)
            for pod in selected_pods(self._store, key[0], selector)
            if is_ready(pod) and (number := target_port(service_port, pod)) is not None
        ]

    def _write_endpoints(self, service: dict[str, Any]) -> None:
        md = service["metadata"]
        namespace, name = md.get("namespace", ""), md["name"]
        selector = (service.get("spec") or {}).get("selector") or {}
        if not selector:
            return
        desired = build_endpoints(service, selected_pods(self._store, namespace, selector))
        current = self._store.peek(ENDPOINTS, namespace, name)
        if current is None:
            create_if_absent(self._store, ENDPOINTS, desired)
        elif current.get("subsets") != desired.get("subsets"):
            self._store.replace(ENDPOINTS, {**desired, "metadata": current["metadata"]}, copy=False)

    async def _close(self, key: Key) -> None:
        current = self._proxies.pop(key, None)
        if current is None:
            return
        for proxy in current[1]:
            await proxy.stop()
        ip = current[0][0]
        if not any(sig[0] == ip for sig, _ in self._proxies.values()):
            self._ips.release(ip)

    async def stop(self) -> None:
        for key in list(self._proxies):
            await self._close(key)
