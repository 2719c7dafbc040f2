"""A reconcile that hangs is cut off and retried; the worker goes on with the next key."""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace
from typing import Any

import pytest

from nemotron_operator.controller import runtime
from nemotron_operator.controller.health import HealthState
from nemotron_operator.controller.queue import WorkQueue
from nemotron_operator.controller.reconcile import Outcome


class HangsOnce:
    def __init__(self) -> None:
        self.finished: list[str] = []

    async def reconcile(self, namespace: str, name: str) -> Outcome:
        if name == "stuck":
            await asyncio.Event().wait()  # never set: the hang under test
        self.finished.append(name)
        return Outcome("ok")


async def test_a_hanging_reconcile_is_cut_off_and_the_worker_goes_on(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(runtime, "RECONCILE_TIMEOUT_SECONDS", 0.1)
    controller: Any = object.__new__(runtime.Controller)
    controller.config = SimpleNamespace(retry_max_seconds=300.0)
    controller.queue = WorkQueue()
    controller.reconciler = HangsOnce()
    controller.lease = None
    controller.cache = SimpleNamespace(wait_synced=asyncio.Event().wait)  # never synced
    controller.health = HealthState(stale_after=60.0, expected_watchers=0)
    controller.observability = SimpleNamespace(reconciled=lambda *_: None, forget=lambda *_: None)
    controller.metrics = SimpleNamespace(reconcile_finished=lambda *_: None)
    monkeypatch.setattr(runtime, "CACHE_SYNC_WAIT_SECONDS", 0.01)
    controller.queue.add(("ai", "stuck"))
    controller.queue.add(("ai", "fine"), 0.05)
    worker = asyncio.create_task(controller.worker())
    try:
        for _ in range(200):
            if controller.reconciler.finished:
                break
            await asyncio.sleep(0.01)
    finally:
        worker.cancel()
        await asyncio.gather(worker, return_exceptions=True)
    assert controller.reconciler.finished == ["fine"]
    assert controller.health.last_work is not None
    assert any(
        "did not finish" in r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR
    )
    assert ("ai", "stuck") in controller.queue._due  # retried later, not lost
