"""``/healthz`` and ``/metrics`` from one small aiohttp server.

kopf's own ``--liveness`` endpoint reports ``on.probe`` results and does not notice dead
watchers, so the operator serves its own: unhealthy (503, with the reason) when kopf has
stopped, when a watch stream's task is gone, when a watch of the operator's own has failed for
``stale_after`` seconds (the API server unreachable), when due work waits with no reconcile
finishing, or when the resync timer has not run for ``stale_after`` seconds (the event loop
stuck). A standby replica (not holding the Lease) still runs its timer, so it stays healthy.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest

from nemotron_operator.controller.runtime.metrics_auth import MetricsGuard

logger = logging.getLogger(__name__)


@dataclass
class HealthState:
    stale_after: float
    expected_watchers: int
    started: float = field(default_factory=time.monotonic)
    last_resync: float | None = None
    kopf_running: Callable[[], bool] = lambda: True
    watchers_running: Callable[[], int] = lambda: 0  # kopf's watch streams (kopf_wiring.py)
    more_problems: Callable[[], list[str]] = list  # the watch cache's (stopped or failing)
    # When the longest-waiting due key of the work queue became due (None: nothing waits).
    waiting_since: Callable[[], float | None] = lambda: None
    last_work: float | None = None

    def worked(self) -> None:
        self.last_work = time.monotonic()

    def resynced(self) -> None:
        self.last_resync = time.monotonic()

    def problems(self) -> list[str]:
        out = []
        if not self.kopf_running():
            out.append("kopf has stopped")
        watchers = self.watchers_running()
        # Watchers start after kopf's start-up; give them the staleness window to appear.
        started_long_ago = time.monotonic() - self.started > min(self.stale_after, 30.0)
        if watchers < self.expected_watchers and started_long_ago:
            out.append(f"{watchers} of {self.expected_watchers} watch streams running")
        out.extend(self.more_problems())
        due = self.waiting_since()
        if due is not None and time.monotonic() - due > self.stale_after:
            since = self.last_work if self.last_work is not None else self.started
            if time.monotonic() - since > self.stale_after:
                out.append(
                    f"work waits {time.monotonic() - due:.0f} s and no reconcile has finished "
                    f"for {time.monotonic() - since:.0f} s (workers stuck)"
                )
        last = self.last_resync if self.last_resync is not None else self.started
        age = time.monotonic() - last
        if age > self.stale_after:
            out.append(f"no resync for {age:.0f} s (limit {self.stale_after:.0f} s)")
        return out


async def start_servers(
    state: HealthState,
    *,
    host: str,
    health_port: int,
    metrics_port: int,
    guard: MetricsGuard | None = None,
) -> tuple[web.AppRunner, int, int]:
    """Serve both endpoints (on one port when both ports are equal). Returns the runner and
    the bound ports (0 picks free ones). With a ``guard``, ``/metrics`` answers only callers
    it allows (``controller/runtime/metrics_auth.py``); ``/healthz`` stays open for the kubelet."""

    async def healthz(_: web.Request) -> web.Response:
        problems = state.problems()
        if problems:
            return web.json_response({"status": "unhealthy", "problems": problems}, status=503)
        return web.json_response({"status": "ok"})

    async def metrics(request: web.Request) -> web.Response:
        if guard is not None:
            decision = await guard.decide(
                request.headers.get("Authorization"), path=request.path, method=request.method
            )
            if decision.status != 200:
                headers = {"WWW-Authenticate": "Bearer"} if decision.status == 401 else None
                return web.Response(status=decision.status, text=decision.reason, headers=headers)
        return web.Response(
            body=generate_latest(REGISTRY), headers={"Content-Type": CONTENT_TYPE_LATEST}
        )

    app = web.Application()
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    ports = []
    for port in (
        dict.fromkeys((health_port, metrics_port)) if health_port else (health_port, metrics_port)
    ):
        site = web.TCPSite(runner, host, port)
        await site.start()
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        ports.append(sockets[0].getsockname()[1] if sockets else port)
    health, metrics_bound = ports[0], ports[-1]
    logger.info(
        "health endpoint http://%s:%d/healthz, metrics http://%s:%d/metrics",
        host,
        health,
        host,
        metrics_bound,
    )
    return runner, health, metrics_bound
