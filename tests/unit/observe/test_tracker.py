"""The tracker's first sample: a new deployment shows throughput from it (rates since the pod's
start) and an idle second sample writes nothing; after an operator restart the first sample only
sets a base and status keeps what it shows."""

from __future__ import annotations

import pytest

from nemotron_operator.observe import samples as s
from nemotron_operator.observe.change import to_status
from nemotron_operator.observe.samples import PodSample
from nemotron_operator.observe.throughput import aggregate
from nemotron_operator.observe.tracker import DeploymentTracker, TrackerUpdate

STARTED = 1_700_000_000.0


def sample(at: float, generation: float, *, since_start: float) -> PodSample:
    return PodSample(
        at,
        {s.GENERATION_TOKENS: generation},
        {s.GENERATION_TOKENS: STARTED},
        {s.REQUESTS_RUNNING: 0.0},
        wall=STARTED + since_start,
    )


def update(tracker: DeploymentTracker, pod: PodSample, stamp: str) -> TrackerUpdate:
    return tracker.update(None, {"uid-1": pod}, {"uid-1": "pod-0"}, [], sampled_at=stamp)


def test_a_new_deployment_shows_its_first_sample_and_an_idle_second_writes_nothing() -> None:
    tracker = DeploymentTracker()
    first = update(tracker, sample(100.0, 0.0, since_start=40.0), "t1")
    assert first.throughput_changed == ("throughput",)
    assert tracker.shown is not None
    assert tracker.shown.generation_tokens_per_second == 0.0
    assert tracker.shown.pods_sampled == 1
    assert tracker.shown.sampled_at == "t1"
    second = update(tracker, sample(130.0, 0.0, since_start=70.0), "t2")
    assert second.throughput_changed == ()
    assert tracker.shown.sampled_at == "t1"  # nothing moved: status stays as written
    assert second.throughput.sampled_at == "t1"  # ...and the update hands back what it shows


def test_before_anything_is_shown_the_update_hands_back_the_fresh_figures() -> None:
    tracker = DeploymentTracker()
    first = tracker.update(None, {}, {}, ["pod-0"], sampled_at="t0")  # one miss: not shown
    assert tracker.shown is None
    assert first.throughput.sampled_at == "t0"
    assert first.throughput.unresponsive_pods == ["pod-0"]


def test_a_busy_new_pod_shows_its_rate_since_start_at_once() -> None:
    tracker = DeploymentTracker()
    update(tracker, sample(100.0, 2000.0, since_start=40.0), "t1")
    assert tracker.shown is not None
    assert tracker.shown.generation_tokens_per_second == pytest.approx(50.0)


def test_after_a_restart_the_first_sample_keeps_what_status_shows() -> None:
    busy = aggregate(
        {"uid-1": sample(0.0, 0.0, since_start=0.0)},
        {"uid-1": sample(10.0, 123.0, since_start=10.0)},
    )
    shown = to_status(busy, "before the restart")
    tracker = DeploymentTracker(shown=shown)  # what the reconcile seeds from status
    first = update(tracker, sample(500.0, 90_000.0, since_start=3600.0), "t1")
    assert first.throughput_changed == ()  # warm-up: no rates yet, no write
    assert tracker.shown == shown
    assert first.figures.pods_with_rates == 0
    # The next sample has a base: real rates, and the figure that moved is written.
    second = update(tracker, sample(510.0, 90_000.0, since_start=3610.0), "t2")
    assert "generation_tokens_per_second" in second.throughput_changed
    assert tracker.shown is not None
    assert tracker.shown.generation_tokens_per_second == 0.0


def test_a_tick_before_any_pod_is_ready_shows_nothing_and_keeps_the_first_rates() -> None:
    tracker = DeploymentTracker()
    empty = tracker.update(None, {}, {}, [], sampled_at="t0")  # still deploying
    assert empty.throughput_changed == ()
    assert tracker.shown is None
    first = update(tracker, sample(100.0, 800.0, since_start=40.0), "t1")
    assert first.throughput_changed == ("throughput",)
    assert tracker.shown is not None
    assert tracker.shown.generation_tokens_per_second == pytest.approx(20.0)


def test_when_status_shows_only_silent_pods_a_first_answer_counts_from_created() -> None:
    tracker = DeploymentTracker()
    once = tracker.update(None, {}, {}, ["pod-0"], sampled_at="t0")
    assert once.throughput_changed == ()  # one miss is not reported
    silent = tracker.update(None, {}, {}, ["pod-0"], sampled_at="t0")
    assert silent.throughput_changed == ("throughput",)  # the silent pod is reported
    assert tracker.shown is not None
    assert tracker.shown.pods_sampled == 0
    answered = update(tracker, sample(100.0, 800.0, since_start=40.0), "t1")
    assert "pods_sampled" in answered.throughput_changed
    assert tracker.shown.generation_tokens_per_second == pytest.approx(20.0)


def test_one_missed_scrape_writes_nothing_two_in_a_row_list_the_pod() -> None:
    tracker = DeploymentTracker()
    update(tracker, sample(100.0, 0.0, since_start=40.0), "t1")
    missed = tracker.update(None, {}, {"uid-1": "pod-0"}, ["pod-0"], sampled_at="t2")
    assert missed.throughput_changed == ()  # a slow answer once: status stays
    assert missed.figures.unresponsive_pods == ("pod-0",)  # ...while /metrics sees it
    again = tracker.update(None, {}, {"uid-1": "pod-0"}, ["pod-0"], sampled_at="t3")
    assert "unresponsive_pods" in again.throughput_changed
    assert tracker.shown is not None
    assert tracker.shown.unresponsive_pods == ["pod-0"]
    back = update(tracker, sample(160.0, 0.0, since_start=100.0), "t4")
    assert "unresponsive_pods" in back.throughput_changed  # answering again is news at once
    assert tracker.shown.unresponsive_pods == []


def test_a_silent_pod_keeps_its_base_and_a_gone_pod_is_dropped() -> None:
    tracker = DeploymentTracker()
    two = {
        "uid-1": sample(100.0, 0.0, since_start=40.0),
        "uid-2": sample(100.0, 0.0, since_start=40.0),
    }
    names = {"uid-1": "pod-0", "uid-2": "pod-1"}
    tracker.update(None, two, names, [], sampled_at="t1")
    # pod-0 does not answer; pod-1 is gone (neither sampled nor listed as unresponsive)
    tracker.update(None, {}, names, ["pod-0"], sampled_at="t2")
    assert set(tracker.previous) == {"uid-1"}
    assert tracker.previous["uid-1"].at == 100.0  # the base its next answer counts from
