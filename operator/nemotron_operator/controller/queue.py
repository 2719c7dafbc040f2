"""``WorkQueue``: which NemotronDeployments to reconcile next, and when.

Keys are (namespace, name). Adding a key that is already waiting keeps the earlier time, so a
burst of events (every pod of a rollout turning Ready) becomes one reconcile; a key is never
handed to two workers at once, and a key added while it is being reconciled is reconciled again
afterwards. Retries are delayed entries, so no handler ever sleeps.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

Key = tuple[str, str]


class WorkQueue:
    def __init__(self) -> None:
        self._due: dict[Key, float] = {}
        self._processing: set[Key] = set()
        self._changed = asyncio.Event()
        self._not_before: dict[Key, float] = {}
        self._attempts: dict[Key, int] = {}  # failures in a row, for the back-off

    def __len__(self) -> int:
        return len(self._due)

    def add(self, key: Key, delay: float = 0.0) -> None:
        when = max(time.monotonic() + max(0.0, delay), self._not_before.get(key, 0.0))
        current = self._due.get(key)
        if current is None or when < current:
            self._due[key] = when
            self._changed.set()

    def retry(self, key: Key, delay: float) -> None:
        """Re-queue after a failure, and let nothing (a child's event, the resync) bring the key
        back sooner: a 429's Retry-After is a floor, and a struggling server gets its pause."""
        self._not_before[key] = time.monotonic() + max(0.0, delay)
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
            now = time.monotonic()
            ready = [(t, k) for k, t in self._due.items() if k not in self._processing]
            if ready:
                when, key = min(ready)
                if when <= now:
                    del self._due[key]
                    self._processing.add(key)
                    return key
                timeout: float | None = when - now
            else:
                timeout = None
            self._changed.clear()
            # asyncio.timeout, not wait_for, which on 3.11 swallows a cancel that arrives as
            # the event is set: the stopping worker would go on and take the next key.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._changed.wait()

    def oldest_due(self) -> float | None:
        """The monotonic time the longest-waiting due key became due (None: none is due)."""
        now = time.monotonic()
        due = [t for k, t in self._due.items() if t <= now and k not in self._processing]
        return min(due) if due else None

    def done(self, key: Key) -> None:
        self._processing.discard(key)
        if key in self._due:
            self._changed.set()
