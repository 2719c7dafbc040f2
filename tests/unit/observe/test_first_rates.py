"""A fresh pod's first sample has rates: its counters count from zero at their ``_created`` time
(the vLLM's start), over the wall-clock time since — what Prometheus does with created
timestamps."""

from __future__ import annotations

import math

import pytest

from nemotron_operator.observe import samples as s
from nemotron_operator.observe.samples import PodSample, parse_pod_metrics
from nemotron_operator.observe.throughput import aggregate, zero_at_created
from nemotron_sim.vllm.metrics import VllmMetrics

STARTED = 1_700_000_000.0  # Unix seconds


def sample(
    *,
    at: float = 50.0,
    wall: float | None = STARTED + 20.0,
    created: float | None = STARTED,
    generation: float = 0.0,
    prompt: float = 0.0,
) -> PodSample:
    counters = {s.GENERATION_TOKENS: generation, s.PROMPT_TOKENS: prompt}
    created_of = {} if created is None else dict.fromkeys(counters, created)
    return PodSample(at, counters, created_of, {s.REQUESTS_RUNNING: 1.0}, wall=wall)


def test_a_first_sample_counts_from_created_over_the_wall_clock_interval() -> None:
    figures = aggregate({}, {"p": sample(generation=400.0, prompt=100.0)}, from_created=True)
    assert figures.generation_tokens_per_second == pytest.approx(400.0 / 20.0)
    assert figures.prompt_tokens_per_second == pytest.approx(100.0 / 20.0)
    assert figures.pods_with_rates == 1
    assert figures.requests_running == 1


def test_without_from_created_a_first_sample_has_no_rates() -> None:
    figures = aggregate({}, {"p": sample(generation=400.0)})
    assert figures.pods_with_rates == 0
    assert figures.generation_tokens_per_second == 0.0


@pytest.mark.parametrize(
    "fresh",
    [
        sample(created=None, generation=400.0),  # no _created series
        sample(wall=None, generation=400.0),  # the scraper gave no wall time
        sample(created=STARTED + 20.0, generation=400.0),  # created now: no interval
        sample(created=STARTED + 60.0, generation=400.0),  # created in the future (skew)
    ],
)
def test_a_pod_without_a_usable_created_time_is_skipped(fresh: PodSample) -> None:
    assert zero_at_created(fresh) is None
    figures = aggregate({}, {"p": fresh}, from_created=True)
    assert figures.pods_with_rates == 0
    assert figures.pods_sampled == 1


def test_a_pod_with_a_previous_sample_uses_it_not_created() -> None:
    before = sample(at=40.0, wall=STARTED + 10.0, generation=100.0)
    after = sample(at=50.0, wall=STARTED + 20.0, generation=400.0)
    figures = aggregate({"p": before}, {"p": after}, from_created=True)
    assert figures.generation_tokens_per_second == pytest.approx(300.0 / 10.0)


def test_ttft_and_mtp_of_the_first_sample_cover_the_pods_life() -> None:
    metrics = VllmMetrics("model", max_model_len=4096, spec_tokens=3)
    assert metrics.spec_decode is not None
    for accepted in (3, 1):  # 2 drafts of 3 tokens, 4 accepted
        metrics.spec_decode.record_draft(accepted)
    for _ in range(10):
        metrics.time_to_first_token.observe(0.03)
    metrics.generation_tokens.inc(90)
    metrics.mark_changed()
    first = parse_pod_metrics(metrics.exposition().decode(), at=5.0)
    created = first.created[s.GENERATION_TOKENS]
    first = parse_pod_metrics(metrics.exposition().decode(), at=5.0, wall=created + 3.0)
    figures = aggregate({}, {"p": first}, from_created=True)
    assert figures.generation_tokens_per_second == pytest.approx(30.0)
    assert figures.mtp_acceptance_rate == pytest.approx(4 / 6)
    assert figures.mtp_mean_accepted_length == pytest.approx(1 + 4 / 2)
    assert figures.ttft_seconds_p50 is not None
    assert 0.02 < figures.ttft_seconds_p50 <= 0.04
    assert not math.isnan(figures.generation_tokens_per_second)


def test_an_idle_fresh_pod_shows_zero_tokens_per_second_at_once() -> None:
    figures = aggregate({}, {"p": sample()}, from_created=True)
    assert (figures.generation_tokens_per_second, figures.pods_with_rates) == (0.0, 1)
    assert figures.ttft_seconds_p50 is None  # no request yet
