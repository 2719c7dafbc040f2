"""The steps of the operator's stop: a task that had failed or that ignores cancellation, and a
step that fails or hangs, neither raise nor hold the stop up beyond its bound."""

from __future__ import annotations

import asyncio

import pytest

from nemotron_operator.controller.runtime import shutdown


async def _fails() -> None:
    raise KeyError("spec")


async def _ignores_cancellation(until: asyncio.Event) -> None:
    while not until.is_set():
        try:
            await until.wait()
        except asyncio.CancelledError:
            continue


async def test_stop_tasks_survives_a_failed_and_a_stuck_task(
    caplog: pytest.LogCaptureFixture,
) -> None:
    failed = asyncio.create_task(_fails(), name="resync")
    release = asyncio.Event()
    stuck = asyncio.create_task(_ignores_cancellation(release), name="worker-0")
    idle = asyncio.create_task(asyncio.Event().wait(), name="lease")
    await asyncio.sleep(0)
    await shutdown.stop_tasks([failed, stuck, idle], 0.05)
    assert idle.cancelled()
    assert not stuck.done()
    assert "task resync had stopped with an error" in caplog.text
    assert "left behind: worker-0" in caplog.text
    release.set()
    await stuck


async def test_bounded_reports_a_failed_or_slow_step_instead_of_raising() -> None:
    assert await shutdown.bounded(asyncio.sleep(0), 1.0, "quick")
    assert not await shutdown.bounded(_fails(), 1.0, "failing")
    assert not await shutdown.bounded(asyncio.Event().wait(), 0.05, "slow")  # never ends


async def test_stop_kopf_reads_its_outcome() -> None:
    async def stops_with(error: Exception | None) -> None:
        if error is not None:
            raise error

    clean = asyncio.create_task(stops_with(None))
    assert await shutdown.stop_kopf(clean, 1.0)
    failing = asyncio.create_task(stops_with(RuntimeError("hung task failed")))
    assert not await shutdown.stop_kopf(failing, 1.0)
    hanging = asyncio.create_task(asyncio.Event().wait())
    assert not await shutdown.stop_kopf(hanging, 0.05)
    assert hanging.cancelled()


async def _returns() -> None:
    await asyncio.sleep(0)


async def test_a_failed_task_is_reported_and_one_that_returns_is_not() -> None:
    kopf = asyncio.create_task(asyncio.Event().wait(), name="kopf")
    finished = asyncio.create_task(_returns(), name="inventory resourceslices")  # not served
    worker = asyncio.create_task(_fails(), name="worker-3")
    idle = asyncio.create_task(asyncio.Event().wait(), name="resync")
    failed = await asyncio.wait_for(
        shutdown.first_failure([finished, worker, idle], until={kopf}), 1.0
    )
    assert failed is worker
    assert finished.done()
    assert not kopf.done()
    for task in (kopf, idle):
        task.cancel()


async def test_the_stop_ends_the_wait_without_a_failure() -> None:
    stop = asyncio.Event()
    requested = asyncio.create_task(stop.wait(), name="stop-requested")
    idle = asyncio.create_task(asyncio.Event().wait(), name="worker-0")
    finished = asyncio.create_task(_returns(), name="signals")
    waiting = asyncio.create_task(shutdown.first_failure([idle, finished], until={requested}))
    for _ in range(10):  # let every task run to where it waits
        await asyncio.sleep(0)
    assert finished.done()
    assert not waiting.done()  # a task that returned normally does not end the wait
    stop.set()
    assert await asyncio.wait_for(waiting, 1.0) is None
    idle.cancel()
