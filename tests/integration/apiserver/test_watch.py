"""Watch streams: resume by resourceVersion, 410 Gone, selectors, timeouts and bookmarks."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from nemotron_sim.apiserver import SimApiServer
from tests.integration.apiserver.test_semantics import CM, MERGE, call, configmap


async def events(
    http: aiohttp.ClientSession, query: str, count: int, seconds: float = 5.0
) -> list[dict[str, Any]]:
    """The first ``count`` events of a watch (fewer if the stream ends first)."""
    out: list[dict[str, Any]] = []
    async with asyncio.timeout(seconds), http.get(f"{CM}?watch=true&{query}") as resp:
        assert resp.headers["Content-Type"].startswith("application/json")
        async for line in resp.content:
            out.append(json.loads(line))
            if len(out) == count:
                break
    return out


def summary(stream: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["type"], e["object"].get("metadata", {}).get("name", "")) for e in stream]


async def test_watch_resumes_after_a_resource_version(http: aiohttp.ClientSession) -> None:
    _, first = await call(http, "POST", CM, configmap("a"))
    await call(http, "POST", CM, configmap("b"))
    await call(http, "PATCH", f"{CM}/a", {"data": {"k": "2"}}, MERGE)
    since = first["metadata"]["resourceVersion"]
    resumed = await events(http, f"resourceVersion={since}", 2)
    assert summary(resumed) == [("ADDED", "b"), ("MODIFIED", "a")]
    fresh = await events(http, "", 2)  # no resourceVersion: the current state first
    assert summary(fresh) == [("ADDED", "a"), ("ADDED", "b")]


@pytest.fixture
async def small_history() -> AsyncIterator[aiohttp.ClientSession]:
    async with (
        SimApiServer(history_size=5, preinstall_crds=False) as server,
        aiohttp.ClientSession(base_url=server.url) as session,
    ):
        yield session


async def test_a_too_old_resource_version_gets_410_gone(
    small_history: aiohttp.ClientSession,
) -> None:
    _, first = await call(small_history, "POST", CM, configmap("a"))
    for index in range(8):
        await call(small_history, "POST", CM, configmap(f"n{index}"))
    stream = await events(
        small_history, f"resourceVersion={first['metadata']['resourceVersion']}", 1
    )
    assert stream[0]["type"] == "ERROR"
    assert stream[0]["object"]["code"] == 410
    assert stream[0]["object"]["reason"] == "Expired"


async def test_selector_transitions_timeout_and_bookmarks(http: aiohttp.ClientSession) -> None:
    async def change_labels() -> None:
        await asyncio.sleep(0.1)
        await call(http, "POST", CM, configmap("a", tier="big"))
        await call(http, "POST", CM, configmap("other", tier="small"))
        for tier in ("small", "big"):
            await call(http, "PATCH", f"{CM}/a", {"metadata": {"labels": {"tier": tier}}}, MERGE)

    changer = asyncio.create_task(change_labels())
    stream = await events(http, "labelSelector=tier%3Dbig", 3)
    await changer
    assert summary(stream) == [("ADDED", "a"), ("DELETED", "a"), ("ADDED", "a")]

    # The server fixture sends bookmarks every 0.2 s; timeoutSeconds ends the stream.
    loop = asyncio.get_running_loop()
    start = loop.time()
    query = "resourceVersion=0&allowWatchBookmarks=true&timeoutSeconds=1"
    quiet = await events(http, query, 99, seconds=10)
    assert 0.9 <= loop.time() - start < 8.0  # ended by timeoutSeconds, not by the test
    bookmarks = [e for e in quiet if e["type"] == "BOOKMARK"]
    assert bookmarks
    assert int(bookmarks[-1]["object"]["metadata"]["resourceVersion"]) > 0
