"""The tracker's first sample is a base: a new deployment shows its figures from it (rates 0: it
has served nothing but the operator's own check) and an idle second sample writes nothing; with
requests in flight, or after an operator restart, status keeps what it shows until the second
sample gives rates."""

from __future__ import annotations

import pytest

from nemotron_operator.observe import samples as s
from nemotron_operator.observe.change import to_status
from nemotron_operator.observe.samples import PodSample
from nemotron_operator.observe.throughput import aggregate
from nemotron_operator.observe.tracker import DeploymentTracker, TrackerUpdate

STARTED = 1_700_000_000.0


def sample(at: float, generation: float, *, running: float = 0.0) -> PodSample:
    return PodSample(
        at,
        {s.GENERATION_TOKENS: generation},
        {s.GENERATION_TOKENS: STARTED},
        {s.REQUESTS_RUNNING: running},
    )


def update(tracker: DeploymentTracker, pod: PodSample, stamp: str) -> TrackerUpdate:
    return tracker.update(None, {"uid-1": pod}, {"uid-1": "pod-0"}, [], sampled_at=stamp)


def test_a_new_deployment_shows_its_first_sample_and_an_idle_second_writes_nothing() -> None:
    tracker = DeploymentTracker()
    first = update(tracker, sample(100.0, 0.0), "t1")
    assert first.throughput_changed == ("throughput",)
    assert tracker.shown is not None
    assert tracker.shown.generation_tokens_per_second == 0.0
    assert tracker.shown.pods_sampled == 1
    assert tracker.shown.sampled_at == "t1"
    second = update(tracker, sample(130.0, 0.0), "t2")
    assert second.throughput_changed == ()
    assert tracker.shown.sampled_at == "t1"  # nothing moved: status stays as written
    assert second.throughput.sampled_at == "t1"  # ...and the update hands back what it shows


def test_before_anything_is_shown_the_update_hands_back_the_fresh_figures() -> None:
    tracker = DeploymentTracker()
    first = tracker.update(None, {}, {}, ["pod-0"], sampled_at="t0")  # one miss: not shown
    assert tracker.shown is None
    assert first.throughput.sampled_at == "t0"
    assert first.throughput.unresponsive_pods == ["pod-0"]


def test_a_new_pod_answering_with_requests_in_flight_shows_rates_from_its_second_sample() -> None:
    tracker = DeploymentTracker()
    first = update(tracker, sample(100.0, 2000.0, running=3.0), "t1")
    assert first.throughput_changed == ()  # a base only: no rate to show yet
    assert tracker.shown is None
    second = update(tracker, sample(110.0, 2500.0, running=3.0), "t2")
    assert second.throughput_changed == ("throughput",)
    assert tracker.shown is not None
    assert tracker.shown.generation_tokens_per_second == pytest.approx(50.0)
    assert tracker.shown.requests_running == 3


def test_after_a_restart_the_first_sample_keeps_what_status_shows() -> None:
    busy = aggregate(
        {"uid-1": sample(0.0, 0.0)},
        {"uid-1": sample(10.0, 123.0)},
    )
    shown = to_status(busy, "before the restart")
    tracker = DeploymentTracker(shown=shown)  # what the reconcile seeds from status
    first = update(tracker, sample(500.0, 90_000.0), "t1")
    assert first.throughput_changed == ()  # warm-up: no rates yet, no write
    assert tracker.shown == shown
    assert first.figures.pods_with_rates == 0
    # The next sample has a base: real rates, and the figure that moved is written.
    second = update(tracker, sample(510.0, 90_000.0), "t2")
    assert "generation_tokens_per_second" in second.throughput_changed
    assert tracker.shown is not None
    assert tracker.shown.generation_tokens_per_second == 0.0


def test_a_tick_before_any_pod_is_ready_shows_nothing_then_the_first_sample_is_a_base() -> None:
    tracker = DeploymentTracker()
    empty = tracker.update(None, {}, {}, [], sampled_at="t0")  # still deploying
    assert empty.throughput_changed == ()
    assert tracker.shown is None
    # The pod's vLLM generated 800 tokens before its first Ready: the operator's check's.
    first = update(tracker, sample(100.0, 800.0), "t1")
    assert first.throughput_changed == ("throughput",)
    assert tracker.shown is not None
    assert tracker.shown.generation_tokens_per_second == 0.0
    second = update(tracker, sample(130.0, 800.0), "t2")
    assert second.throughput_changed == ()  # idle after Ready: no second write
    third = update(tracker, sample(160.0, 1400.0), "t3")
    assert tracker.shown.generation_tokens_per_second == pytest.approx(20.0)
    assert "generation_tokens_per_second" in third.throughput_changed


def test_when_status_shows_only_silent_pods_a_first_answer_is_a_base() -> None:
    tracker = DeploymentTracker()
    once = tracker.update(None, {}, {}, ["pod-0"], sampled_at="t0")
    assert once.throughput_changed == ()  # one miss is not reported
    silent = tracker.update(None, {}, {}, ["pod-0"], sampled_at="t0")
    assert silent.throughput_changed == ("throughput",)  # the silent pod is reported
    assert tracker.shown is not None
    assert tracker.shown.pods_sampled == 0
    answered = update(tracker, sample(100.0, 800.0), "t1")
    assert "pods_sampled" in answered.throughput_changed
    assert tracker.shown.generation_tokens_per_second == 0.0
    assert tracker.shown.unresponsive_pods == []
    update(tracker, sample(110.0, 1000.0), "t2")
    assert tracker.shown.generation_tokens_per_second == pytest.approx(20.0)


def test_one_missed_scrape_writes_nothing_two_in_a_row_list_the_pod() -> None:
    tracker = DeploymentTracker()
    update(tracker, sample(100.0, 0.0), "t1")
    missed = tracker.update(None, {}, {"uid-1": "pod-0"}, ["pod-0"], sampled_at="t2")
    assert missed.throughput_changed == ()  # a slow answer once: status stays
    assert missed.figures.unresponsive_pods == ("pod-0",)  # ...while /metrics sees it
    again = tracker.update(None, {}, {"uid-1": "pod-0"}, ["pod-0"], sampled_at="t3")
    assert "unresponsive_pods" in again.throughput_changed
    assert tracker.shown is not None
    assert tracker.shown.unresponsive_pods == ["pod-0"]
    back = update(tracker, sample(160.0, 0.0), "t4")
    assert "unresponsive_pods" in back.throughput_changed  # answering again is news at once
    assert tracker.shown.unresponsive_pods == []


def test_a_silent_pod_keeps_its_base_and_a_gone_pod_is_dropped() -> None:
    tracker = DeploymentTracker()
    two = {
        "uid-1": sample(100.0, 0.0),
        "uid-2": sample(100.0, 0.0),
    }
    names = {"uid-1": "pod-0", "uid-2": "pod-1"}
    tracker.update(None, two, names, [], sampled_at="t1")
    # pod-0 does not answer; pod-1 is gone (neither sampled nor listed as unresponsive)
    tracker.update(None, {}, names, ["pod-0"], sampled_at="t2")
    assert set(tracker.previous) == {"uid-1"}
    assert tracker.previous["uid-1"].at == 100.0  # the base its next answer counts from
