"""The built-in autoscaler's decision: pure, with the time and the remembered state passed in.

Rules (docs/observability.md):
- The signal is ``requestsWaitingPerReplica`` (waiting requests ÷ ready replicas) or
  ``kvCacheUsage`` (mean KV usage); ``ratio`` = signal ÷ target.
- Scale out when ``ratio > 1 + TOLERANCE`` has held for ``scaleUpStabilizationSeconds``: to
  ``ceil(ready × ratio)`` replicas, at least one more, at most ``maxReplicas``.
- Scale in by one replica when the signal spread over one replica fewer
  (``ratio × ready ÷ (ready − 1)``) stays below ``1 − TOLERANCE`` for ``scaleDownDelaySeconds``.
  One step at a time; each step restarts the delay.
- Hold while any replica is still loading (desired > ready): never remove a loading replica, and
  never add more before the last ones have absorbed load.
- Never ask for more replicas than the GPUs known to exist can hold (``replicas_that_fit``: the
  GPU inventory's free slots, this deployment's own pods counted as free); then stop at what fits
  and report ``capacity_limited`` (CapacityAvailable=False).
- Always within [minReplicas, maxReplicas]: a replica count outside is corrected at once.
- Without a sample (no ready replica answered) nothing changes except the clamp.
- Scale to zero (``minReplicas: 0``): when every replica is ready and none had a request
  (``idle``: none running or waiting, the token counters unchanged) for ``idleSeconds``, to 0
  replicas at once. A tick without figures neither starts nor ends the idle window. At 0 the
  autoscaler has nothing to measure and waits for a scale-up from outside (docs/controller.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from nemotron_operator.api.autoscaling import AutoscalingSpec

TOLERANCE = 0.10  # as the HPA's default: ignore ±10 % around the target


@dataclass(frozen=True)
class AutoscaleState:
    """What the autoscaler remembers between ticks (in the operator's memory: a restart restarts
    the stabilization windows, which only delays a decision)."""

    above_since: float | None = None
    below_since: float | None = None
    idle_since: float | None = None  # minReplicas 0: since when no request was seen


@dataclass(frozen=True)
class AutoscaleInputs:
    replicas: int  # spec.replicas now
    ready_replicas: int
    requests_waiting: int | None  # None: no figures this tick
    kv_cache_usage: float | None
    gpu_product: str
    gpus_per_replica: int
    # Replicas the cluster's GPUs of the plan's product can hold in all (this deployment's own
    # pods counted as free); None: elastic (Karpenter) or unknown.
    replicas_that_fit: int | None
    # No request running, waiting or served since the last tick on any ready replica; None: the
    # figures cannot tell (no sample, or no rate yet).
    idle: bool | None = None


@dataclass(frozen=True)
class AutoscaleDecision:
    replicas: int
    state: AutoscaleState
    reason: str  # CamelCase, for the Event
    message: str  # the Event text; empty when nothing happened worth an Event
    capacity_limited: bool = False

    def changed(self, current: int) -> bool:
        return self.replicas != current


def _signal(spec: AutoscalingSpec, inputs: AutoscaleInputs) -> float | None:
    if spec.target.metric == "kvCacheUsage":
        return inputs.kv_cache_usage
    if inputs.requests_waiting is None:
        return None
    return inputs.requests_waiting / max(1, inputs.ready_replicas)


def decide(
    spec: AutoscalingSpec, inputs: AutoscaleInputs, state: AutoscaleState, now: float
) -> AutoscaleDecision:
    """The replica count to set now, and the state to remember."""
    decision = _decide(spec, inputs, state, now)
    window = spec.idle_window
    current = inputs.replicas
    idle_since = None
    if window is not None and current > 0:  # scaling in one step at a time stays idle
        if inputs.idle is None:
            idle_since = state.idle_since
        elif inputs.idle and inputs.ready_replicas >= current:
            idle_since = state.idle_since if state.idle_since is not None else now
    if idle_since is not None and window is not None and now - idle_since >= window:
        return AutoscaleDecision(
            0,
            AutoscaleState(),
            "ScaledToZero",
            f"Scaled from {current} to 0 replicas: no request for {now - idle_since:.0f}s (idle "
            f"window {window}s); the plan, claims and caches are kept: scale up to wake it",
        )
    return replace(decision, state=replace(decision.state, idle_since=idle_since))


def _decide(
    spec: AutoscalingSpec, inputs: AutoscaleInputs, state: AutoscaleState, now: float
) -> AutoscaleDecision:
    current = inputs.replicas
    clamped = min(spec.max_replicas, max(spec.min_replicas, current))
    if clamped != current:
        return AutoscaleDecision(
            clamped,
            AutoscaleState(),
            "OutsideLimits",
            f"Scaled from {current} to {clamped} replicas: autoscaling keeps replicas within "
            f"[{spec.min_replicas}, {spec.max_replicas}]",
        )
    signal = _signal(spec, inputs)
    if signal is None:
        return AutoscaleDecision(current, AutoscaleState(), "NoMetrics", "")
    if inputs.ready_replicas < current:
        return AutoscaleDecision(current, AutoscaleState(), "ReplicasLoading", "")
    ratio = signal / spec.target.value
    described = f"{spec.target.metric} {signal:.3g} vs target {spec.target.value:g}"
    if ratio > 1 + TOLERANCE:
        return _scale_up(spec, inputs, state, now, ratio, described)
    ready = max(1, inputs.ready_replicas)
    if current > spec.min_replicas and ready > 1 and ratio * ready / (ready - 1) < 1 - TOLERANCE:
        return _scale_down(spec, inputs, state, now, described)
    return AutoscaleDecision(current, AutoscaleState(), "WithinTarget", "")


def _scale_up(  # noqa: PLR0917 - private helper of decide(), called once
    spec: AutoscalingSpec,
    inputs: AutoscaleInputs,
    state: AutoscaleState,
    now: float,
    ratio: float,
    described: str,
) -> AutoscaleDecision:
    current = inputs.replicas
    since = state.above_since if state.above_since is not None else now
    held = AutoscaleState(above_since=since)
    if current >= spec.max_replicas:
        return AutoscaleDecision(current, held, "AtMaxReplicas", "")
    if now - since < spec.scale_up_stabilization_seconds:
        return AutoscaleDecision(current, held, "Stabilizing", "")
    wanted = min(spec.max_replicas, max(current + 1, math.ceil(inputs.ready_replicas * ratio)))
    ceiling = inputs.replicas_that_fit
    if ceiling is not None and wanted > ceiling:
        if ceiling <= current:
            return AutoscaleDecision(
                current,
                held,
                "InsufficientCapacity",
                f"Wanted {wanted} replicas ({described}) but the cluster's "
                f"{inputs.gpu_product} GPUs hold {max(0, ceiling)} replicas of "
                f"{inputs.gpus_per_replica} GPUs: staying at {current}; add "
                f"{inputs.gpu_product} nodes or lower autoscaling.maxReplicas",
                capacity_limited=True,
            )
        return AutoscaleDecision(
            ceiling,
            AutoscaleState(),
            "ScaledUpToCapacity",
            f"Scaled from {current} to {ceiling} replicas ({described}); wanted {wanted}, but "
            f"the cluster's {inputs.gpu_product} GPUs hold only {ceiling}",
            capacity_limited=True,
        )
    return AutoscaleDecision(
        wanted,
        AutoscaleState(),
        "ScaledUp",
        f"Scaled from {current} to {wanted} replicas: {described} for "
        f"{now - since:.0f}s (stabilization {spec.scale_up_stabilization_seconds}s)",
    )


def _scale_down(
    spec: AutoscalingSpec,
    inputs: AutoscaleInputs,
    state: AutoscaleState,
    now: float,
    described: str,
) -> AutoscaleDecision:
    current = inputs.replicas
    since = state.below_since if state.below_since is not None else now
    if now - since < spec.scale_down_delay_seconds:
        return AutoscaleDecision(current, replace(state, above_since=None, below_since=since),
                                 "WaitingToScaleDown", "")  # fmt: skip
    return AutoscaleDecision(
        current - 1,
        AutoscaleState(),
        "ScaledDown",
        f"Scaled from {current} to {current - 1} replicas: {described}, below target with one "
        f"replica fewer for {now - since:.0f}s (delay {spec.scale_down_delay_seconds}s)",
    )
