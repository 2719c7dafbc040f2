"""The tracker's plan check: each pod is compared with the plan once per start, when its vLLM has
published its cache config; status changes only when the figures do; a new plan or a replaced pod
is checked again. Written from those rules (mutation testing found the scheduling untested)."""

from __future__ import annotations

from nemotron_operator.api import Plan
from nemotron_operator.observe.samples import CacheConfigInfo, PodSample
from nemotron_operator.observe.tracker import DeploymentTracker, TrackerUpdate
from tests.unit.observe.plans import plan

BLOCKS = 6000


def sample(blocks: int | None) -> PodSample:
    config = None
    if blocks is not None:
        config = CacheConfigInfo({"num_gpu_blocks": str(blocks), "block_size": "1056"})
    return PodSample(0.0, {}, {}, {}, cache_config=config)


def tick(
    tracker: DeploymentTracker,
    pods: dict[str, int | None],
    stamp: str,
    *,
    with_plan: Plan | None = None,
    names: dict[str, str] | None = None,
    threshold: float | None = None,
) -> TrackerUpdate:
    """One scrape of ``pods`` (uid → published blocks, None: no cache config yet)."""
    named = names if names is not None else {uid: f"pod-{uid}" for uid in pods}
    extra = {} if threshold is None else {"shortfall_threshold": threshold}
    return tracker.update(
        with_plan if with_plan is not None else plan(),
        {uid: sample(blocks) for uid, blocks in pods.items()},
        named,
        [],
        sampled_at=stamp,
        **extra,
    )


def test_without_a_plan_nothing_is_checked() -> None:
    tracker = DeploymentTracker()
    update = tracker.update(None, {"a": sample(BLOCKS)}, {"a": "pod-a"}, [], sampled_at="t1")
    assert (update.plan_check, update.plan_check_status, update.plan_check_changed) == (
        None,
        None,
        False,
    )
    assert not tracker.checked


def test_a_pod_is_checked_once_when_it_publishes_its_cache_config() -> None:
    tracker = DeploymentTracker()
    first = tick(tracker, {"a": BLOCKS}, "t1")
    assert first.plan_check_changed
    assert tracker.last_plan_check is first.plan_check  # what the condition is set from
    assert first.plan_check is not None
    assert first.plan_check.pods_checked == 1
    status = first.plan_check_status
    assert status is not None
    assert (status.pod, status.kv_cache_blocks, status.checked_at) == ("pod-a", BLOCKS, "t1")
    assert "a" in tracker.checked

    again = tick(tracker, {"a": BLOCKS}, "t2")
    assert not again.plan_check_changed
    assert again.plan_check is not None  # still compared, for the condition
    assert again.plan_check_status == status  # checked_at stays t1: nothing was written


def test_a_pod_without_a_cache_config_or_blocks_yet_waits() -> None:
    tracker = DeploymentTracker()
    update = tick(tracker, {"a": None}, "t1")
    assert (update.plan_check, update.plan_check_changed) == (None, False)
    profiling = tracker.update(
        plan(),
        {"a": PodSample(0.0, {}, {}, {}, cache_config=CacheConfigInfo({"num_gpu_blocks": "None"}))},
        {"a": "pod-a"},
        [],
        sampled_at="t2",
    )
    assert (profiling.plan_check, profiling.plan_check_changed) == (None, False)
    assert "a" not in tracker.checked
    published = tick(tracker, {"a": BLOCKS}, "t3")
    assert published.plan_check_changed


def test_a_second_pod_is_checked_and_the_worst_one_reported() -> None:
    tracker = DeploymentTracker()
    tick(tracker, {"a": BLOCKS}, "t1")
    update = tick(tracker, {"a": BLOCKS, "b": 5400}, "t2")
    assert update.plan_check_changed
    assert update.plan_check is not None
    assert update.plan_check.pods_checked == 2
    assert not update.plan_check.accurate
    assert update.plan_check_status is not None
    assert (update.plan_check_status.pod, update.plan_check_status.kv_cache_blocks) == (
        "pod-b",
        5400,
    )


def test_a_pod_without_a_name_is_shown_by_its_key() -> None:
    update = tick(DeploymentTracker(), {"uid-7": BLOCKS}, "t1", names={})
    assert update.plan_check_status is not None
    assert update.plan_check_status.pod == "uid-7"


def test_the_shortfall_threshold_is_the_callers() -> None:
    short = 5400  # 10 % below the plan
    strict = tick(DeploymentTracker(), {"a": short}, "t1")
    assert strict.plan_check is not None
    assert not strict.plan_check.accurate
    lenient = tick(DeploymentTracker(), {"a": short}, "t1", threshold=0.2)
    assert lenient.plan_check is not None
    assert lenient.plan_check.accurate
    assert lenient.plan_check.threshold == 0.2


def test_after_a_restart_the_same_figures_write_nothing() -> None:
    shown = tick(DeploymentTracker(), {"a": BLOCKS}, "t1").plan_check_status
    assert shown is not None
    restarted = DeploymentTracker(plan_check_status=shown)
    update = tick(restarted, {"a": BLOCKS}, "t9")
    assert not update.plan_check_changed
    assert update.plan_check_status == shown  # checked_at still t1
    different = DeploymentTracker(plan_check_status=shown)
    moved = tick(different, {"a": 5400}, "t9")
    assert moved.plan_check_changed
    assert moved.plan_check_status is not None
    assert (moved.plan_check_status.kv_cache_blocks, moved.plan_check_status.checked_at) == (
        5400,
        "t9",
    )


def test_a_new_plan_checks_every_pod_again() -> None:
    tracker = DeploymentTracker()
    tick(tracker, {"a": BLOCKS}, "t1")
    tracker.replan()
    assert (tracker.plan_check_status, tracker.last_plan_check) == (None, None)
    update = tick(tracker, {"a": BLOCKS}, "t2", with_plan=plan(blocks=8000))
    assert update.plan_check_changed
    assert update.plan_check is not None
    assert update.plan_check.deviation("kvCacheBlocks") < 0  # against the new plan's 8,000
    assert update.plan_check_status is not None
    assert update.plan_check_status.checked_at == "t2"


def test_a_replaced_pod_is_checked_at_its_new_start() -> None:
    tracker = DeploymentTracker()
    tick(tracker, {"a": BLOCKS}, "t1")
    tracker.forget_pods({"b"})  # pod a is gone; b replaced it
    assert not tracker.sampled("a")
    update = tick(tracker, {"b": 5400}, "t2")
    assert update.plan_check_changed
    assert update.plan_check is not None
    assert update.plan_check.pods_checked == 1
    assert update.plan_check_status is not None
    assert update.plan_check_status.pod == "pod-b"


def test_a_pod_sampled_only_for_rates_counts_as_sampled() -> None:
    tracker = DeploymentTracker()
    tick(tracker, {"a": None}, "t1")  # no cache config: nothing checked, a base for rates
    assert "a" not in tracker.checked
    assert tracker.sampled("a")
    assert not tracker.sampled("b")


def test_during_a_rollout_only_pods_of_the_rendered_revision_meet_the_new_plan() -> None:
    """A new plan (8,000 blocks) while an old pod, started for the old one (6,000), still serves:
    the old pod is not the new plan's to meet, so it raises no false LessThanPlanned."""
    new_plan = plan(8000)
    everyone = DeploymentTracker()
    wrong = tick(everyone, {"old": BLOCKS, "new": 8000}, "t1", with_plan=new_plan)
    assert wrong.plan_check is not None
    assert (wrong.plan_check.reason, wrong.plan_check.observed.pod) == (
        "LessThanPlanned",
        "pod-old",
    )

    tracker = DeploymentTracker()
    update = tracker.update(
        new_plan,
        {"old": sample(BLOCKS), "new": sample(8000)},
        {"old": "pod-old", "new": "pod-new"},
        [],
        sampled_at="t1",
        current=frozenset({"new"}),
    )
    assert update.plan_check is not None
    assert (update.plan_check.reason, update.plan_check.observed.pod) == (
        "WithinTolerance",
        "pod-new",
    )
    assert set(tracker.checked) == {"new"}
