"""The stand-in's /metrics move with traffic; instances are independent; workers serve nothing."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable

import aiohttp
import pytest

from nemotron_sim.vllm import StubVllm, Timing
from tests.integration.vllm_stub.conftest import (
    MODEL,
    StartStub,
    loopback_host,
    post,
    scrape,
)

pytestmark = pytest.mark.integration

CHAT = "/v1/chat/completions"
HELLO = {"messages": [{"role": "user", "content": "Hello there"}], "max_tokens": 12}
MTP = '{"method": "mtp", "num_speculative_tokens": 3}'
WAIT_SECONDS = 3.0
SLOW = Timing(step_seconds=0.03, prefill_seconds_per_token=0.0)


async def wait_for(condition: Callable[[], Awaitable[bool]], what: str) -> None:
    """Poll an async predicate for at most WAIT_SECONDS."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT_SECONDS
    while not await condition():
        assert loop.time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.01)


async def test_counters_and_histograms_move_with_served_requests(
    start_stub: StartStub, http: aiohttp.ClientSession
) -> None:
    stub = await start_stub("--served-model-name", "super")
    before = await scrape(http, stub)
    labels = {"model_name": "super", "engine": "0"}
    assert before.value("vllm:prompt_tokens_total", **labels) == 0
    _, first = await post(http, stub, CHAT, HELLO)
    _, second = await post(http, stub, CHAT, {**HELLO, "max_tokens": 500})
    after = await scrape(http, stub)
    prompt = first["usage"]["prompt_tokens"] + second["usage"]["prompt_tokens"]
    generated = first["usage"]["completion_tokens"] + second["usage"]["completion_tokens"]
    assert after.value("vllm:prompt_tokens_total", **labels) == prompt
    assert after.value("vllm:generation_tokens_total", **labels) == generated
    assert after.value("vllm:request_success_total", finished_reason="length") == 1
    assert after.value("vllm:request_success_total", finished_reason="stop") == 1
    for histogram in (
        "vllm:time_to_first_token_seconds",
        "vllm:e2e_request_latency_seconds",
        "vllm:request_queue_time_seconds",
        "vllm:request_prompt_tokens",
        "vllm:request_generation_tokens",
    ):
        assert after.value(f"{histogram}_count", **labels) == 2, histogram
    assert after.value("vllm:request_generation_tokens_sum", **labels) == generated
    assert after.value("vllm:inter_token_latency_seconds_count", **labels) == generated - 2
    assert after.value("vllm:num_requests_running", **labels) == 0
    assert after.value("vllm:kv_cache_usage_perc", **labels) == 0
    assert not any(name.startswith("vllm:spec_decode") for name in after.names())


async def test_mtp_drafts_are_counted_and_speed_up_decoding(
    start_stub: StartStub, http: aiohttp.ClientSession
) -> None:
    stub = await start_stub("--speculative-config", MTP)
    _, answer = await post(http, stub, CHAT, {**HELLO, "max_tokens": 400, "ignore_eos": True})
    metrics = await scrape(http, stub)
    drafts = metrics.value("vllm:spec_decode_num_drafts_total")
    draft_tokens = metrics.value("vllm:spec_decode_num_draft_tokens_total")
    accepted = metrics.value("vllm:spec_decode_num_accepted_tokens_total")
    assert draft_tokens == 3 * drafts
    assert 0 < accepted < draft_tokens
    # Every step emits one token plus the accepted drafts (the last step may be cut short).
    assert drafts < answer["usage"]["completion_tokens"] <= drafts + accepted
    per_position = [
        metrics.value("vllm:spec_decode_num_accepted_tokens_per_pos_total", position=str(p))
        for p in range(3)
    ]
    assert sum(per_position) == accepted
    assert per_position == sorted(per_position, reverse=True)


async def test_running_waiting_and_kv_usage_move_while_requests_are_in_flight(
    start_stub: StartStub, http: aiohttp.ClientSession
) -> None:
    stub = await start_stub("--max-num-seqs", "1", "--max-model-len", "1000", timing=SLOW)
    body = {**HELLO, "max_tokens": 6, "ignore_eos": True}
    requests = [asyncio.create_task(post(http, stub, CHAT, body)) for _ in range(2)]

    async def one_running_one_waiting() -> bool:
        metrics = await scrape(http, stub)
        return (
            metrics.value("vllm:num_requests_running") == 1
            and metrics.value("vllm:num_requests_waiting") == 1
        )

    await wait_for(one_running_one_waiting, "one running and one waiting request")
    assert (await scrape(http, stub)).value("vllm:kv_cache_usage_perc") > 0
    assert [status for status, _ in await asyncio.gather(*requests)] == [200, 200]
    settled = await scrape(http, stub)
    assert settled.value("vllm:num_requests_running") == 0
    assert settled.value("vllm:num_requests_waiting") == 0
    assert settled.value("vllm:kv_cache_usage_perc") == 0
    assert settled.value("vllm:request_queue_time_seconds_sum") > 0


async def test_a_client_leaving_mid_stream_counts_an_abort_and_frees_the_slot(
    start_stub: StartStub, http: aiohttp.ClientSession
) -> None:
    stub = await start_stub("--max-num-seqs", "1", timing=SLOW)
    body = {**HELLO, "max_tokens": 1000, "ignore_eos": True, "stream": True}
    async with http.post(f"{stub.url}{CHAT}", json=body) as response:
        await response.content.readuntil(b"\n\n")  # the role chunk
        await response.content.readuntil(b"\n\n")  # the first token
    # The connection closed above; the stand-in notices on its next write.

    async def aborted() -> bool:
        metrics = await scrape(http, stub)
        return metrics.value("vllm:request_success_total", finished_reason="abort") == 1

    await wait_for(aborted, "the abandoned request to be counted as aborted")
    status, _ = await post(http, stub, CHAT, {**HELLO, "max_tokens": 2})
    assert status == 200
    assert (await scrape(http, stub)).value("vllm:num_requests_running") == 0


async def test_instances_on_different_loopback_addresses_keep_their_own_metrics(
    start_stub: StartStub, http: aiohttp.ClientSession
) -> None:
    first = await start_stub("--served-model-name", "a")
    # The same port on another address: pod IPs differ, the port is always the same.
    second = await start_stub("--served-model-name", "b", port=first.port or 0)
    assert first.host != second.host
    assert first.port == second.port
    await post(http, first, CHAT, {**HELLO, "model": "a"})
    await post(http, first, CHAT, {**HELLO, "model": "a"})
    status, _ = await post(http, second, CHAT, {**HELLO, "model": "a"})
    assert status == 404  # each instance serves only its own name
    a, b = await scrape(http, first), await scrape(http, second)
    assert a.value("vllm:request_success_total", model_name="a", finished_reason="length") == 2
    assert b.value("vllm:request_success_total", model_name="b", finished_reason="length") == 0
    assert b.value("vllm:prompt_tokens_total", model_name="b") == 0


@pytest.mark.parametrize(
    "flags",
    [
        ("--nnodes", "2", "--node-rank", "1", "--master-addr", "leader", "--headless"),
        ("--nnodes", "2", "--node-rank", "1", "--master-addr", "leader"),
    ],
)
async def test_worker_ranks_run_without_an_api_server(flags: tuple[str, ...]) -> None:
    host = loopback_host()
    with socket.socket() as probe:
        probe.bind((host, 0))
        port = probe.getsockname()[1]
    worker = StubVllm(["vllm", "serve", MODEL, *flags])
    assert worker.is_worker
    await worker.start(host, port)
    try:
        assert worker.running
        with (
            pytest.raises(ConnectionRefusedError),
            socket.create_connection((host, port), timeout=1),
        ):
            pass
        with pytest.raises(RuntimeError, match="worker"):
            _ = worker.url
    finally:
        await worker.stop()
    assert not worker.running


async def test_stop_closes_the_socket_and_is_idempotent(start_stub: StartStub) -> None:
    stub = await start_stub()
    assert stub.host is not None
    assert stub.port is not None
    host, port = stub.host, stub.port
    await stub.stop()
    await stub.stop()
    with pytest.raises(ConnectionRefusedError), socket.create_connection((host, port), timeout=1):
        pass
