"""The benchmark's client of the simulated cluster's kube-apiserver (the repository's one
transport, ``nemotron_operator.kube.transport``), and the fault proxy's request counters.

Two addresses, one admin token: the workload's writes (creates, and the floor's applies and
status patches) go through the fault proxy in front of kube-apiserver, as the operator's
requests do, so both pay the same hop and the proxy counts them (``/_sim/request-counts``);
what only measures (the collector's watches, namespaces, statuses) goes to kube-apiserver
directly and costs the proxy nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from nemotron_operator.kube.errors import ApiError
from nemotron_operator.kube.transport import APPLY, MERGE, Transport

__all__ = ["APPLY", "MERGE", "ApiError", "Client"]
AGENT = "nemotron-bench"  # the User-Agent product the request counters know this client by
GROUP_PATH = "/apis/serving.nemotron.io/v1alpha1"
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
_RETRIES_429 = 30
WRITE_VERBS = frozenset({"create", "update", "patch", "apply", "delete", "deletecollection"})

# Deleted at once: the pods of a namespace being deleted (the kubelet stops their containers).
_FORCE = {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0}


class Client:
    """``connections``: requests in flight to each address at most (the harness's concurrency
    and a few more); ``request_timeout`` None: a request may take as long as it takes."""

    def __init__(
        self,
        api_url: str,
        proxy_url: str,
        token: str,
        *,
        tls: ssl.SSLContext | bool | None,
        connections: int = 16,
        request_timeout: float | None = None,
    ) -> None:
        self.api_url, self.proxy_url = api_url, proxy_url
        bearer = f"Bearer {token}"
        self.api, self.proxy = (
            Transport(
                url,
                tls,
                authorization=lambda: bearer,
                user_agent=f"{AGENT}/1",
                request_timeout=request_timeout,
                connections=connections,
            )
            for url in (api_url, proxy_url)
        )

    async def close(self) -> None:
        await self.api.close()
        await self.proxy.close()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def send(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
        *,
        via_proxy: bool = False,
    ) -> Any:
        transport = self.proxy if via_proxy else self.api
        for attempt in range(_RETRIES_429 + 1):
            try:
                return await transport.request(method, path, body=body, content_type=content_type)
            except ApiError as exc:
                if exc.status != 429 or attempt == _RETRIES_429:
                    raise
                # kube-apiserver's answer while a new resource's watch cache fills (and
                # under priority-and-fairness): retry after the time it names, as client-go.
                await asyncio.sleep(exc.retry_after if exc.retry_after is not None else 1.0)
        raise AssertionError("unreachable")

    async def text(self, path: str) -> str:
        """A plain-text GET straight to kube-apiserver (its /metrics)."""
        answer = await self.api.answer("GET", path)
        if answer.status >= 300:
            raise ApiError(answer.status, "", str(answer.body)[:200], "GET", path)
        return str(answer.body)

    def watch(
        self, path: str, params: Mapping[str, str], *, timeout_seconds: int = 3600
    ) -> contextlib.AbstractAsyncContextManager[AsyncIterator[dict[str, Any]]]:
        """A watch straight to kube-apiserver, open on entry; its events as they come."""
        return self.api.stream(path, params, timeout_seconds=timeout_seconds)

    async def create_deployment(self, obj: dict[str, Any]) -> dict[str, Any]:
        namespace = obj["metadata"]["namespace"]
        path = f"{GROUP_PATH}/namespaces/{namespace}/nemotrondeployments"
        created: dict[str, Any] = await self.send("POST", path, obj, via_proxy=True)
        return created

    async def apply(self, obj: dict[str, Any], manager: str) -> None:
        await self.send("PATCH", object_path(obj) + f"?fieldManager={manager}&force=true",
                        obj, APPLY, via_proxy=True)  # fmt: skip

    async def ensure_namespace(self, name: str) -> None:
        try:
            await self.send("POST", "/api/v1/namespaces", {"metadata": {"name": name}})
        except ApiError as exc:
            if exc.status != 409:
                raise

    async def install_crds(self, crds: Iterable[dict[str, Any]], seconds: float = 60.0) -> None:
        """Create the CRDs and wait until kube-apiserver serves each: ``Established``, then a
        LIST answered (until its watch cache has filled it answers 429, which would otherwise
        land in the first timed creates)."""
        created = []
        for crd in crds:
            await self.send("POST", CRD_PATH, crd)
            created.append(crd)
        deadline = time.monotonic() + seconds
        for crd in created:
            name = crd["metadata"]["name"]
            while True:
                got = await self.send("GET", f"{CRD_PATH}/{name}")
                conditions = (got.get("status") or {}).get("conditions") or []
                if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"CRD {name} not established within {seconds:.0f} s")
                await asyncio.sleep(0.1)
            spec = crd["spec"]
            version = next(v["name"] for v in spec["versions"] if v.get("served", True))
            await self.send("GET", f"/apis/{spec['group']}/{version}/{spec['names']['plural']}")

    async def warm_up(self, obj: dict[str, Any]) -> float:
        """Create ``obj`` with server-side dry-run; seconds taken. kube-apiserver can make the
        first write of a new custom resource wait ~2 s (measured: 2.0 s in some starts, dry-run
        or not, 4 ms in others; 3-13 ms for the writes after it), a one-off that would otherwise
        fall on the first timed create."""
        meta = obj["metadata"]
        prefix = "/api/v1" if obj["apiVersion"] == "v1" else f"/apis/{obj['apiVersion']}"
        path = f"{prefix}/namespaces/{meta['namespace']}/{obj['kind'].lower()}s?dryRun=All"
        start = time.perf_counter()
        await self.send("POST", path, obj)
        return time.perf_counter() - start

    async def count_deployments(self, namespaces: Iterable[str] | None = None) -> int:
        listing = await self.send("GET", f"{GROUP_PATH}/nemotrondeployments")
        wanted = None if namespaces is None else set(namespaces)
        return sum(
            1 for i in listing["items"] if wanted is None or i["metadata"]["namespace"] in wanted
        )

    async def delete_namespaces(
        self, names: Iterable[str], seconds: float, *, until_gone: bool = True
    ) -> float:
        """Delete namespaces and wait until what they held is gone; seconds taken.

        Their NemotronDeployments are deleted first (one with the operator's finalizer waits for
        the operator), then the namespaces, then their pods at once (grace 0: nothing measured
        depends on how serving pods drain, and a terminating namespace takes no new pod).
        ``until_gone`` waits for the namespaces themselves too: kube-controller-manager's
        namespace controller looks at a deleted namespace only 5 s later
        (``namespaceDeletionGracePeriod``) and again after what it deleted, 10-16 s a batch
        here; the full benchmark waits, so that no deletion overlaps the next measurement,
        while the suite's tiny run starts the next phase on fresh namespaces once the
        deployments and pods are gone (about 1 s).
        """
        names = sorted(set(names))
        start = time.perf_counter()
        for name in names:
            await self.send("DELETE", f"{GROUP_PATH}/namespaces/{name}/nemotrondeployments")
        for name in names:
            await self.send("DELETE", f"/api/v1/namespaces/{name}")
        for name in names:
            await self.send("DELETE", f"/api/v1/namespaces/{name}/pods", _FORCE)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            left = set(await self._still_holding(names))
            if until_gone:
                listing = await self.send("GET", "/api/v1/namespaces")
                left |= {n["metadata"]["name"] for n in listing["items"]} & set(names)
            if not left:
                return time.perf_counter() - start
            await asyncio.sleep(0.2)
        raise RuntimeError(f"namespaces not emptied within {seconds:.0f} s: {sorted(left)}")

    async def _still_holding(self, names: list[str]) -> list[str]:
        """The namespaces among ``names`` that still hold a pod or a NemotronDeployment."""
        pods = await self.send("GET", "/api/v1/pods")
        deployments = await self.send("GET", f"{GROUP_PATH}/nemotrondeployments")
        holding = {
            i["metadata"]["namespace"] for i in pods["items"] + deployments["items"]
        }  # fmt: skip
        return [n for n in names if n in holding]

    async def reset_counts(self) -> None:
        await self.send("DELETE", "/_sim/request-counts", via_proxy=True)

    async def counts(self) -> RequestCounts:
        body = await self.send("GET", "/_sim/request-counts", via_proxy=True)
        return RequestCounts(body["since"], body["now"], body["counts"])


def object_path(obj: dict[str, Any]) -> str:
    """The REST path of a rendered object (the kinds ``render_all`` produces)."""
    group_version = obj["apiVersion"]
    prefix = "/api/v1" if group_version == "v1" else f"/apis/{group_version}"
    plural = {
        "Service": "services",
        "StatefulSet": "statefulsets",
        "PodDisruptionBudget": "poddisruptionbudgets",
        "PersistentVolumeClaim": "persistentvolumeclaims",
        "PodMonitor": "podmonitors",
        "NodePool": "nodepools",
    }[obj["kind"]]
    meta = obj["metadata"]
    namespace = meta.get("namespace")
    scope = f"/namespaces/{namespace}" if namespace else ""
    return f"{prefix}{scope}/{plural}/{meta['name']}"


@dataclass(frozen=True)
class RequestCounts:
    """What ``GET /_sim/request-counts`` answered: rows of agent, verb, resource, count, last."""

    since: float
    now: float
    rows: list[dict[str, Any]]

    def of(self, agents: Callable[[str], bool]) -> list[dict[str, Any]]:
        return [r for r in self.rows if agents(r["agent"])]

    def by_verb(self, agents: Callable[[str], bool]) -> dict[str, int]:
        out: dict[str, int] = {}
        for row in self.of(agents):
            out[row["verb"]] = out.get(row["verb"], 0) + row["count"]
        return dict(sorted(out.items()))

    def by_verb_and_resource(self, agents: Callable[[str], bool]) -> dict[str, int]:
        out: dict[str, int] = {}
        for row in self.of(agents):
            key = f"{row['verb']} {row['resource']}"
            out[key] = out.get(key, 0) + row["count"]
        return dict(sorted(out.items()))

    def writes(self, agents: Callable[[str], bool], *, leases: bool = False) -> int:
        """Writes; the single-replica Lease's renewals only when ``leases`` (they are the
        operator's heartbeat, counted apart from writes to deployments, children and Events)."""
        return sum(
            r["count"]
            for r in self.of(agents)
            if r["verb"] in WRITE_VERBS and (r["resource"] == "leases") == leases
        )

    def writes_by_kind(self, agents: Callable[[str], bool]) -> dict[str, int]:
        """The writes (Leases apart) by what they write: ``status patch`` (a
        NemotronDeployment's status), ``Event``, ``child apply``, ``pod status patch`` (a
        serving pod's readiness gate), ``other``."""
        out = dict.fromkeys(WRITE_KINDS, 0)
        for r in self.of(agents):
            if r["verb"] not in WRITE_VERBS or r["resource"] == "leases":
                continue
            out[write_kind(r["verb"], r["resource"])] += r["count"]
        return out

    def total(self, agents: Callable[[str], bool]) -> int:
        return sum(r["count"] for r in self.of(agents))

    def last_request(self, agents: Callable[[str], bool], exclude_verbs: Iterable[str]) -> float:
        """Wall-clock time of the latest counted request (0 when none)."""
        skip = set(exclude_verbs)
        return max((r["last"] for r in self.of(agents) if r["verb"] not in skip), default=0.0)


WRITE_KINDS = ("status patch", "Event", "child apply", "pod status patch", "other")


def write_kind(verb: str, resource: str) -> str:
    if resource == "nemotrondeployments/status":
        return "status patch"
    if resource == "events":
        return "Event"
    if verb == "apply":
        return "child apply"
    if resource == "pods/status":
        return "pod status patch"
    return "other"


def not_bench(agent: str) -> bool:
    """Every client of the fault proxy but this benchmark: the operator (kopf, the Kubernetes
    client). The control plane's controllers and the simulator's kubelets and nodes talk to
    kube-apiserver directly and are never counted."""
    return agent != AGENT


async def bounded(calls: list[Callable[[], Awaitable[None]]], concurrency: int) -> None:
    gate = asyncio.Semaphore(concurrency)

    async def one(call: Callable[[], Awaitable[None]]) -> None:
        async with gate:
            await call()

    await asyncio.gather(*(one(c) for c in calls))
