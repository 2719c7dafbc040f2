"""The work queue's heap hands out the same keys, at the same times, as a scan of every waiting
key would (the queue before the heap), for any sequence of adds, retries, takes and dones."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from nemotron_operator.controller.queue import Key, WorkQueue

KEYS = st.sampled_from([("ai", "a"), ("ai", "b"), ("ml", "a"), ("ml", "c")])
DELAYS = st.sampled_from([0.0, 0.0, 0.5, 1.0, 2.0, 30.0])
STEP = st.one_of(
    st.tuples(st.just("add"), KEYS, DELAYS),
    st.tuples(st.just("retry"), KEYS, DELAYS),
    st.tuples(st.just("take"), KEYS, DELAYS),
    st.tuples(st.just("done"), KEYS, DELAYS),
    st.tuples(st.just("advance"), KEYS, DELAYS),
)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class ScanQueue:
    """The reference: every take scans every waiting key."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.due: dict[Key, float] = {}
        self.processing: set[Key] = set()
        self.not_before: dict[Key, float] = {}

    def add(self, key: Key, delay: float) -> None:
        when = max(self.clock() + delay, self.not_before.get(key, 0.0))
        if key not in self.due or when < self.due[key]:
            self.due[key] = when

    def retry(self, key: Key, delay: float) -> None:
        self.not_before[key] = self.clock() + delay
        self.due.pop(key, None)
        self.add(key, delay)

    def take(self) -> Key | float | None:
        ready = [(t, k) for k, t in self.due.items() if k not in self.processing]
        if not ready:
            return None
        when, key = min(ready)
        if when > self.clock():
            return when - self.clock()
        del self.due[key]
        self.processing.add(key)
        return key

    def done(self, key: Key) -> None:
        self.processing.discard(key)


A, B = ("ai", "a"), ("ai", "b")


@given(st.lists(STEP, max_size=60))
# Re-added while a worker holds it, passed over by a take meanwhile, then done: handed out again.
@example([("add", A, 0.0), ("take", A, 0.0), ("add", A, 0.0), ("take", A, 0.0),
          ("done", A, 0.0), ("take", A, 0.0)])  # fmt: skip
# The earliest key is held: the next one is taken, and the held one after its done.
@example([("add", A, 0.0), ("take", A, 0.0), ("add", A, 0.0), ("add", B, 1.0),
          ("advance", A, 1.0), ("take", A, 0.0), ("done", A, 0.0), ("take", A, 0.0)])  # fmt: skip
def test_the_heap_takes_what_a_scan_of_every_key_takes(steps: list[tuple[str, Key, float]]) -> None:
    clock = Clock()
    queue, reference = WorkQueue(clock), ScanQueue(clock)
    held: list[Key] = []
    for op, key, delay in steps:
        if op == "add":
            queue.add(key, delay)
            reference.add(key, delay)
        elif op == "retry":
            queue.retry(key, delay)
            reference.retry(key, delay)
        elif op == "take":
            taken = queue._take()
            assert taken == reference.take()
            if isinstance(taken, tuple):
                assert taken not in held  # never handed to two workers at once
                held.append(taken)
        elif op == "done" and held:
            finished = held.pop(0)
            queue.done(finished)
            reference.done(finished)
        elif op == "advance":
            clock.now += delay
        assert len(queue) == len(reference.due)
    while isinstance(taken := queue._take(), tuple):  # drain: the same order to the end
        assert taken == reference.take()
    assert taken == reference.take()


def test_many_stale_entries_are_compacted_away() -> None:
    clock = Clock()
    queue = WorkQueue(clock)
    for i in range(1000):
        queue.add(("ai", "a"), delay=1000.0 - i)  # each add is sooner: a new heap entry
    assert len(queue) == 1
    assert len(queue._heap) <= 2 * len(queue) + 64
    clock.now += 1.0
    assert queue._take() == ("ai", "a")
