"""Throughput of a deployment from two scrapes of each of its pods.

Rates are increases over the interval between a pod's previous and current sample. A counter that
went down, or whose ``_created`` time changed, restarted (the pod's vLLM restarted): its increase
is then its new value, as Prometheus's ``rate()`` treats resets, so a restart never gives a
negative rate. Pods without a previous sample (first scrape, or a new pod) contribute their gauges
but no rates yet. TTFT quantiles come from the increase of the histogram
buckets over the interval, summed over pods and interpolated the way Prometheus's
``histogram_quantile`` does.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from nemotron_operator.observe import samples as s
from nemotron_operator.observe.samples import PodSample


@dataclass(frozen=True)
class ThroughputFigures:
    """A deployment's serving figures; None where the interval had nothing to measure."""

    generation_tokens_per_second: float
    prompt_tokens_per_second: float
    requests_running: int
    requests_waiting: int
    kv_cache_usage: float
    mtp_acceptance_rate: float | None
    mtp_mean_accepted_length: float | None
    ttft_seconds_p50: float | None
    ttft_seconds_p95: float | None
    pods_sampled: int
    pods_with_rates: int
    unresponsive_pods: tuple[str, ...]


def counter_increase(previous: float, current: float, *, restarted: bool = False) -> float:
    """Increase of a counter between two readings; a reset counts from zero."""
    if restarted or current < previous:
        return current
    return current - previous


def _restarted(previous: PodSample, current: PodSample, name: str) -> bool:
    before, after = previous.created.get(name), current.created.get(name)
    return before is not None and after is not None and before != after


def _increase(previous: PodSample, current: PodSample, name: str) -> float:
    return counter_increase(
        previous.counters.get(name, 0.0),
        current.counters.get(name, 0.0),
        restarted=_restarted(previous, current, name),
    )


def _bucket_increases(previous: PodSample, current: PodSample) -> tuple[tuple[float, float], ...]:
    before = dict(previous.ttft_buckets)
    # One reset decision for the whole histogram: any bucket going down means the process
    # restarted (cumulative buckets never shrink otherwise).
    reset = _restarted(previous, current, s.GENERATION_TOKENS) or any(
        count < before.get(bound, 0.0) for bound, count in current.ttft_buckets
    )
    return tuple(
        (bound, count if reset else count - before.get(bound, 0.0))
        for bound, count in current.ttft_buckets
    )


def histogram_quantile(  # noqa: PLR0911 - one return per case of Prometheus's algorithm
    quantile: float, buckets: Sequence[tuple[float, float]]
) -> float | None:
    """Prometheus's ``histogram_quantile`` over cumulative (upper bound, count) buckets.

    Linear interpolation inside the bucket holding the rank; the lowest bucket starts at 0 (for a
    positive upper bound); a rank in the +Inf bucket returns the highest finite bound. None when
    the histogram is empty or has no +Inf bucket.
    """
    ordered = sorted(buckets)
    if not ordered or not math.isinf(ordered[-1][0]):
        return None
    total = ordered[-1][1]
    if total <= 0:
        return None
    rank = quantile * total
    lower_bound, lower_count = 0.0, 0.0
    for index, (bound, count) in enumerate(ordered):
        if count >= rank:
            if math.isinf(bound):
                return ordered[index - 1][0] if index > 0 else None
            if index == 0 and bound <= 0:
                return bound
            if count == lower_count:
                return bound
            return lower_bound + (bound - lower_bound) * (rank - lower_count) / (
                count - lower_count
            )
        lower_bound, lower_count = bound, count
    return None


def _merge_buckets(per_pod: Sequence[Sequence[tuple[float, float]]]) -> list[tuple[float, float]]:
    merged: dict[float, float] = {}
    for buckets in per_pod:
        for bound, count in buckets:
            merged[bound] = merged.get(bound, 0.0) + count
    return sorted(merged.items())


def aggregate(
    previous: Mapping[str, PodSample],
    current: Mapping[str, PodSample],
    unresponsive: Sequence[str] = (),
) -> ThroughputFigures:
    """Figures for a deployment. ``previous`` and ``current`` map a pod key (name and uid: a
    replaced pod is a new key) to its sample; ``unresponsive`` names the pods that did not answer.
    """
    generation = prompt = 0.0
    drafts = draft_tokens = accepted = 0.0
    rate_pods = 0
    histograms = []
    for key, now in current.items():
        before = previous.get(key)
        if before is None or now.at <= before.at:
            continue
        seconds = now.at - before.at
        rate_pods += 1
        generation += _increase(before, now, s.GENERATION_TOKENS) / seconds
        prompt += _increase(before, now, s.PROMPT_TOKENS) / seconds
        drafts += _increase(before, now, s.SPEC_DRAFTS)
        draft_tokens += _increase(before, now, s.SPEC_DRAFT_TOKENS)
        accepted += _increase(before, now, s.SPEC_ACCEPTED_TOKENS)
        histograms.append(_bucket_increases(before, now))
    merged = _merge_buckets(histograms)
    usages = [pod.gauges.get(s.KV_CACHE_USAGE, 0.0) for pod in current.values()]
    return ThroughputFigures(
        generation_tokens_per_second=generation,
        prompt_tokens_per_second=prompt,
        requests_running=round(
            sum(p.gauges.get(s.REQUESTS_RUNNING, 0.0) for p in current.values())
        ),
        requests_waiting=round(
            sum(p.gauges.get(s.REQUESTS_WAITING, 0.0) for p in current.values())
        ),
        kv_cache_usage=min(1.0, max(0.0, sum(usages) / len(usages))) if usages else 0.0,
        mtp_acceptance_rate=min(1.0, accepted / draft_tokens) if draft_tokens > 0 else None,
        mtp_mean_accepted_length=1.0 + accepted / drafts if drafts > 0 else None,
        ttft_seconds_p50=histogram_quantile(0.5, merged),
        ttft_seconds_p95=histogram_quantile(0.95, merged),
        pods_sampled=len(current),
        pods_with_rates=rate_pods,
        unresponsive_pods=tuple(sorted(unresponsive)),
    )
