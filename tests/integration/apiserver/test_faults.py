"""Injected faults fire before any state change, from Python and over HTTP."""

from __future__ import annotations

import asyncio
import json

import aiohttp
import pytest

from nemotron_sim.apiserver import Fault, SimApiServer
from tests.integration.apiserver.test_semantics import CM, MERGE, call, configmap
from tests.integration.apiserver.test_watch import events


async def test_a_faulted_post_leaves_nothing_stored(
    server: SimApiServer, http: aiohttp.ClientSession
) -> None:
    server.faults.add(Fault(method="POST", path="/configmaps", status=500, count=2))
    rv = server.store.resource_version
    statuses = [(await call(http, "POST", CM, configmap("a")))[0] for _ in range(3)]
    assert statuses == [500, 500, 201]
    assert server.store.resource_version == rv + 1  # one write: the third attempt
    posts = [p for m, p, _ in server.handler.journal if m == "POST"]
    assert len(posts) == 3


async def test_faults_over_http_with_retry_after_and_delay(
    server: SimApiServer, http: aiohttp.ClientSession
) -> None:
    async with http.post(
        "/_sim/faults", json={"method": "PATCH", "status": 429, "retry_after": 7, "count": 1}
    ) as resp:
        assert resp.status == 201
    async with http.get("/_sim/faults") as resp:
        listed = await resp.json()
    assert [f["status"] for f in listed] == [429]
    await call(http, "POST", CM, configmap("a"))
    async with http.patch(
        f"{CM}/a", data=json.dumps({"data": {"k": "x"}}), headers={"Content-Type": MERGE}
    ) as resp:
        assert resp.status == 429
        assert resp.headers["Retry-After"] == "7"
    _, stored = await call(http, "GET", f"{CM}/a")
    assert stored["data"] == {"k": "v"}

    async with http.post("/_sim/faults", json={"method": "GET", "delay": 0.3}) as resp:
        assert resp.status == 201
    loop = asyncio.get_running_loop()
    start = loop.time()
    assert (await call(http, "GET", f"{CM}/a"))[0] == 200
    assert loop.time() - start >= 0.3
    async with http.delete("/_sim/faults") as resp:
        assert resp.status == 200
    assert server.faults.active() == []


async def test_a_reset_connection_stores_nothing(
    server: SimApiServer, http: aiohttp.ClientSession
) -> None:
    server.faults.add(Fault(method="POST", reset=True))
    with pytest.raises(aiohttp.ClientError):
        await call(http, "POST", CM, configmap("a"))
    assert (await call(http, "GET", f"{CM}/a"))[0] == 404


async def test_an_outage_window_refuses_everything_and_cuts_watches(
    server: SimApiServer, http: aiohttp.ClientSession
) -> None:
    async def watch_until_cut() -> str:
        try:
            await events(http, "resourceVersion=0", 99, seconds=5)
        except aiohttp.ClientError:
            return "cut"
        return "ended"

    watcher = asyncio.create_task(watch_until_cut())
    await asyncio.sleep(0.2)
    server.faults.unavailable(30)
    assert await watcher == "cut"
    assert (await call(http, "POST", CM, configmap("a")))[0] == 503
    assert (await call(http, "GET", "/version"))[0] == 503
    server.faults.clear()
    assert (await call(http, "POST", CM, configmap("a")))[0] == 201

    short = server.faults.unavailable(0.2)
    assert server.faults.active() == [short]
    await asyncio.sleep(0.3)
    assert server.faults.active() == []  # the window ends by itself


async def test_dropped_and_stalled_watch_streams(
    server: SimApiServer, http: aiohttp.ClientSession
) -> None:
    server.faults.add(Fault(method="WATCH", watch_drop_after=0.3))
    with pytest.raises(aiohttp.ClientError):
        await events(http, "resourceVersion=0", 99, seconds=5)

    server.faults.add(Fault(method="WATCH", watch_stall=1.0))
    loop = asyncio.get_running_loop()

    async def create_soon() -> None:
        await asyncio.sleep(0.1)
        await call(http, "POST", CM, configmap("late"))

    creator = asyncio.create_task(create_soon())
    rv = server.store.resource_version
    start = loop.time()
    stream = await events(http, f"resourceVersion={rv}", 1)
    await creator
    assert stream[0]["object"]["metadata"]["name"] == "late"
    assert loop.time() - start >= 0.9  # held back by the stall, then delivered
