"""What the per-pod parts share: at most one background task per pod, and the back-off after
failures (the behavioural check and the adapter sync; the scraper's ticks are its own timer)."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Hashable
from typing import Any


class PodTasks:
    """The running task of each pod, by a key that names the pod (its uid, its container's
    start); a task removes itself when it ends, whatever it ended with."""

    def __init__(self) -> None:
        self._running: dict[Hashable, asyncio.Task[None]] = {}

    def __contains__(self, pod_key: Hashable) -> bool:
        return pod_key in self._running

    def __len__(self) -> int:
        return len(self._running)

    async def settled(self) -> None:
        """Wait for every task running now (they record their own outcome)."""
        await asyncio.gather(*self._running.values(), return_exceptions=True)

    def start(self, pod_key: Hashable, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._running[pod_key] = task
        task.add_done_callback(lambda _: self._running.pop(pod_key, None))


def backoff(failures: int, first: float, cap: float) -> float:
    """Seconds before the next try after ``failures`` (≥ 1) in a row: ``first``, doubled on
    each failure, at most ``cap``."""
    return min(cap, first * 2.0 ** (failures - 1))
