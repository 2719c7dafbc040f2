"""Stopping on SIGTERM/SIGINT: stop taking work, hand the Lease over, exit 0 — in bounded time.

Why not leave it to kopf: ``kopf.operator`` installs its own signal handlers and, on a signal,
stops its root tasks, then waits up to 5 s for every task created after it started and re-raises
any exception one of them ended with (kopf 1.45.2, ``_core/reactor/running.py``,
``run_tasks``). Those are not only kopf's: the scrape tasks ``asyncio.gather`` spawns, the
tasks ``asyncio.wait_for`` spawned in the work queue then, the health server's connections. So a
signal could make the operator exit 1 whenever one of them failed in that window, while our workers
and the Lease renewal (created before kopf, so left alone) went on working until kopf returned.
After it, each of our tasks was awaited in turn and only ``CancelledError`` was expected: a
task that had ended with an exception (or a release that failed with anything but an API
error) raised out of ``run_operator`` before the Lease was released — exit 1 and a successor
standing by for the whole Lease duration, as the benchmark saw (docs/benchmarks.md).

Now the operator takes SIGTERM/SIGINT itself (again once kopf has started, replacing kopf's
handlers) and stops in this order: its own tasks (workers, resync, scrapes, Lease renewal) are
cancelled and awaited for at most ``TASKS_SECONDS``, whatever they end with; the Lease is
released (at most ``RELEASE_SECONDS``); the health/metrics server stops; then kopf is told to
stop through its stop-flag and awaited for at most ``KOPF_SECONDS``. A requested stop exits 0
even if kopf's own stop reports an error (logged).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Awaitable, Collection
from typing import Any

logger = logging.getLogger("nemotron_operator")

TASKS_SECONDS = 5.0
RELEASE_SECONDS = 5.0
SERVER_SECONDS = 2.0
KOPF_SECONDS = 10.0


def handle_signals(requested: asyncio.Event) -> None:
    """SIGTERM and SIGINT set ``requested`` (replacing any earlier handler, kopf's included)."""
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signum, _requested, requested, signum)


def _requested(requested: asyncio.Event, signum: signal.Signals) -> None:
    if not requested.is_set():
        logger.info("%s received: stopping", signum.name)
    requested.set()


async def reclaim_signals_when(ready: asyncio.Event, requested: asyncio.Event) -> None:
    """kopf installs its signal handlers while it starts; take them back once it is ready."""
    await ready.wait()
    handle_signals(requested)


async def first_failure(
    tasks: Collection[asyncio.Task[None]], *, until: Collection[asyncio.Task[Any]]
) -> asyncio.Task[None] | None:
    """Wait until one of ``until`` ends (None) or one of ``tasks`` ends with an error (that
    task). A task of ``tasks`` that returns normally (a watch of a kind the cluster does not
    serve, the signal hand-back) is no failure."""
    pending: set[asyncio.Task[Any]] = {*tasks, *until}
    while True:
        done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        if any(task in until for task in done):
            return None
        for task in done:
            if not task.cancelled() and task.exception() is not None:
                return task
        if not pending:
            return None


async def stop_tasks(tasks: Collection[asyncio.Task[None]], seconds: float) -> None:
    """Cancel and await ``tasks`` for at most ``seconds``; what they ended with is logged, never
    raised (a stop must not fail because a task had failed)."""
    for task in tasks:
        task.cancel()
    if not tasks:
        return
    done, pending = await asyncio.wait(tasks, timeout=seconds)
    for task in done:
        if not task.cancelled() and task.exception() is not None:
            logger.warning(
                "task %s had stopped with an error", task.get_name(), exc_info=task.exception()
            )
    if pending:
        logger.warning(
            "tasks still stopping after %.0f s, left behind: %s",
            seconds,
            ", ".join(sorted(task.get_name() for task in pending)),
        )


async def bounded(step: Awaitable[object], seconds: float, what: str) -> bool:
    """Await one step of the stop for at most ``seconds``; False (logged) if it failed."""
    try:
        async with asyncio.timeout(seconds):  # not wait_for: it can swallow a cancel on 3.11
            await step
    except TimeoutError:
        logger.warning("%s: not done after %.0f s; going on", what, seconds)
        return False
    except Exception:
        logger.warning("%s failed; going on", what, exc_info=True)
        return False
    return True


async def stop_kopf(kopf_task: asyncio.Task[None], seconds: float) -> bool:
    """Await kopf after its stop-flag is set, for at most ``seconds`` (then cancel it); False if
    it ended with an error it had not already reported or did not stop in time."""
    if kopf_task.done():
        return True  # its outcome was read when it stopped on its own
    done, _ = await asyncio.wait({kopf_task}, timeout=seconds)
    if not done:
        logger.warning("kopf did not stop within %.0f s; cancelling it", seconds)
        kopf_task.cancel()
        await asyncio.wait({kopf_task}, timeout=SERVER_SECONDS)
        return False
    if kopf_task.cancelled() or kopf_task.exception() is None:
        return True
    logger.warning("kopf's stop reported an error", exc_info=kopf_task.exception())
    return False
