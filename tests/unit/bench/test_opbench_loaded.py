"""The loaded singles' loop: every key applied and waited for in turn, and the phase given up
after three timeouts (each costs a minute or more), the rest missing samples."""

from __future__ import annotations

import asyncio
from typing import Any

from opbench.collector import Collector, Key
from opbench.loaded import MAX_TIMEOUTS, loaded_keys, one_at_a_time


def run(stuck: set[str]) -> tuple[dict[str, Any], list[Key]]:
    collector = Collector(client=None)  # type: ignore[arg-type]  # no watch is started
    keys = loaded_keys("loaded-single", 6)
    applied: list[Key] = []
    for key in keys:
        collector.expect(key, [("Service", key[1])])

    async def apply(key: Key) -> None:
        applied.append(key)
        collector.created(key, 10.0)

    async def converged(key: Key) -> bool:
        if key[1] in stuck:
            return False
        track = collector.tracks[key]
        track.plan, track.children = 10.1, 10.2
        return True

    async def pod(key: Key) -> bool:
        collector.tracks[key].pod = 10.5
        return True

    row = asyncio.run(one_at_a_time(collector, keys, apply, [converged, pod], resident=1000))
    return row, applied


def test_every_key_is_applied_and_timed_in_turn() -> None:
    row, applied = run(stuck=set())
    assert applied == loaded_keys("loaded-single", 6)
    assert row["resident"] == 1000
    assert row["n"] == 6
    assert row["converged"]["n"] == 6
    assert row["converged"]["p99_ms"] == 200.0
    assert row["pod_created"]["p50_ms"] == 500.0
    assert "timeouts" not in row


def test_the_phase_stops_after_three_timeouts_the_rest_missing() -> None:
    assert MAX_TIMEOUTS == 3
    row, applied = run(stuck={"ls-0001", "ls-0002", "ls-0003"})
    assert [k[1] for k in applied] == ["ls-0000", "ls-0001", "ls-0002", "ls-0003"]
    assert row["timeouts"] == 3
    assert row["converged"] == {**row["converged"], "n": 1, "missing": 5}
    assert row["pod_created"]["missing"] == 5  # a timed-out one is not waited for its pod


def test_the_operator_is_quiet_only_over_a_whole_interval_under_the_share() -> None:
    from opbench.run import quiet_span

    # 10 % of a CPU every second: never quiet at 5 %.
    busy = [(float(t), 0.1 * t) for t in range(40)]
    assert not quiet_span(busy, 30.0, 0.05)[1]
    # Idle from t = 10 (1 % of a CPU): not quiet until 30 s of it are seen, then quiet.
    idle = [(float(t), 0.5 * min(t, 10) + 0.01 * max(0, t - 10)) for t in range(60)]
    assert not quiet_span(idle[:30], 30.0, 0.05)[1]  # under 30 s seen
    assert not quiet_span(idle[:35], 30.0, 0.05)[1]  # the window still holds busy seconds
    assert quiet_span(idle[:41], 30.0, 0.05)[1]
    # One burst inside the interval (a timer tick scraping every resident deployment: 2 CPU s).
    burst = [(at, cpu + (2.0 if at >= 50 else 0.0)) for at, cpu in idle]
    assert not quiet_span(burst[:56], 30.0, 0.05)[1]
    # Only the samples still needed are kept.
    kept, _ = quiet_span(idle, 30.0, 0.05)
    assert kept[0][0] >= 59 - 31
    assert kept[-1] == idle[-1]
