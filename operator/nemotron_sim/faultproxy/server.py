"""A fault-injecting reverse proxy in front of kube-apiserver.

The operator under test (and anything else given the proxy's kubeconfig) reaches the API
server through it: HTTPS on ``10.0.k.2:6443`` with a certificate of the cluster CA, and plain
HTTP on ``10.0.k.2:8080``. Each request is journalled and counted, checked against the active
faults (answered with a status, delayed, its connection reset, or — a watch — cut or stalled
after it started), and otherwise forwarded with its own credentials (the ``Authorization``
header: bearer tokens pass, client certificates do not). Responses stream back as they come, so
watches and ``kubectl logs -f`` work through it.

``/_sim/`` is the proxy's own: ``faults`` (GET, POST, DELETE, DELETE ``/{id}``), ``requests``
(GET) and ``request-counts`` (GET; DELETE resets) with the old API server's shapes,
and the faults only a real control plane has: ``control-plane/{component}/{stop,start,restart,
kill}`` (etcd, kube-apiserver, kube-controller-manager, kube-scheduler), ``nodes/{name}/
heartbeat/{stop,resume}`` and ``compact`` (etcd compacts its history now, so a watch that
resumes from before is answered 410 Gone).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp import web

from nemotron_sim.faultproxy.faults import Fault, FaultInjector
from nemotron_sim.faultproxy.journal import JOURNAL_SIZE, Entry, RequestCounts

log = logging.getLogger("nemotron_sim.faultproxy")
# Not forwarded: hop-by-hop headers and what aiohttp sets itself.
_DROPPED = frozenset(
    h.lower()
    for h in ("Host", "Connection", "Keep-Alive", "Transfer-Encoding", "Content-Length",
              "Upgrade", "Proxy-Connection", "TE", "Trailer")
)  # fmt: skip
_REASONS = {
    400: "BadRequest", 403: "Forbidden", 404: "NotFound", 409: "Conflict", 410: "Expired",
    422: "Invalid", 429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable",
    504: "Timeout",
}  # fmt: skip
_CHUNK = 64 * 1024


def status_body(code: int, message: str) -> dict[str, Any]:
    """A ``Status`` as kube-apiserver answers an error."""
    return {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": _REASONS.get(code, "Unknown"), "code": code,
    }  # fmt: skip


def is_watch(request: web.Request) -> bool:
    return request.query.get("watch") in ("true", "1") or "/watch/" in request.path


def _json(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response(data, status=status, headers=headers)


@dataclass
class Controls:
    """What ``/_sim/`` can do to the control plane and the nodes (set by the cluster)."""

    component: Callable[[str, str], Awaitable[None]] | None = None  # (name, action)
    heartbeat: Callable[[str, bool], None] | None = None  # (node, beating)
    compact: Callable[[], Awaitable[int]] | None = None  # → the revision compacted to


class FaultProxy:
    def __init__(self, upstream: str, upstream_context: ssl.SSLContext, controls: Controls) -> None:
        self.upstream = upstream.rstrip("/")
        self.faults = FaultInjector(on_outage=self._cut_watches)
        self.journal: deque[Entry] = deque(maxlen=JOURNAL_SIZE)  # the latest requests, oldest first
        self.counts = RequestCounts()
        self.controls = controls
        self._context = upstream_context
        self._session: aiohttp.ClientSession | None = None
        self._watches: dict[int, web.Request] = {}  # open watch streams (an outage cuts them)
        self._runners: list[web.AppRunner] = []

    async def start(
        self, host: str, https_port: int, http_port: int, context: ssl.SSLContext
    ) -> None:
        self._session = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=10.0),
            connector=aiohttp.TCPConnector(ssl=self._context, limit=256),
            auto_decompress=False,
        )
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        # A client that goes away ends its handler (a dead operator's watches are not relayed
        # on); stopping waits for nothing.
        runner = web.AppRunner(
            app,
            access_log=None,
            handle_signals=False,
            handler_cancellation=True,
            shutdown_timeout=1.0,
        )
        await runner.setup()
        await web.TCPSite(runner, host, https_port, ssl_context=context).start()
        await web.TCPSite(runner, host, http_port).start()
        self._runners.append(runner)

    async def stop(self) -> None:
        self._cut_watches()
        for runner in self._runners:
            await runner.cleanup()
        self._runners = []
        if self._session is not None:
            await self._session.close()
            self._session = None

    # --- requests -----------------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        if request.path.startswith("/_sim/"):
            return await self._control(request)
        watch = is_watch(request)
        self.counts.record(request, watch=watch)
        entry = Entry(request.method, request.path_qs, 0, time.time())
        fault = self.faults.take(request.method, request.path_qs, watch=watch)
        if fault is not None and not fault.watch_only:
            entry.fault = fault.id
            if fault.delay > 0:
                await asyncio.sleep(fault.delay)
            if fault.reset:
                entry.cut = "reset"
                entry.finish()
                self.journal.append(entry)
                if request.transport is not None:
                    request.transport.abort()
                return web.Response(status=503)
            if fault.status:
                entry.status = fault.status
                entry.finish()
                self.journal.append(entry)
                headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after else None
                return _json(status_body(fault.status, fault.message), fault.status, headers)
        try:
            return await self._forward(request, entry, fault if watch else None)
        except (aiohttp.ClientError, OSError, TimeoutError) as error:
            # kube-apiserver is away (stopped, restarting): a client sees what a load balancer
            # in front of it would answer.
            entry.status = 503
            entry.finish()
            self.journal.append(entry)
            return _json(status_body(503, f"the API server is unreachable: {error}"), 503)

    async def _forward(
        self, request: web.Request, entry: Entry, fault: Fault | None
    ) -> web.StreamResponse:
        assert self._session is not None
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _DROPPED}
        body = await request.read()
        async with self._session.request(
            request.method, self.upstream + request.path_qs, headers=headers,
            data=body or None, allow_redirects=False,
        ) as upstream:  # fmt: skip
            entry.status = upstream.status
            if fault is not None:
                entry.fault = fault.id
            self.journal.append(entry)
            response = web.StreamResponse(status=upstream.status)
            for key, value in upstream.headers.items():
                if key.lower() not in _DROPPED:
                    response.headers.add(key, value)
            if upstream.headers.get("Content-Length") is not None:
                response.content_length = int(upstream.headers["Content-Length"])
            await response.prepare(request)
            if is_watch(request):
                self._watches[id(request)] = request
            try:
                await self._relay(upstream, response, entry, fault)
            finally:
                self._watches.pop(id(request), None)
                entry.finish()
            with contextlib.suppress(ConnectionResetError, RuntimeError):
                await response.write_eof()
            return response

    async def _relay(
        self,
        upstream: aiohttp.ClientResponse,
        response: web.StreamResponse,
        entry: Entry,
        fault: Fault | None,
    ) -> None:
        """Copy the body; for a watch with a fault, cut it after ``watch_drop_after`` seconds or
        hold it back for ``watch_stall`` seconds (no events, no bookmarks)."""
        began = time.monotonic()
        drop_at = began + fault.watch_drop_after if fault and fault.watch_drop_after else None
        stall_until = began + fault.watch_stall if fault and fault.watch_stall else None
        reader = upstream.content
        while True:
            timeout = None if drop_at is None else max(0.0, drop_at - time.monotonic())
            try:
                chunk = await asyncio.wait_for(reader.readany(), timeout)
            except TimeoutError:
                entry.cut = "watch-dropped"
                return  # the injected drop: the stream ends here
            if not chunk:
                return
            if stall_until is not None and time.monotonic() < stall_until:
                await asyncio.sleep(stall_until - time.monotonic())
                entry.stalled = time.monotonic() - entry.began
            await response.write(chunk)

    def _cut_watches(self) -> None:
        for request in list(self._watches.values()):
            if request.transport is not None:
                request.transport.abort()
        self._watches.clear()

    # --- /_sim/ ---------------------------------------------------------------------------------

    async def _control(self, request: web.Request) -> web.Response:
        parts = [p for p in request.path.split("/") if p][1:]
        try:
            if parts[:1] in (["requests"], ["request-counts"]):
                return self._journal(request.method, parts)
            if parts[:1] == ["faults"]:
                return await self._faults(request, parts)
            if request.method == "POST":
                return await self._cluster(parts)
        except (KeyError, ValueError) as error:
            return _json(status_body(400, str(error)), 400)
        return _json(status_body(404, f"no such endpoint: {request.method} {request.path}"), 404)

    def _journal(self, method: str, parts: list[str]) -> web.Response:
        if parts == ["requests"] and method == "GET":
            return _json([entry.to_dict() for entry in self.journal])
        if parts == ["request-counts"] and method in ("GET", "DELETE"):
            if method == "DELETE":
                self.counts.reset()
            return _json(self.counts.to_dict())
        return _json(status_body(405, f"{method} is not allowed here"), 405)

    async def _cluster(self, parts: list[str]) -> web.Response:
        """The faults only a real control plane has (POST)."""
        controls = self.controls
        if len(parts) == 3 and parts[0] == "control-plane" and controls.component is not None:
            await controls.component(parts[1], parts[2])
            return _json({"component": parts[1], "done": parts[2]})
        heartbeat = len(parts) == 4 and parts[0] == "nodes" and parts[2] == "heartbeat"
        if heartbeat and parts[3] in ("stop", "resume") and controls.heartbeat is not None:
            controls.heartbeat(parts[1], parts[3] == "resume")
            return _json({"node": parts[1], "heartbeat": parts[3]})
        if parts == ["compact"] and controls.compact is not None:
            return _json({"compactedRevision": await controls.compact()})
        return _json(status_body(404, f"no such endpoint: POST /_sim/{'/'.join(parts)}"), 404)

    async def _faults(self, request: web.Request, parts: list[str]) -> web.Response:
        if request.method == "GET":
            return _json([f.to_dict() for f in self.faults.active()])
        if request.method == "POST":
            try:
                fault = self.faults.add(Fault.from_dict(await request.json()))
            except (ValueError, TypeError) as error:
                return _json(status_body(400, str(error)), 400)
            return _json(fault.to_dict(), 201)
        if request.method == "DELETE" and len(parts) == 2 and parts[1].isdigit():
            found = self.faults.remove(int(parts[1]))
            return _json({"removed": found}, 200 if found else 404)
        if request.method == "DELETE":
            self.faults.clear()
            return _json({"removed": "all"})
        return _json(status_body(405, f"{request.method} is not allowed here"), 405)
