"""The autoscaler's decision over simulated time."""

from __future__ import annotations

from nemotron_operator.api import AutoscalingSpec
from nemotron_operator.autoscale import (
    AutoscaleDecision,
    AutoscaleInputs,
    AutoscaleState,
    decide,
)

SPEC = AutoscalingSpec.model_validate(
    {
        "minReplicas": 1,
        "maxReplicas": 4,
        "target": {"metric": "requestsWaitingPerReplica", "value": 4},
        "scaleUpStabilizationSeconds": 30,
        "scaleDownDelaySeconds": 300,
    }
)


def inputs(
    replicas: int,
    waiting: int | None,
    *,
    ready: int | None = None,
    fit: int | None = None,
    usage: float | None = None,
) -> AutoscaleInputs:
    return AutoscaleInputs(
        replicas=replicas,
        ready_replicas=replicas if ready is None else ready,
        requests_waiting=waiting,
        kv_cache_usage=usage,
        gpu_product="NVIDIA-H200",
        gpus_per_replica=4,
        replicas_that_fit=fit,
    )


def run(
    spec: AutoscalingSpec, ticks: list[tuple[float, AutoscaleInputs]]
) -> list[AutoscaleDecision]:
    state, out = AutoscaleState(), []
    for now, given in ticks:
        decision = decide(spec, given, state, now)
        state = decision.state
        out.append(decision)
    return out


def test_sustained_waiting_scales_out_after_the_stabilization_window() -> None:
    decisions = run(SPEC, [(0, inputs(1, 12)), (20, inputs(1, 12)), (31, inputs(1, 12))])
    assert [d.replicas for d in decisions] == [1, 1, 3]  # ceil(1 × 12/4)
    assert decisions[-1].reason == "ScaledUp"
    assert "Scaled from 1 to 3 replicas" in decisions[-1].message


def test_a_short_burst_does_not_scale() -> None:
    decisions = run(SPEC, [(0, inputs(1, 12)), (20, inputs(1, 0)), (40, inputs(1, 12))])
    assert [d.replicas for d in decisions] == [1, 1, 1]


def test_never_past_max_replicas() -> None:
    decisions = run(SPEC, [(0, inputs(2, 400)), (31, inputs(2, 400))])
    assert decisions[-1].replicas == 4
    at_max = run(SPEC, [(0, inputs(4, 400)), (31, inputs(4, 400))])
    assert [d.replicas for d in at_max] == [4, 4]


def test_hold_while_a_replica_is_loading() -> None:
    decisions = run(
        SPEC,
        [(0, inputs(3, 40, ready=1)), (100, inputs(3, 40, ready=1)), (1000, inputs(3, 0, ready=2))],
    )
    assert [d.replicas for d in decisions] == [3, 3, 3]
    assert {d.reason for d in decisions} == {"ReplicasLoading"}


def test_scale_in_one_step_after_the_delay_never_below_min() -> None:
    ticks = [(t, inputs(2, 0)) for t in (0, 100, 299, 301)]
    decisions = run(SPEC, ticks)
    assert [d.replicas for d in decisions] == [2, 2, 2, 1]
    assert decisions[-1].reason == "ScaledDown"
    at_min = run(SPEC, [(t, inputs(1, 0)) for t in (0, 400, 800)])
    assert [d.replicas for d in at_min] == [1, 1, 1]


def test_no_scale_in_when_one_replica_fewer_would_be_over_target() -> None:
    # 2 replicas, 5 waiting: 2.5 per replica now, 5 with one fewer (target 4).
    decisions = run(SPEC, [(t, inputs(2, 5)) for t in (0, 400, 800)])
    assert [d.replicas for d in decisions] == [2, 2, 2]


def test_never_more_gpus_than_known_to_be_free() -> None:
    none_free = run(SPEC, [(0, inputs(1, 40, fit=1)), (31, inputs(1, 40, fit=1))])
    assert none_free[-1].replicas == 1
    assert none_free[-1].capacity_limited
    assert none_free[-1].reason == "InsufficientCapacity"
    assert "NVIDIA-H200 GPUs hold 1 replicas of 4 GPUs" in none_free[-1].message
    some_free = run(SPEC, [(0, inputs(1, 40, fit=2)), (31, inputs(1, 40, fit=2))])
    assert (some_free[-1].replicas, some_free[-1].capacity_limited) == (2, True)


def test_replicas_outside_the_limits_are_corrected_at_once() -> None:
    decision = decide(SPEC, inputs(9, None), AutoscaleState(), 0)
    assert (decision.replicas, decision.reason) == (4, "OutsideLimits")


def test_no_figures_no_change() -> None:
    assert decide(SPEC, inputs(2, None), AutoscaleState(), 0).replicas == 2


def test_kv_cache_usage_target() -> None:
    spec = SPEC.model_copy(
        update={"target": SPEC.target.model_copy(update={"metric": "kvCacheUsage", "value": 0.5})}
    )
    up = run(spec, [(0, inputs(2, 0, usage=0.9)), (31, inputs(2, 0, usage=0.9))])
    assert up[-1].replicas == 4  # ceil(2 × 0.9/0.5)
    down = run(spec, [(0, inputs(2, 0, usage=0.1)), (301, inputs(2, 0, usage=0.1))])
    assert down[-1].replicas == 1


TO_ZERO = SPEC.model_copy(update={"min_replicas": 0, "idle_seconds": 600})


def idle_inputs(replicas: int, idle: bool | None, *, ready: int | None = None) -> AutoscaleInputs:
    given = inputs(replicas, 0 if idle is not None else None, ready=ready)
    return AutoscaleInputs(**{**given.__dict__, "idle": idle})


def test_idle_for_the_window_scales_to_zero_and_zero_stays_zero() -> None:
    decisions = run(
        TO_ZERO,
        [
            (0, idle_inputs(1, True)),
            (300, idle_inputs(1, None)),  # a tick without figures keeps the window
            (599, idle_inputs(1, True)),
            (600, idle_inputs(1, True)),
            (700, idle_inputs(0, None, ready=0)),  # nothing to measure at zero: no change
        ],
    )
    assert [d.replicas for d in decisions] == [1, 1, 1, 0, 0]
    assert decisions[3].reason == "ScaledToZero"
    assert decisions[3].message.startswith("Scaled from 1 to 0 replicas: no request for 600s")


def test_a_request_restarts_the_idle_window() -> None:
    seen = [(0, True), (500, False), (700, True), (1200, True), (1300, True)]
    decisions = run(TO_ZERO, [(t, idle_inputs(1, idle)) for t, idle in seen])
    assert [d.replicas for d in decisions] == [1, 1, 1, 1, 0]


def test_a_loading_replica_or_min_replicas_above_zero_never_goes_to_zero() -> None:
    loading = run(TO_ZERO, [(t, idle_inputs(2, True, ready=1)) for t in (0, 1000, 2000)])
    assert [d.replicas for d in loading] == [2, 2, 2]
    kept = run(SPEC, [(t, idle_inputs(1, True)) for t in (0, 4000, 8000)])
    assert [d.replicas for d in kept] == [1, 1, 1]
    assert SPEC.idle_window is None
    default = AutoscalingSpec.model_validate({"minReplicas": 0, "maxReplicas": 2})
    assert default.idle_window == 1800
