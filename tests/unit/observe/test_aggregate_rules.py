"""How a deployment's figures are made from its pods' samples, written from the rules (rates and
MTP counts add up over pods, gauges a pod does not publish count as zero, ratios are clamped, a
restarted histogram counts from zero) with hand-made samples: mutation testing found these rules
unchecked wherever only one pod or one draft was ever sampled."""

from __future__ import annotations

import math
from collections.abc import Mapping

import pytest

from nemotron_operator.observe import samples as s
from nemotron_operator.observe.samples import PodSample
from nemotron_operator.observe.throughput import aggregate, histogram_quantile

INF = math.inf


def pod(
    at: float,
    counters: Mapping[str, float] | None = None,
    gauges: Mapping[str, float] | None = None,
    *,
    buckets: tuple[tuple[float, float], ...] = (),
    started: float = 1.0,
) -> PodSample:
    created = {s.GENERATION_TOKENS: started}
    return PodSample(at, counters or {}, created, gauges or {}, ttft_buckets=buckets)


def mtp(drafts: float, draft_tokens: float, accepted: float, **more: float) -> dict[str, float]:
    counters = {s.SPEC_DRAFTS: drafts, s.SPEC_DRAFT_TOKENS: draft_tokens}
    return {**counters, s.SPEC_ACCEPTED_TOKENS: accepted, **more}


def test_rates_and_speculative_decoding_counts_add_up_over_pods() -> None:
    before = {"a": pod(0.0), "b": pod(0.0)}
    a = mtp(4, 12, 6, **{s.GENERATION_TOKENS: 100.0, s.PROMPT_TOKENS: 50.0})
    b = mtp(1, 3, 3, **{s.GENERATION_TOKENS: 300.0, s.PROMPT_TOKENS: 10.0})
    figures = aggregate(before, {"a": pod(10.0, a), "b": pod(10.0, b)})
    assert figures.generation_tokens_per_second == pytest.approx(10.0 + 30.0)
    assert figures.prompt_tokens_per_second == pytest.approx(5.0 + 1.0)
    assert figures.mtp_acceptance_rate == pytest.approx((6 + 3) / (12 + 3))
    assert figures.mtp_mean_accepted_length == pytest.approx(1 + (6 + 3) / (4 + 1))
    assert figures.pods_with_rates == 2


def test_a_sample_no_later_than_the_last_gives_no_rate_and_the_next_pod_still_counts() -> None:
    before = {"a": pod(10.0), "b": pod(0.0)}
    current = {
        "a": pod(10.0, {s.GENERATION_TOKENS: 500.0}),  # the same moment: no interval
        "b": pod(10.0, {s.GENERATION_TOKENS: 70.0}),
    }
    figures = aggregate(before, current)
    assert figures.generation_tokens_per_second == pytest.approx(7.0)
    assert (figures.pods_sampled, figures.pods_with_rates) == (2, 1)


def test_gauges_a_pod_does_not_publish_count_as_zero() -> None:
    current = {
        "a": pod(10.0, gauges={s.KV_CACHE_USAGE: 0.5, s.REQUESTS_RUNNING: 3.0}),
        "b": pod(10.0),
    }
    figures = aggregate({}, current)
    assert figures.kv_cache_usage == pytest.approx(0.25)
    assert figures.requests_running == 3
    assert figures.requests_waiting == 0


def test_usage_is_a_fraction_and_no_pod_uses_nothing() -> None:
    full = {k: pod(10.0, gauges={s.KV_CACHE_USAGE: 1.5}) for k in ("a", "b")}
    assert aggregate({}, full).kv_cache_usage == 1.0
    assert aggregate({}, {}).kv_cache_usage == 0.0


def test_one_draft_is_enough_for_the_mtp_figures_and_the_rate_is_at_most_one() -> None:
    one = aggregate({"a": pod(0.0)}, {"a": pod(10.0, mtp(1, 1, 1))})
    assert one.mtp_acceptance_rate == 1.0
    assert one.mtp_mean_accepted_length == 2.0
    odd = aggregate({"a": pod(0.0)}, {"a": pod(10.0, mtp(2, 4, 5))})  # more accepted than drafted
    assert odd.mtp_acceptance_rate == 1.0


TTFT_BEFORE = ((0.1, 10.0), (1.0, 10.0), (INF, 10.0))


def test_a_restart_seen_through_created_counts_the_histogram_from_zero() -> None:
    # The restarted vLLM's buckets happen to be above the old ones: only `_created` tells.
    after = ((0.1, 10.0), (1.0, 20.0), (INF, 20.0))
    restarted = aggregate(
        {"a": pod(0.0, buckets=TTFT_BEFORE, started=1.0)},
        {"a": pod(10.0, buckets=after, started=5.0)},
    )
    assert restarted.ttft_seconds_p50 == pytest.approx(0.1)  # 10 of 20 at or below 0.1 s
    same = aggregate(
        {"a": pod(0.0, buckets=TTFT_BEFORE)},
        {"a": pod(10.0, buckets=after)},
    )
    assert same.ttft_seconds_p50 == pytest.approx(0.1 + 0.9 * 5 / 10)  # only the 10 new ones


def test_a_bucket_going_down_means_a_restart_even_without_created() -> None:
    after = ((0.1, 2.0), (1.0, 4.0), (INF, 4.0))
    figures = aggregate({"a": pod(0.0, buckets=TTFT_BEFORE)}, {"a": pod(10.0, buckets=after)})
    assert figures.ttft_seconds_p50 == pytest.approx(0.1)  # 2 of 4 at or below 0.1 s


@pytest.mark.parametrize(
    ("quantile", "buckets", "expected"),
    [
        (0.5, [(1.0, 1.0), (INF, 1.0)], 0.5),  # one observation is a histogram
        (0.5, [(INF, 5.0)], None),  # only +Inf: no finite bound to give
        (0.9, [(1.0, 10.0), (INF, 20.0)], 1.0),  # the rank in +Inf: the highest finite bound
        (0.5, [(-1.0, 10.0), (INF, 10.0)], -1.0),  # a lowest bound <= 0 is returned as is
        (1.0, [(1.0, 10.0), (2.0, 10.0), (INF, 10.0)], 1.0),  # the rank on a bucket's edge
    ],
)
def test_histogram_quantile_edges_as_prometheus_defines_them(
    quantile: float, buckets: list[tuple[float, float]], expected: float | None
) -> None:
    assert histogram_quantile(quantile, buckets) == expected


def test_pods_histograms_add_up() -> None:
    before = {"a": pod(0.0), "b": pod(0.0)}
    current = {
        "a": pod(10.0, buckets=((0.1, 1.0), (1.0, 1.0), (INF, 1.0))),
        "b": pod(10.0, buckets=((0.1, 0.0), (1.0, 3.0), (INF, 3.0))),
    }
    # merged: 1 at or below 0.1 s, 4 at or below 1 s; the median (rank 2) is in (0.1, 1]
    assert aggregate(before, current).ttft_seconds_p50 == pytest.approx(0.1 + 0.9 * 1 / 3)
