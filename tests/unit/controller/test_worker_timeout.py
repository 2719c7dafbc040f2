"""A reconcile that hangs is cut off and retried; the worker goes on with the next key. A worker
that is cancelled stops, even when the cancel arrives as its reconcile or its wait finishes."""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace
from typing import Any

import pytest

from nemotron_operator.controller.queue import WorkQueue
from nemotron_operator.controller.reconcile.reconciler import Outcome
from nemotron_operator.controller.runtime import controller as runtime
from nemotron_operator.controller.runtime.health import HealthState


class HangsOnce:
    def __init__(self) -> None:
        self.finished: list[str] = []
        self.done = asyncio.Event()  # set when a reconcile finishes

    async def reconcile(self, namespace: str, name: str) -> Outcome:
        if name == "stuck":
            await asyncio.Event().wait()  # never set: the hang under test
        self.finished.append(name)
        self.done.set()
        return Outcome("ok")


def bare_controller(reconciler: object) -> Any:
    """A Controller with only what its worker touches."""
    controller: Any = object.__new__(runtime.Controller)
    controller.config = SimpleNamespace(retry_max_seconds=300.0)
    controller.queue = WorkQueue()
    controller.reconciler = reconciler
    controller.lease = None
    controller.cache = SimpleNamespace(wait_synced=asyncio.Event().wait)  # never synced
    controller.health = HealthState(stale_after=60.0, expected_watchers=0)
    controller.series = SimpleNamespace(reconciled=lambda *_: None, forget=lambda *_: None)
    controller.metrics = SimpleNamespace(reconcile_finished=lambda *_: None)
    return controller


async def test_a_hanging_reconcile_is_cut_off_and_the_worker_goes_on(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(runtime, "RECONCILE_TIMEOUT_SECONDS", 0.1)
    monkeypatch.setattr(runtime, "CACHE_SYNC_WAIT_SECONDS", 0.01)
    controller = bare_controller(HangsOnce())
    controller.queue.add(("ai", "stuck"))
    controller.queue.add(("ai", "fine"), 0.05)
    worker = asyncio.create_task(controller.worker())
    try:  # the stuck reconcile is cut off after 0.1 s, then "fine" runs
        await asyncio.wait_for(controller.reconciler.done.wait(), timeout=5.0)
    finally:
        worker.cancel()
        stopped, _ = await asyncio.wait([worker], timeout=5.0)
    assert stopped == {worker}, "the worker did not stop when cancelled"
    assert controller.reconciler.finished == ["fine"]
    assert controller.health.last_work is not None
    assert any(
        "did not finish" in r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR
    )
    assert ("ai", "stuck") in controller.queue._due  # retried later, not lost


class CancelsItsWorker:
    """Finishes its reconcile in the same loop turn as the worker is cancelled: the race in
    which Python 3.11's asyncio.wait_for returns the result and drops the cancel."""

    def __init__(self) -> None:
        self.worker: asyncio.Task[None] | None = None
        self.finished: list[str] = []

    async def reconcile(self, namespace: str, name: str) -> Outcome:
        assert self.worker is not None
        asyncio.get_running_loop().call_soon(self.worker.cancel)
        self.finished.append(name)
        return Outcome("ok")


async def test_a_worker_cancelled_as_its_reconcile_finishes_stops(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(runtime, "CACHE_SYNC_WAIT_SECONDS", 0.01)
    reconciler = CancelsItsWorker()
    controller = bare_controller(reconciler)
    controller.queue.add(("ai", "last"))
    controller.queue.add(("ai", "later"), 300.0)  # keeps the queue's wait from ending by itself
    reconciler.worker = worker = asyncio.create_task(controller.worker())
    done, _ = await asyncio.wait([worker], timeout=5.0)
    worker.cancel()  # the cleanup if it did not stop; a no-op if it did
    assert done == {worker}, "the cancel was swallowed: the worker went on waiting for work"
    assert worker.cancelled()
    assert reconciler.finished == ["last"]


async def test_a_get_cancelled_as_a_key_arrives_is_cancelled() -> None:
    queue = WorkQueue()
    queue.add(("ai", "later"), 300.0)  # the getter's wait has a timeout: the racy path
    getter = asyncio.create_task(queue.get())
    await asyncio.sleep(0)  # the getter now waits for a change
    queue.add(("ai", "new"))  # wakes the getter...
    getter.cancel()  # ...in the same loop turn as it is told to stop
    done, _ = await asyncio.wait([getter], timeout=5.0)
    assert done == {getter}
    assert getter.cancelled(), "get() returned a key after its caller was cancelled"
    assert ("ai", "new") in queue._due  # the key stays for whoever gets next
