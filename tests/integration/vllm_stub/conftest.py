"""Fixtures for the stand-in vLLM: instances on private loopback addresses, always stopped."""

from __future__ import annotations

import itertools
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from nemotron_sim.vllm import StubVllm, Timing

MODEL = "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16"
# A second octet per test process keeps parallel runs on this machine off each other's sockets.
_PROCESS_OCTET = 100 + os.getpid() % 100
_hosts = itertools.count(1)


def loopback_host() -> str:
    """A fresh address in 127.0.0.0/8 (Linux routes the whole block to lo)."""
    n = next(_hosts)
    return f"127.{_PROCESS_OCTET}.{n // 250}.{n % 250 + 1}"


StartStub = Callable[..., Awaitable[StubVllm]]


@pytest.fixture
async def start_stub() -> AsyncIterator[StartStub]:
    """`await start_stub(*flags, load_seconds=0, timing=None, port=0, env=None)` -> a serving
    StubVllm."""
    started: list[StubVllm] = []

    async def start(
        *flags: str,
        load_seconds: float = 0.0,
        timing: Timing | None = None,
        port: int = 0,
        host: str | None = None,
        env: dict[str, str] | None = None,
    ) -> StubVllm:
        stub = StubVllm(
            ["vllm", "serve", MODEL, *flags],
            load_seconds=load_seconds,
            timing=timing or Timing(step_seconds=0.0, prefill_seconds_per_token=0.0),
            env=env,
        )
        started.append(stub)
        await stub.start(host or loopback_host(), port)
        return stub

    yield start
    for stub in started:
        await stub.stop()


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    timeout = aiohttp.ClientTimeout(total=10)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        yield session


class Scrape:
    """One /metrics answer: sample value by name and (optionally) labels."""

    def __init__(self, text: str) -> None:
        self.samples = [
            sample for family in text_string_to_metric_families(text) for sample in family.samples
        ]

    def value(self, name: str, **labels: str) -> float:
        found = [
            sample.value
            for sample in self.samples
            if sample.name == name and labels.items() <= sample.labels.items()
        ]
        assert len(found) == 1, f"{name}{labels}: {len(found)} samples"
        return float(found[0])

    def names(self) -> set[str]:
        return {sample.name for sample in self.samples}


async def scrape(http: aiohttp.ClientSession, stub: StubVllm) -> Scrape:
    async with http.get(f"{stub.url}/metrics") as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain")
        return Scrape(await response.text())


async def post(
    http: aiohttp.ClientSession, stub: StubVllm, path: str, body: Any
) -> tuple[int, Any]:
    async with http.post(f"{stub.url}{path}", json=body) as response:
        return response.status, await response.json()


def sse_events(text: str) -> Iterator[str]:
    """The `data:` payloads of a server-sent-events body, in order."""
    for block in text.split("\n\n"):
        if block.strip():
            assert block.startswith("data: "), block
            yield block[len("data: ") :]
