"""``WorkQueue``: which NemotronDeployments to reconcile next, and when.

Keys are (namespace, name). Adding a key that is already waiting keeps the earlier time, so a
burst of events (every pod of a rollout turning Ready) becomes one reconcile; a key is never
handed to two workers at once, and a key added while it is being reconciled is reconciled again
afterwards. Retries are delayed entries, so no handler ever sleeps.

The due times are a heap (stale entries skipped when they surface), so taking the next key costs
O(log n): a scan of every waiting key per take was 10 % of the operator's CPU with 3,000
deployments converging (docs/benchmarks.md, run 2).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import time
from collections.abc import Callable

Key = tuple[str, str]


class WorkQueue:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._due: dict[Key, float] = {}  # the truth: when each waiting key is due
        self._heap: list[tuple[float, Key]] = []  # (due, key), possibly stale; see _take
        self._processing: set[Key] = set()
        self._changed = asyncio.Event()
        self._not_before: dict[Key, float] = {}
        self._attempts: dict[Key, int] = {}  # failures in a row, for the back-off

    def __len__(self) -> int:
        return len(self._due)

    def add(self, key: Key, delay: float = 0.0) -> None:
        when = max(self._clock() + max(0.0, delay), self._not_before.get(key, 0.0))
        current = self._due.get(key)
        if current is None or when < current:
            self._due[key] = when
            self._push(when, key)
            self._changed.set()

    def _push(self, when: float, key: Key) -> None:
        heapq.heappush(self._heap, (when, key))
        if len(self._heap) > 2 * len(self._due) + 64:  # mostly stale entries: rebuild
            self._heap = [(t, k) for k, t in self._due.items() if k not in self._processing]
            heapq.heapify(self._heap)

    def retry(self, key: Key, delay: float) -> None:
        """Re-queue after a failure, and let nothing (a child's event, the resync) bring the key
        back sooner: a 429's Retry-After is a floor, and a struggling server gets its pause."""
        self._not_before[key] = self._clock() + max(0.0, delay)
        self._due.pop(key, None)
        self.add(key, delay)

    def failed(self, key: Key) -> int:
        """Count a failed attempt; how many have failed in a row (1 for the first)."""
        attempt = self._attempts[key] = self._attempts.get(key, 0) + 1
        return attempt

    def forget(self, key: Key) -> None:
        """After a success: reset the attempt count and the retry floor."""
        self._attempts.pop(key, None)
        self._not_before.pop(key, None)

    async def get(self) -> Key:
        while True:
            taken = self._take()
            if isinstance(taken, tuple):
                return taken
            self._changed.clear()
            # asyncio.timeout, not wait_for, which on 3.11 swallows a cancel that arrives as
            # the event is set: the stopping worker would go on and take the next key.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(taken):
                    await self._changed.wait()

    def _take(self) -> Key | float | None:
        """The earliest due key that no worker holds, if it is due now (it is then being
        processed); otherwise seconds until it is due, or None when no key waits.

        A heap entry is stale when its key's due time has changed or the key was taken; one
        whose key is being processed is dropped too, and ``done`` pushes it again."""
        now = self._clock()
        while self._heap:
            when, key = self._heap[0]
            if self._due.get(key) != when or key in self._processing:
                heapq.heappop(self._heap)
                continue
            if when > now:
                return when - now
            heapq.heappop(self._heap)
            del self._due[key]
            self._processing.add(key)
            return key
        return None

    def oldest_due(self) -> float | None:
        """The monotonic time the longest-waiting due key became due (None: none is due)."""
        now = self._clock()
        due = [t for k, t in self._due.items() if t <= now and k not in self._processing]
        return min(due) if due else None

    def done(self, key: Key) -> None:
        self._processing.discard(key)
        if key in self._due:
            self._push(self._due[key], key)
            self._changed.set()
