"""The benchmark's HTTP client of the simulated API server, and its request counters."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

import aiohttp

AGENT = "nemotron-bench"  # the User-Agent product the request counters know this client by
GROUP_PATH = "/apis/serving.nemotron.io/v1alpha1"
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"
WRITE_VERBS = frozenset({"create", "update", "patch", "apply", "delete", "deletecollection"})


class ApiError(RuntimeError):
    def __init__(self, method: str, path: str, status: int, body: Any) -> None:
        super().__init__(f"{method} {path}: {status} {body}")
        self.status = status


class Client:
    def __init__(self, session: aiohttp.ClientSession, url: str) -> None:
        self.session, self.url = session, url

    async def send(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> Any:
        headers = {"Content-Type": content_type, "User-Agent": f"{AGENT}/1"}
        async with self.session.request(
            method, self.url + path, json=body, headers=headers
        ) as response:
            payload = await response.json(content_type=None)
            if response.status >= 300:
                raise ApiError(method, path, response.status, payload)
            return payload

    async def create_deployment(self, obj: dict[str, Any]) -> dict[str, Any]:
        namespace = obj["metadata"]["namespace"]
        path = f"{GROUP_PATH}/namespaces/{namespace}/nemotrondeployments"
        created: dict[str, Any] = await self.send("POST", path, obj)
        return created

    async def apply(self, obj: dict[str, Any], manager: str) -> None:
        await self.send("PATCH", object_path(obj) + f"?fieldManager={manager}&force=true",
                        obj, APPLY)  # fmt: skip

    async def ensure_namespace(self, name: str) -> None:
        try:
            await self.send("POST", "/api/v1/namespaces", {"metadata": {"name": name}})
        except ApiError as exc:
            if exc.status != 409:
                raise

    async def count_deployments(self, namespaces: Iterable[str] | None = None) -> int:
        listing = await self.send("GET", f"{GROUP_PATH}/nemotrondeployments")
        wanted = None if namespaces is None else set(namespaces)
        return sum(
            1 for i in listing["items"] if wanted is None or i["metadata"]["namespace"] in wanted
        )

    async def delete_namespaces(self, names: Iterable[str], seconds: float) -> float:
        """Delete namespaces and wait until they are gone; seconds taken (their contents go
        first: a deployment with the operator's finalizer waits for the operator)."""
        names = list(names)
        start = time.perf_counter()
        for name in names:
            await self.send("DELETE", f"/api/v1/namespaces/{name}")
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            listing = await self.send("GET", "/api/v1/namespaces")
            left = {n["metadata"]["name"] for n in listing["items"]} & set(names)
            if not left:
                return time.perf_counter() - start
            await asyncio.sleep(0.2)
        raise RuntimeError(f"namespaces not deleted within {seconds:.0f} s: {sorted(left)}")

    async def reset_counts(self) -> None:
        await self.send("DELETE", "/_sim/request-counts")

    async def counts(self) -> RequestCounts:
        body = await self.send("GET", "/_sim/request-counts")
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

    def total(self, agents: Callable[[str], bool]) -> int:
        return sum(r["count"] for r in self.of(agents))

    def last_request(self, agents: Callable[[str], bool], exclude_verbs: Iterable[str]) -> float:
        """Wall-clock time of the latest counted request (0 when none)."""
        skip = set(exclude_verbs)
        return max((r["last"] for r in self.of(agents) if r["verb"] not in skip), default=0.0)


def not_bench(agent: str) -> bool:
    """Every client but this benchmark: the operator (kopf, the Kubernetes client) — the
    simulated cluster's own controllers use its store directly and are never counted."""
    return agent != AGENT


async def bounded(calls: list[Callable[[], Awaitable[None]]], concurrency: int) -> None:
    gate = asyncio.Semaphore(concurrency)

    async def one(call: Callable[[], Awaitable[None]]) -> None:
        async with gate:
            await call()

    await asyncio.gather(*(one(c) for c in calls))
