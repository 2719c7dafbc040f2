"""The scraper: a reconcile samples a ready serving leader it has never sampled before computing
status (so the status that says Ready is complete), once, without queueing the deployment again;
never while the timer is scraping the same deployment; only ready leaders with an IP are
scraped; the timer hands each tick's figures on (to the autoscaler)."""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from nemotron_operator.controller.pods.scraper import Scraper, current_pods, scrape_targets
from nemotron_operator.controller.queue import WorkQueue
from nemotron_operator.controller.settings import OperatorConfig
from nemotron_operator.observe.throughput import ThroughputFigures
from nemotron_operator.render import names as n
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
    generated: float = 0.0  # vllm:generation_tokens_total

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
            f"vllm:generation_tokens_total{labels} {self.generated}\n"
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


@dataclass
class Clock:
    now: float = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Ticks:
    """What the scraper hands on after each tick (the autoscaler's part)."""

    seen: list[tuple[tuple[str, str], ThroughputFigures | None]] = field(default_factory=list)

    async def __call__(self, key: tuple[str, str], figures: ThroughputFigures | None) -> None:
        self.seen.append((key, figures))


@pytest.fixture
async def scraper() -> AsyncIterator[Scraper]:
    """A scraper on a fake clock (``scraper.clock.now``): time passes when a test moves it."""
    config = OperatorConfig(scrape_seconds=30.0, scrape_quiet_seconds=0, scrape_timeout_seconds=2.0)
    found = Scraper(config, WorkQueue(), OperatorMetrics(), after_tick=Ticks(), clock=Clock())
    async with aiohttp.ClientSession() as session:
        found._session = session  # as run() sets it
        yield found


def advance(scraper: Scraper, seconds: float) -> None:
    assert isinstance(scraper.clock, Clock)
    scraper.clock.now += seconds


async def seen(scraper: Scraper, pods: list[dict[str, Any]]) -> Any:
    return await scraper.seen(KEY, None, pods, None)


async def test_a_new_ready_pod_is_sampled_once_before_status_and_not_queued(
    served: tuple[Pods, list[str]], scraper: Scraper
) -> None:
    pods, ips = served
    parts = await seen(scraper, [pod("p0", ips[0])])
    assert pods.hits[ips[0]] == 1
    assert parts.throughput is not None  # rates from the pod's start: complete at once
    assert parts.throughput.generation_tokens_per_second == 0.0
    assert parts.throughput.pods_sampled == 1
    assert len(scraper.queue) == 0  # the caller writes status now
    again = await seen(scraper, [pod("p0", ips[0])])
    assert pods.hits[ips[0]] == 1  # sampled already: the timer's job from now on
    assert again.throughput == parts.throughput


async def test_a_pod_that_does_not_answer_is_left_to_the_timer(
    served: tuple[Pods, list[str]], scraper: Scraper
) -> None:
    pods, ips = served
    pods.delay = 0.5
    scraper.config = OperatorConfig(scrape_seconds=30.0, scrape_timeout_seconds=0.2)
    parts = await seen(scraper, [pod("p0", ips[0])])
    assert parts.throughput is None  # one miss: nothing to show yet (the timer reports it)
    await seen(scraper, [pod("p0", ips[0])])
    assert pods.hits[ips[0]] == 1  # not tried again by a reconcile: the timer's job
    assert len(scraper.queue) == 0


async def test_a_reconcile_never_scrapes_while_the_timer_does(
    served: tuple[Pods, list[str]], scraper: Scraper
) -> None:
    pods, ips = served
    scraper.config = OperatorConfig(
        scrape_seconds=0.1, scrape_quiet_seconds=0, scrape_timeout_seconds=2.0
    )
    await seen(scraper, [pod("p0", ips[0])])
    advance(scraper, 0.1)  # the timer's next tick is due
    pods.delay = 0.3
    # The timer's tick scrapes p0 while a reconcile sees a second pod and samples both.
    await asyncio.gather(scraper.tick(KEY), seen(scraper, [pod("p0", ips[0]), pod("p1", ips[1])]))
    assert pods.hits == Counter({ips[0]: 3, ips[1]: 1})
    assert pods.most_at_once[ips[0]] == 1


async def test_the_timer_skips_a_deployment_a_reconcile_has_just_sampled(
    served: tuple[Pods, list[str]], scraper: Scraper
) -> None:
    pods, ips = served
    await seen(scraper, [pod("p0", ips[0])])
    await scraper.tick(KEY)  # within half an interval: rates would be noise
    assert pods.hits[ips[0]] == 1
    scraper.config = OperatorConfig(
        scrape_seconds=0.1, scrape_quiet_seconds=0, scrape_timeout_seconds=2.0
    )
    advance(scraper, 0.06)  # past half an interval
    await scraper.tick(KEY)
    assert pods.hits[ips[0]] == 2


async def test_a_reconcile_during_shutdown_does_not_fail_on_the_closed_session(
    served: tuple[Pods, list[str]], scraper: Scraper
) -> None:
    pods, ips = served
    assert scraper._session is not None
    await scraper._session.close()  # the timer stopped first
    parts = await seen(scraper, [pod("p0", ips[0])])
    assert parts.throughput is None
    assert pods.hits[ips[0]] == 0


async def test_each_tick_hands_the_last_figures_on_and_a_forgotten_deployment_none(
    served: tuple[Pods, list[str]], scraper: Scraper
) -> None:
    _, ips = served
    ticks = scraper.after_tick
    assert isinstance(ticks, Ticks)
    scraper.config = OperatorConfig(
        scrape_seconds=0.1, scrape_quiet_seconds=0, scrape_timeout_seconds=2.0
    )
    await seen(scraper, [pod("p0", ips[0])])
    advance(scraper, 0.06)
    await scraper.tick(KEY)
    assert [key for key, _ in ticks.seen] == [KEY]
    figures = ticks.seen[0][1]
    assert figures is not None
    assert figures.pods_sampled == 1
    scraper.forget(KEY)
    await scraper.tick(KEY)
    assert len(ticks.seen) == 1  # gone: nothing scraped, nothing handed on


def test_only_ready_leaders_with_an_ip_are_scraped() -> None:
    def leader(
        name: str, *, ready: bool = True, role: str = "leader", ip: str | None = "127.9.0.1"
    ):
        return {
            "metadata": {"name": name, "uid": f"uid-{name}",
                         "labels": {"serving.nemotron.io/role": role}},
            "status": {"podIP": ip, "conditions": [{"type": "Ready",
                                                    "status": "True" if ready else "False"}]},
        }  # fmt: skip

    targets = scrape_targets(
        [leader("a-0"), leader("a-1", ready=False), leader("a-2", role="worker"),
         leader("a-3", ip=None)]
    )  # fmt: skip
    assert [(t.pod, t.key, t.url) for t in targets] == [
        ("a-0", "uid-a-0", "http://127.9.0.1:8000/metrics")
    ]


def paced(clock: Clock, *, autoscaled: bool = False, quiet_seconds: float = 120.0) -> Scraper:
    config = OperatorConfig(
        scrape_seconds=30.0, scrape_quiet_seconds=quiet_seconds, scrape_timeout_seconds=2.0
    )
    return Scraper(
        config,
        WorkQueue(),
        OperatorMetrics(),
        after_tick=Ticks(),
        keeps_pace=lambda key: autoscaled,
        clock=clock,
    )


async def ticks_scraped(scraper: Scraper, clock: Clock, pods: Pods, ip: str, n: int) -> list[int]:
    """Tick ``n`` times, 30 s apart; the ticks (1-based) that scraped the pod."""
    scraped = []
    for number in range(1, n + 1):
        clock.now += 30.0
        before = pods.hits[ip]
        await scraper.tick(KEY)
        if pods.hits[ip] > before:
            scraped.append(number)
    return scraped


@pytest.mark.parametrize(
    ("autoscaled", "quiet_seconds", "expected"),
    [
        # No traffic: the first tick has the first rates (the first sample is a base), 0, and
        # from then on every 120 s.
        (False, 120.0, [1, 5, 9]),
        (True, 120.0, list(range(1, 11))),  # an autoscaler reads every tick's figures
        (False, 0.0, list(range(1, 11))),  # the quiet pace switched off
    ],
)
async def test_a_deployment_without_traffic_is_scraped_at_the_quiet_pace(
    served: tuple[Pods, list[str]], autoscaled: bool, quiet_seconds: float, expected: list[int]
) -> None:
    pods, ips = served
    clock = Clock()
    scraper = paced(clock, autoscaled=autoscaled, quiet_seconds=quiet_seconds)
    async with aiohttp.ClientSession() as session:
        scraper._session = session
        await scraper.seen(KEY, None, [pod("p0", ips[0])], None)  # the first sample
        assert await ticks_scraped(scraper, clock, pods, ips[0], 10) == expected


async def test_traffic_returns_a_quiet_deployment_to_the_busy_pace(
    served: tuple[Pods, list[str]],
) -> None:
    pods, ips = served
    clock = Clock()
    scraper = paced(clock)
    async with aiohttp.ClientSession() as session:
        scraper._session = session
        await scraper.seen(KEY, None, [pod("p0", ips[0])], None)
        assert await ticks_scraped(scraper, clock, pods, ips[0], 1) == [1]  # the first rates: 0
        assert await ticks_scraped(scraper, clock, pods, ips[0], 4) == [4]  # quiet from then on
        pods.generated = 500.0  # requests arrive
        assert await ticks_scraped(scraper, clock, pods, ips[0], 4) == [4]  # seen 120 s later
        # Tokens moved over that interval: the busy pace until a scrape sees none again.
        assert await ticks_scraped(scraper, clock, pods, ips[0], 6) == [1, 5]


async def test_a_new_ready_leader_ends_the_quiet_pace(served: tuple[Pods, list[str]]) -> None:
    pods, ips = served
    clock = Clock()
    scraper = paced(clock)
    async with aiohttp.ClientSession() as session:
        scraper._session = session
        await scraper.seen(KEY, None, [pod("p0", ips[0])], None)
        await ticks_scraped(scraper, clock, pods, ips[0], 2)
        await scraper.seen(KEY, None, [pod("p0", ips[0]), pod("p1", ips[1])], None)
        # p1 was sampled by the reconcile but not by a tick with p0: the busy pace until one
        # tick's scrape of both pods has seen no traffic.
        assert await ticks_scraped(scraper, clock, pods, ips[1], 6) == [1, 5]


def test_the_pods_of_the_rendered_revision_are_the_ones_checked_against_the_plan() -> None:
    def serving(name: str, config: str) -> dict[str, Any]:
        found = pod(name, "10.0.0.1")
        found["metadata"]["annotations"] = {n.CONFIG_HASH: config}
        return found

    desired = [
        {
            "kind": "StatefulSet",
            "spec": {"template": {"metadata": {"annotations": {n.CONFIG_HASH: "new"}}}},
        }
    ]
    pods = [serving("p0", "old"), serving("p1", "new")]
    assert current_pods(pods, desired) == {"uid-p1"}
    assert current_pods(pods, []) is None  # nothing rendered says: every pod
