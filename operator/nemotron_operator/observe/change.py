"""When a new throughput figure is worth a status write.

A busy deployment's figures move on every scrape; rewriting status each tick would cost an API
write per deployment per interval and wake every watcher. A figure counts as changed when it moved
by more than its tolerance: ``|new − old| > max(absolute, relative × |old|)``. Appearing or
disappearing (None ↔ a value), and a change in which pods answered, always count. ``sampledAt``
never counts: it says when the figures shown were measured.

| figure | absolute | relative |
|---|---|---|
| generation, prompt tokens/s | 1 token/s | 10 % |
| requests running, waiting | 0 (any change of a count…) | 10 % (…above 10) |
| KV cache usage | 0.05 | — |
| MTP acceptance rate | 0.02 | — |
| MTP mean accepted length | 0.05 | — |
| TTFT p50, p95 | 10 ms | 10 % |

Figures are rounded for status (tokens/s to 0.1, fractions to 0.001, seconds to 0.1 ms) so that a
write shows stable, readable numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

from nemotron_operator.api.status import MAX_LISTED_PODS, Throughput
from nemotron_operator.observe.throughput import ThroughputFigures


@dataclass(frozen=True)
class Tolerance:
    absolute: float
    relative: float = 0.0


RATE = Tolerance(absolute=1.0, relative=0.10)
COUNT = Tolerance(absolute=0.0, relative=0.10)
TTFT = Tolerance(absolute=0.010, relative=0.10)
TOLERANCES: dict[str, Tolerance] = {
    "generation_tokens_per_second": RATE,
    "prompt_tokens_per_second": RATE,
    "requests_running": COUNT,
    "requests_waiting": COUNT,
    "kv_cache_usage": Tolerance(absolute=0.05),
    "mtp_acceptance_rate": Tolerance(absolute=0.02),
    "mtp_mean_accepted_length": Tolerance(absolute=0.05),
    "ttft_seconds_p50": TTFT,
    "ttft_seconds_p95": TTFT,
}
_ALWAYS = ("pods_sampled", "unresponsive_pods")


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def to_status(figures: ThroughputFigures, sampled_at: str) -> Throughput:
    """The figures as ``status.throughput``, rounded."""
    return Throughput(
        generation_tokens_per_second=round(figures.generation_tokens_per_second, 1),
        prompt_tokens_per_second=round(figures.prompt_tokens_per_second, 1),
        requests_running=figures.requests_running,
        requests_waiting=figures.requests_waiting,
        kv_cache_usage=round(figures.kv_cache_usage, 3),
        mtp_acceptance_rate=_round(figures.mtp_acceptance_rate, 3),
        mtp_mean_accepted_length=_round(figures.mtp_mean_accepted_length, 3),
        ttft_seconds_p50=_round(figures.ttft_seconds_p50, 4),
        ttft_seconds_p95=_round(figures.ttft_seconds_p95, 4),
        sampled_at=sampled_at,
        pods_sampled=figures.pods_sampled,
        unresponsive_pods=list(figures.unresponsive_pods[:MAX_LISTED_PODS]),
    )


def moved(old: float | None, new: float | None, tolerance: Tolerance) -> bool:
    if old is None or new is None:
        return (old is None) != (new is None)
    return abs(new - old) > max(tolerance.absolute, tolerance.relative * abs(old))


def changed_figures(old: Throughput | None, new: Throughput) -> tuple[str, ...]:
    """Names of the figures that changed meaningfully; empty: leave status as it is."""
    if old is None:
        return ("throughput",)
    changed = [
        name
        for name, tolerance in TOLERANCES.items()
        if moved(getattr(old, name), getattr(new, name), tolerance)
    ]
    changed.extend(name for name in _ALWAYS if getattr(old, name) != getattr(new, name))
    return tuple(changed)


def meaningful_change(old: Throughput | None, new: Throughput) -> bool:
    return bool(changed_figures(old, new))
