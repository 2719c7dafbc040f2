"""A new deployment's first sample, taken by the reconcile that sees its first ready leader, is
a base: the stand-in vLLM's exposition after the operator's behavioural check (tokens, MTP
drafts, TTFT observations) shows rates 0 and no MTP or TTFT figure — the check's requests are
not serving figures — and the same exposition a scrape later moves nothing (no status write
after Ready). Traffic after the base is what the next figures show."""

from __future__ import annotations

import pytest

from nemotron_operator.observe.samples import PodSample, parse_pod_metrics
from nemotron_operator.observe.throughput import aggregate
from nemotron_operator.observe.tracker import DeploymentTracker
from nemotron_sim.vllm.metrics import VllmMetrics


def served(metrics: VllmMetrics, *, requests: int, accepted: tuple[int, ...]) -> None:
    assert metrics.spec_decode is not None
    for count in accepted:  # one draft of 3 tokens each, `count` accepted
        metrics.spec_decode.record_draft(count)
    for _ in range(requests):
        metrics.time_to_first_token.observe(0.03)
    metrics.generation_tokens.inc(30 * requests)
    metrics.mark_changed()


def scrape(metrics: VllmMetrics, at: float) -> dict[str, PodSample]:
    return {"uid-1": parse_pod_metrics(metrics.exposition().decode(), at=at)}


def test_the_checks_traffic_before_ready_is_a_base_and_an_idle_scrape_writes_nothing() -> None:
    metrics = VllmMetrics("model", max_model_len=4096, spec_tokens=3)
    served(metrics, requests=3, accepted=(3, 1))  # the behavioural check
    tracker = DeploymentTracker()
    names = {"uid-1": "pod-0"}
    first = tracker.update(None, scrape(metrics, 5.0), names, [], sampled_at="t1")
    assert first.throughput_changed == ("throughput",)  # complete at Ready
    shown = tracker.shown
    assert shown is not None
    assert (shown.generation_tokens_per_second, shown.prompt_tokens_per_second) == (0.0, 0.0)
    assert shown.pods_sampled == 1
    assert (shown.mtp_acceptance_rate, shown.ttft_seconds_p50) == (None, None)
    idle = tracker.update(None, scrape(metrics, 35.0), names, [], sampled_at="t2")
    assert idle.throughput_changed == ()
    served(metrics, requests=10, accepted=(3, 3, 1, 1))  # users' traffic after Ready
    busy = tracker.update(None, scrape(metrics, 45.0), names, [], sampled_at="t3")
    assert {"generation_tokens_per_second", "mtp_acceptance_rate"} <= set(busy.throughput_changed)
    assert tracker.shown is not None
    assert tracker.shown.generation_tokens_per_second == pytest.approx(300 / 10.0)
    # status rounds fractions to 0.001
    assert tracker.shown.mtp_acceptance_rate == pytest.approx(8 / 12, abs=1e-3)
    assert tracker.shown.mtp_mean_accepted_length == pytest.approx(1 + 8 / 4, abs=1e-3)
    assert tracker.shown.ttft_seconds_p50 is not None
    assert 0.02 < tracker.shown.ttft_seconds_p50 <= 0.04


def test_a_first_sample_has_no_rates_and_a_second_counts_the_interval() -> None:
    metrics = VllmMetrics("model", max_model_len=4096, spec_tokens=3)
    served(metrics, requests=1, accepted=(2,))
    first = scrape(metrics, 40.0)
    figures = aggregate({}, first)
    assert (figures.pods_sampled, figures.pods_with_rates) == (1, 0)
    assert figures.generation_tokens_per_second == 0.0
    served(metrics, requests=10, accepted=())
    figures = aggregate(first, scrape(metrics, 50.0))
    assert figures.pods_with_rates == 1
    assert figures.generation_tokens_per_second == pytest.approx(300 / 10.0)
