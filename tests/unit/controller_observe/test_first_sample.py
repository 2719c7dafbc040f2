"""A reconcile samples a ready serving leader it has never sampled before computing status (so the
status that says Ready is complete), once, without queueing the deployment again; and never while
the timer is scraping the same deployment."""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, cast

import aiohttp
import pytest
from aiohttp import web

from nemotron_operator.controller.observability import Observability
from nemotron_operator.controller.queue import WorkQueue
from nemotron_operator.controller.settings import OperatorConfig
from nemotron_operator.kube import KubeClient
from nemotron_operator.render.engine import SERVE_PORT
from nemotron_operator.telemetry import OperatorMetrics

KEY = ("ai", "demo")


@dataclass
class Pods:
    """Stand-in vLLM /metrics on loopback addresses (port 8000, as the operator scrapes)."""

    delay: float = 0.0
    hits: Counter[str] = field(default_factory=Counter)
    in_flight: Counter[str] = field(default_factory=Counter)
    most_at_once: Counter[str] = field(default_factory=Counter)
    started: float = field(default_factory=lambda: time.time() - 60.0)

    async def metrics(self, request: web.Request) -> web.Response:
        host = request.host.split(":")[0]
        self.hits[host] += 1
        self.in_flight[host] += 1
        self.most_at_once[host] = max(self.most_at_once[host], self.in_flight[host])
        try:
            await asyncio.sleep(self.delay)
        finally:
            self.in_flight[host] -= 1
        labels = '{engine="0",model_name="demo"}'
        text = (
            "# TYPE vllm:generation_tokens counter\n"
            f"vllm:generation_tokens_total{labels} 0.0\n"
            f"vllm:generation_tokens_created{labels} {self.started}\n"
            "# TYPE vllm:num_requests_running gauge\n"
            f"vllm:num_requests_running{labels} 0.0\n"
        )
        return web.Response(text=text, content_type="text/plain")


def pod(name: str, ip: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "uid": f"uid-{name}", "namespace": KEY[0]},
        "status": {"podIP": ip, "conditions": [{"type": "Ready", "status": "True"}]},
    }


@pytest.fixture
async def served() -> AsyncIterator[tuple[Pods, list[str]]]:
    pods = Pods()
    app = web.Application()
    app.router.add_get("/metrics", pods.metrics)
    runner = web.AppRunner(app)
    await runner.setup()
    # 127.10-99.x.y: outside the simulated cluster's pod, Service and node ranges (100-254).
    base = f"127.{random.randrange(10, 100)}.{random.randrange(1, 250)}"  # noqa: S311
    ips = [f"{base}.1", f"{base}.2"]
    for ip in ips:
        await web.TCPSite(runner, ip, SERVE_PORT).start()
    try:
        yield pods, ips
    finally:
        await runner.cleanup()


@pytest.fixture
async def observability() -> AsyncIterator[Observability]:
    config = OperatorConfig(scrape_seconds=30.0, scrape_timeout_seconds=2.0)
    found = Observability(cast(KubeClient, None), config, WorkQueue(), OperatorMetrics())
    async with aiohttp.ClientSession() as session:
        found._session = session  # as run() sets it
        yield found


async def seen(observability: Observability, pods: list[dict[str, Any]]) -> Any:
    raw = {"metadata": {"namespace": KEY[0], "name": KEY[1], "uid": "nd"}, "spec": {}}
    return await observability.seen(
        raw, None, None, pods, ready_replicas=len(pods), replicas_that_fit=None, previous=None
    )


async def test_a_new_ready_pod_is_sampled_once_before_status_and_not_queued(
    served: tuple[Pods, list[str]], observability: Observability
) -> None:
    pods, ips = served
    parts = await seen(observability, [pod("p0", ips[0])])
    assert pods.hits[ips[0]] == 1
    assert parts.throughput is not None  # rates from the pod's start: complete at once
    assert parts.throughput.generation_tokens_per_second == 0.0
    assert parts.throughput.pods_sampled == 1
    assert len(observability.queue) == 0  # the caller writes status now
    again = await seen(observability, [pod("p0", ips[0])])
    assert pods.hits[ips[0]] == 1  # sampled already: the timer's job from now on
    assert again.throughput == parts.throughput


async def test_a_pod_that_does_not_answer_is_left_to_the_timer(
    served: tuple[Pods, list[str]], observability: Observability
) -> None:
    pods, ips = served
    pods.delay = 0.5
    observability.config = OperatorConfig(scrape_seconds=30.0, scrape_timeout_seconds=0.2)
    parts = await seen(observability, [pod("p0", ips[0])])
    assert parts.throughput is None  # one miss: nothing to show yet (the timer reports it)
    await seen(observability, [pod("p0", ips[0])])
    assert pods.hits[ips[0]] == 1  # not tried again by a reconcile: the timer's job
    assert len(observability.queue) == 0


async def test_a_reconcile_never_scrapes_while_the_timer_does(
    served: tuple[Pods, list[str]], observability: Observability
) -> None:
    pods, ips = served
    observability.config = OperatorConfig(scrape_seconds=0.1, scrape_timeout_seconds=2.0)
    await seen(observability, [pod("p0", ips[0])])
    await asyncio.sleep(0.1)  # the timer's next tick is due
    pods.delay = 0.3
    # The timer's tick scrapes p0 while a reconcile sees a second pod and samples both.
    await asyncio.gather(
        observability.tick(KEY), seen(observability, [pod("p0", ips[0]), pod("p1", ips[1])])
    )
    assert pods.hits == Counter({ips[0]: 3, ips[1]: 1})
    assert pods.most_at_once[ips[0]] == 1


async def test_the_timer_skips_a_deployment_a_reconcile_has_just_sampled(
    served: tuple[Pods, list[str]], observability: Observability
) -> None:
    pods, ips = served
    await seen(observability, [pod("p0", ips[0])])
    await observability.tick(KEY)  # within half an interval: rates would be noise
    assert pods.hits[ips[0]] == 1
    observability.config = OperatorConfig(scrape_seconds=0.1, scrape_timeout_seconds=2.0)
    await asyncio.sleep(0.05)
    await observability.tick(KEY)
    assert pods.hits[ips[0]] == 2


async def test_a_reconcile_during_shutdown_does_not_fail_on_the_closed_session(
    served: tuple[Pods, list[str]], observability: Observability
) -> None:
    pods, ips = served
    assert observability._session is not None
    await observability._session.close()  # the timer stopped first
    parts = await seen(observability, [pod("p0", ips[0])])
    assert parts.throughput is None
    assert pods.hits[ips[0]] == 0
