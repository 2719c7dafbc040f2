"""Scraping real stand-in vLLM servers on loopback: chat completions move the figures the
counters imply, a restarted pod gives no negative rate, and a silent pod is reported while the
others are measured."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import aiohttp
import pytest

from nemotron_operator.api import Plan
from nemotron_operator.observe.tracker import DeploymentTracker
from nemotron_operator.telemetry.scraper import ScrapeResult, ScrapeTarget, scrape_pods
from nemotron_sim.vllm import StubVllm, Timing
from tests.integration.vllm_stub.conftest import MODEL, loopback_host
from tests.status_objects import full_status

FLAGS = ("--speculative-config", '{"method":"mtp","num_speculative_tokens":3}')


async def start(bias: float = 0.0, load_seconds: float = 0.0) -> StubVllm:
    stub = StubVllm(
        ["vllm", "serve", MODEL, "--tensor-parallel-size", "4", "--max-model-len", "131072",
         *FLAGS],
        load_seconds=load_seconds,
        timing=Timing(step_seconds=0.0, prefill_seconds_per_token=0.0),
        gpu_product="NVIDIA-H200",
        kv_cache_bias=bias,
    )  # fmt: skip
    await stub.start(loopback_host(), 0)
    return stub


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


async def chat(http: aiohttp.ClientSession, stub: StubVllm, n: int) -> None:
    body = {
        "model": stub.served_model_name,
        "messages": [{"role": "user", "content": "count"}],
        "max_tokens": 40,
        "ignore_eos": True,
    }
    for i in range(n):
        body["messages"] = [{"role": "user", "content": f"count {i}"}]
        async with http.post(f"{stub.url}/v1/chat/completions", json=body) as response:
            assert response.status == 200


def target(stub: StubVllm, name: str) -> ScrapeTarget:
    return ScrapeTarget(key=f"uid-{name}-{id(stub)}", pod=name, url=f"{stub.url}/metrics")


async def scrape(http: aiohttp.ClientSession, targets: list[ScrapeTarget]) -> ScrapeResult:
    return await scrape_pods(http, targets, clock=time.monotonic, per_pod_timeout=0.5)


def counters(stub: StubVllm) -> tuple[float, float, float, float]:
    m = stub.metrics
    assert m.spec_decode is not None
    return (
        m.generation_tokens._value.get(),
        m.spec_decode.num_drafts._value.get(),
        m.spec_decode.num_draft_tokens._value.get(),
        m.spec_decode.num_accepted_tokens._value.get(),
    )


async def test_chat_completions_give_the_rates_and_mtp_figures_the_counters_imply(
    http: aiohttp.ClientSession,
) -> None:
    stubs = [await start(), await start()]
    try:
        targets = [target(s, f"pod-{i}") for i, s in enumerate(stubs)]
        tracker = DeploymentTracker()
        first = await scrape(http, targets)
        tracker.update(None, first.samples, first.pods, [], sampled_at="t0")
        before = [counters(s) for s in stubs]
        await asyncio.gather(chat(http, stubs[0], 6), chat(http, stubs[1], 3))
        second = await scrape(http, targets)
        update = tracker.update(None, second.samples, second.pods, [], sampled_at="t1")
        after = [counters(s) for s in stubs]
        pairs = zip(after, before, strict=True)
        delta = [[a - b for a, b in zip(x, y, strict=True)] for x, y in pairs]
        seconds = [second.samples[t.key].at - first.samples[t.key].at for t in targets]
        expected_rate = sum(d[0] / s for d, s in zip(delta, seconds, strict=True))
        figures = update.figures
        assert figures.generation_tokens_per_second == pytest.approx(expected_rate)
        assert figures.generation_tokens_per_second > 0
        drafts, draft_tokens, accepted = (sum(d[i] for d in delta) for i in (1, 2, 3))
        assert figures.mtp_acceptance_rate == pytest.approx(accepted / draft_tokens)
        assert figures.mtp_mean_accepted_length == pytest.approx(1 + accepted / drafts)
        assert figures.ttft_seconds_p50 is not None
        assert update.throughput_changed  # work happened: status would be written
        third = await scrape(http, targets)
        idle = tracker.update(None, third.samples, third.pods, [], sampled_at="t2")
        assert idle.figures.generation_tokens_per_second == 0
        assert "generation_tokens_per_second" in idle.throughput_changed
        fourth = await scrape(http, targets)
        quiet = tracker.update(None, fourth.samples, fourth.pods, [], sampled_at="t3")
        assert quiet.throughput_changed == ()  # idle and unchanged: no status write
        assert quiet.throughput.sampled_at == "t2"
    finally:
        for stub in stubs:
            await stub.stop()


async def test_a_restarted_pod_gives_no_negative_rate(http: aiohttp.ClientSession) -> None:
    old = await start()
    tracker = DeploymentTracker()
    try:
        await chat(http, old, 5)
        pod = target(old, "pod-0")
        first = await scrape(http, [pod])
        tracker.update(None, first.samples, first.pods, [], sampled_at="t0")
    finally:
        await old.stop()
    new = await start()  # the same pod restarted: same key, counters from zero
    try:
        await chat(http, new, 1)
        restarted = ScrapeTarget(key=pod.key, pod="pod-0", url=f"{new.url}/metrics")
        second = await scrape(http, [restarted])
        update = tracker.update(None, second.samples, second.pods, [], sampled_at="t1")
        assert update.figures.generation_tokens_per_second > 0
        seconds = second.samples[pod.key].at - first.samples[pod.key].at
        assert update.figures.generation_tokens_per_second == pytest.approx(
            counters(new)[0] / seconds
        )
    finally:
        await new.stop()


async def test_a_silent_pod_is_reported_and_the_others_are_measured(
    http: aiohttp.ClientSession,
) -> None:
    stub = await start()
    held: list[asyncio.StreamWriter] = []

    async def never_answer(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)  # accept the connection and say nothing

    host = loopback_host()
    silent = await asyncio.start_server(never_answer, host, 0)
    port = silent.sockets[0].getsockname()[1]
    refused_host = loopback_host()
    try:
        targets = [
            target(stub, "pod-0"),
            ScrapeTarget("uid-1", "pod-1", f"http://{host}:{port}/metrics"),
            ScrapeTarget("uid-2", "pod-2", f"http://{refused_host}:9/metrics"),
        ]
        started = time.monotonic()
        result = await scrape_pods(
            http, targets, clock=time.monotonic, per_pod_timeout=0.3, concurrency=3
        )
        elapsed = time.monotonic() - started
        assert set(result.samples) == {targets[0].key}
        assert set(result.failures) == {"pod-1", "pod-2"}
        assert result.outcome("pod-1") == "timeout"
        assert result.outcome("pod-2") == "error"
        assert elapsed < 2.0  # bounded by the per-pod timeout, not by the silent pod
        update = DeploymentTracker().update(
            None, result.samples, result.pods, sorted(result.failures), sampled_at="t0"
        )
        assert update.throughput.unresponsive_pods == ["pod-1", "pod-2"]
        assert update.throughput.pods_sampled == 1
    finally:
        for writer in held:
            writer.close()
        silent.close()
        await silent.wait_closed()
        await stub.stop()


async def test_the_plan_check_runs_once_per_pod_start(http: aiohttp.ClientSession) -> None:
    wire = full_status()["plan"]
    stubs = [await start(), await start(bias=-0.10)]
    try:
        allocation = stubs[0].cache_allocation
        wire.update(
            kvCacheBlocks=allocation.num_gpu_blocks,
            blocksPerSequence=allocation.blocks_per_request,
            maxModelLen=131072,
            maxConcurrency=allocation.max_concurrency,
            kvCacheTokens=allocation.kv_cache_size_tokens,
        )
        plan = Plan.model_validate(wire)
        tracker = DeploymentTracker()
        healthy = await scrape(http, [target(stubs[0], "pod-0")])
        first = tracker.update(plan, healthy.samples, healthy.pods, [], sampled_at="t0")
        assert first.plan_check is not None
        assert first.plan_check.accurate
        assert first.plan_check_changed
        again = tracker.update(plan, healthy.samples, healthy.pods, [], sampled_at="t1")
        assert not again.plan_check_changed
        both = await scrape(http, [target(s, f"pod-{i}") for i, s in enumerate(stubs)])
        short = tracker.update(plan, both.samples, both.pods, [], sampled_at="t2")
        assert short.plan_check_changed
        assert short.plan_check is not None
        assert not short.plan_check.accurate
        assert short.plan_check.observed.pod == "pod-1"
        assert short.plan_check_status is not None
        assert short.plan_check_status.blocks_deviation == pytest.approx(-0.10, abs=0.001)
    finally:
        for stub in stubs:
            await stub.stop()


async def test_a_body_sent_in_pieces_is_read_to_its_end(http: aiohttp.ClientSession) -> None:
    """A /metrics body that arrives in several TCP segments is parsed whole: the scraper read
    only what had arrived (StreamReader.read(n)) and cut the text mid-line before."""
    from aiohttp import web

    stub = await start()
    try:
        async with http.get(f"{stub.url}/metrics") as response:
            text = await response.read()
    finally:
        await stub.stop()
    cut = text.index(b"vllm:cache_config_info{") + len(b"vllm:cache_config_info")

    async def slow(request: web.Request) -> web.StreamResponse:
        answer = web.StreamResponse(headers={"Content-Type": "text/plain; version=0.0.4"})
        await answer.prepare(request)
        await answer.write(text[:cut])
        await asyncio.sleep(0.2)  # the rest of the body comes later
        await answer.write(text[cut:])
        await answer.write_eof()
        return answer

    app = web.Application()
    app.router.add_get("/metrics", slow)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, loopback_host(), 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    try:
        target = ScrapeTarget("uid-1", "pod-0", f"http://{host}:{port}/metrics")
        result = await scrape_pods(http, [target], clock=time.monotonic)
    finally:
        await runner.cleanup()
    assert result.failures == {}
    sample = result.samples["uid-1"]
    assert sample.cache_config is not None
