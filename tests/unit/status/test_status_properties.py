"""Properties of compute_status over any plan, problem, capacity, readiness, apply error and
previous status (hypothesis): the phase and the conditions never contradict each other, times move
only when a status flips, and a status recomputed from itself is unchanged. Pure."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nemotron_operator.api import NemotronDeploymentStatus, Throughput
from nemotron_operator.status import (
    Blocker,
    Capacity,
    Problem,
    Readiness,
    StatusInputs,
    compute_status,
)
from nemotron_operator.status.conditions import ORDER
from tests.unit.status.helpers import inventory, node, plan, plan_check, with_replicas

T0, T1, T2 = "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z", "2026-01-01T00:02:00Z"
# max_examples comes from the active profile: hypothesis' 100, hack/mutation.sh's 25.
PROPERTIES = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
CORE = ("Feasible", "CapacityAvailable", "Progressing", "Ready", "Degraded")
STUCK = ("SecretNotFound", "ImagePullBackOff", "CrashLoop", "InvalidPodConfig")
MOVING = ("Unschedulable", "LoadingModel", "RolloutInProgress", "WaitingForPods")
ONE_GPU = plan(inventory([node("h1")]), gpu={"count": 1})
TWO_NODES = plan(inventory([node("h1"), node("h2")]), gpu={"count": 16})


def rarely(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """None four times in five: the unusual inputs must not crowd out the combinations."""
    return st.integers(0, 4).flatmap(lambda i: strategy if i == 0 else st.none())


def mostly(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """None once in five."""
    return st.integers(0, 4).flatmap(lambda i: st.none() if i == 0 else strategy)


words = st.text(alphabet="abc xyz/:0123", min_size=1, max_size=20)
plans = mostly(st.builds(with_replicas, st.sampled_from([ONE_GPU, TWO_NODES]), st.integers(0, 3)))
problems = rarely(
    st.builds(Problem, st.sampled_from(["InsufficientGPUMemory", "UnknownModel"]), words)
)
capacities = mostly(st.builds(Capacity, st.booleans(), words, st.integers(0, 6), st.integers(0, 6)))
blockers = st.one_of(st.none(), st.builds(Blocker, st.sampled_from(STUCK + MOVING), words))
plan_checks = st.one_of(
    st.none(),
    st.builds(plan_check, st.integers(0, 1000)),
)
verdicts = st.one_of(
    st.none(),
    st.tuples(st.sampled_from(["True", "False", "Unknown"]), st.just("Checked"), words),
)


@st.composite
def status_inputs(draw: st.DrawFn) -> StatusInputs:
    chosen = draw(plans)
    replicas = chosen.replicas if chosen is not None else draw(st.integers(0, 3))
    ready = draw(st.integers(0, replicas))
    readiness = draw(mostly(st.builds(Readiness, st.just(ready), blockers)))
    return StatusInputs(
        generation=draw(st.one_of(st.none(), st.integers(1, 9))),
        replicas=replicas,
        selector="app=x",
        endpoint="http://x.ai.svc:8000/v1",
        plan=chosen,
        problem=draw(problems),
        capacity=draw(capacities),
        karpenter=draw(st.booleans()),
        readiness=readiness,
        apply_error=draw(rarely(words)),
        throughput=draw(mostly(st.builds(Throughput, requests_running=st.integers(0, 9)))),
        plan_check=draw(plan_checks),
        plan_accurate=draw(verdicts),
        autoscale_capacity_problem=draw(rarely(words)),
    )  # fmt: skip


@st.composite
def previous_statuses(draw: st.DrawFn) -> NemotronDeploymentStatus | None:
    if draw(st.booleans()):
        return None
    return compute_status(draw(status_inputs()), None, now=T0)


def _by_type(status: NemotronDeploymentStatus) -> dict[str, Any]:
    return {c.type: c for c in status.conditions}


@PROPERTIES
@given(status_inputs(), previous_statuses())
def test_conditions_are_listed_once_in_order_with_the_generation(
    inputs: StatusInputs, previous: NemotronDeploymentStatus | None
) -> None:
    status = compute_status(inputs, previous, now=T1)
    types = [c.type for c in status.conditions]
    assert len(types) == len(set(types))
    assert types == sorted(types, key=ORDER.index)
    assert set(CORE) <= set(types)
    had = previous is not None and "PlanAccurate" in _by_type(previous)
    given_now = inputs.plan_accurate is not None and inputs.plan is not None
    assert ("PlanAccurate" in types) == (given_now or had)
    found = _by_type(status)
    assert all(found[t].observed_generation == inputs.generation for t in CORE)
    assert status.observed_generation == inputs.generation


@PROPERTIES
@given(status_inputs(), previous_statuses())
def test_the_phase_agrees_with_the_conditions(
    inputs: StatusInputs, previous: NemotronDeploymentStatus | None
) -> None:
    status = compute_status(inputs, previous, now=T1)
    found = {t: c.status for t, c in _by_type(status).items()}
    reasons = {t: c.reason for t, c in _by_type(status).items()}
    ready = inputs.readiness.ready_replicas if inputs.readiness is not None else 0
    assert status.ready_replicas == ready
    assert status.ready == f"{ready}/{inputs.replicas}"
    if inputs.plan is None or inputs.problem is not None:
        assert status.phase == ("Infeasible" if inputs.problem is not None else "Pending")
        assert [found[t] for t in CORE] == ["False", "Unknown", "False", "False", "False"]
        assert (status.endpoint is None) == (inputs.plan is None)
        return
    assert (found["Feasible"], reasons["Feasible"]) == ("True", "Planned")
    assert status.endpoint == inputs.endpoint
    assert (found["Ready"] == "True") == (ready >= inputs.replicas > 0)
    if inputs.replicas == 0:
        assert reasons["Ready"] == "ScaledToZero"
        assert status.phase != "Ready"
    assert (status.phase == "Idle") == (
        inputs.replicas == 0
        and found["Degraded"] == "False"
        and found["Progressing"] == "False"
        and reasons["Progressing"] == "RolloutComplete"
    )
    assert (status.phase == "Degraded") == (found["Degraded"] == "True")
    assert (status.phase == "Ready") == (found["Ready"] == "True" and found["Degraded"] != "True")
    blocked = reasons["Progressing"] if found["Progressing"] != "False" else None
    waiting = found["CapacityAvailable"] == "False" or reasons["Progressing"] == "Unschedulable"
    if status.phase in ("WaitingForCapacity", "Deploying"):
        assert found["Ready"] == "False"
        assert found["Degraded"] == "False"
        assert (status.phase == "WaitingForCapacity") == waiting
    if found["Progressing"] == "True":
        assert blocked not in STUCK
        assert blocked != "ApplyRejected"
    if found["Ready"] == "False":
        assert reasons["Ready"] in (*STUCK, *MOVING, "ApplyRejected", "ScaledToZero")


@PROPERTIES
@given(status_inputs(), previous_statuses())
def test_degraded_and_progressing_follow_the_blocker(
    inputs: StatusInputs, previous: NemotronDeploymentStatus | None
) -> None:
    status = compute_status(inputs, previous, now=T1)
    if inputs.plan is None or inputs.problem is not None:
        return
    found = _by_type(status)
    blocker = inputs.readiness.blocker if inputs.readiness is not None else None
    reason = "ApplyRejected" if inputs.apply_error is not None else (blocker and blocker.reason)
    stuck = reason in (*STUCK, "ApplyRejected")
    ready = inputs.readiness.ready_replicas if inputs.readiness is not None else 0
    losing = 0 < ready < inputs.replicas and reason != "RolloutInProgress"
    assert (found["Degraded"].status == "True") == (stuck or losing)
    if stuck:
        assert (found["Degraded"].reason, found["Progressing"].status) == (reason, "False")
    if reason is None:
        assert (found["Progressing"].status, found["Progressing"].reason) == (
            "False",
            "RolloutComplete",
        )
    else:
        assert found["Progressing"].reason == reason
        assert found["Progressing"].status == ("False" if stuck else "True")


@PROPERTIES
@given(status_inputs(), previous_statuses())
def test_capacity_available_follows_inventory_readiness_and_autoscaler(
    inputs: StatusInputs, previous: NemotronDeploymentStatus | None
) -> None:
    status = compute_status(inputs, previous, now=T1)
    if inputs.plan is None or inputs.problem is not None:
        return
    found = _by_type(status)["CapacityAvailable"]
    ready = inputs.readiness.ready_replicas if inputs.readiness is not None else 0
    if inputs.autoscale_capacity_problem is not None:
        expected = ("False", "InsufficientGPUs")
    elif inputs.capacity is None:
        expected = ("Unknown", "NotPlanned")
    elif inputs.capacity.available or ready >= inputs.replicas:
        expected = ("True", "GPUsAvailable")
    else:
        expected = ("False", "WaitingForNodes" if inputs.karpenter else "InsufficientGPUs")
    assert (found.status, found.reason) == expected


@PROPERTIES
@given(status_inputs(), previous_statuses())
def test_transition_times_move_only_when_a_status_flips(
    inputs: StatusInputs, previous: NemotronDeploymentStatus | None
) -> None:
    status = compute_status(inputs, previous, now=T1)
    before = _by_type(previous) if previous is not None else {}
    for condition in status.conditions:
        old = before.get(condition.type)
        if old is not None and old.status == condition.status:
            assert condition.last_transition_time == old.last_transition_time
        elif condition.type in CORE:
            assert condition.last_transition_time == T1


@PROPERTIES
@given(status_inputs(), previous_statuses())
def test_a_status_recomputed_from_itself_is_unchanged(
    inputs: StatusInputs, previous: NemotronDeploymentStatus | None
) -> None:
    status = compute_status(inputs, previous, now=T1)
    assert compute_status(inputs, status, now=T2) == status
    # What the scraper and the plan check wrote is kept until they write again.
    expected_throughput = inputs.throughput or (previous.throughput if previous else None)
    assert status.throughput == expected_throughput
    expected_check = inputs.plan_check or (previous.plan_check if previous else None)
    assert status.plan_check == expected_check
