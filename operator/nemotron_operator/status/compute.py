"""``compute_status``: (spec facts, plan or problem, capacity, the children's readiness, previous
status, now) → the new status. Pure: the controller patches the result only when it differs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from nemotron_operator.api import Condition, NemotronDeploymentStatus, NodePoolStatus, Plan
from nemotron_operator.api.status import PlanCheck, Throughput
from nemotron_operator.status import readiness as r
from nemotron_operator.status import startup as s
from nemotron_operator.status.capacity import Capacity, NodePoolProblem
from nemotron_operator.status.conditions import ordered, transition
from nemotron_operator.status.download import DOWNLOAD_FAILED
from nemotron_operator.status.rollout import CANARY_PAUSED, ROLLOUT_STALLED, RolloutState
from nemotron_operator.status.verification import VerifiedCondition

PLANNED = "Planned"
GPUS_AVAILABLE = "GPUsAvailable"
INSUFFICIENT_GPUS = "InsufficientGPUs"
WAITING_FOR_NODES = "WaitingForNodes"
NOT_PLANNED = "NotPlanned"
ROLLOUT_COMPLETE = "RolloutComplete"
ALL_REPLICAS_READY = "AllReplicasReady"
AS_EXPECTED = "AsExpected"
REPLICAS_UNAVAILABLE = "ReplicasUnavailable"
APPLY_REJECTED = "ApplyRejected"
SCALED_TO_ZERO = "ScaledToZero"
GATEWAY_CONDITION = "InferenceGateway"
AUTOSCALING_CONDITION = "Autoscaling"
MULTI_NODE_CONDITION = "MultiNodeBackend"


IDLE_MESSAGE = (
    "0 replicas: the plan, the weight claims and the caches are kept; a scale-up of the scale "
    "subresource (kubectl scale, an HPA, KEDA) wakes it"
)


@dataclass(frozen=True)
class Problem:
    """Why the spec cannot be deployed as it is: a CamelCase reason and what to change."""

    reason: str
    message: str


@dataclass(frozen=True)
class StatusInputs:
    generation: int | None
    replicas: int
    selector: str
    endpoint: str
    plan: Plan | None = None
    problem: Problem | None = None
    capacity: Capacity | None = None
    karpenter: bool = False
    node_pool: NodePoolStatus | None = None
    readiness: r.Readiness | None = None
    apply_error: str | None = None  # the API server refused a rendered child: its message
    # From the scraper and the autoscaler (controller/pods/scraper.py,
    # controller/pods/autoscaler.py); None keeps what status has.
    throughput: Throughput | None = None
    plan_check: PlanCheck | None = None
    plan_accurate: tuple[str, str, str] | None = None  # status, reason, message
    autoscale_capacity_problem: str | None = None
    node_pool_problem: NodePoolProblem | None = None  # Karpenter will not provision (why)
    # spec.gateway: (status, reason, message) of the InferenceGateway condition; None when the
    # gateway is off (the condition goes).
    gateway: tuple[str, str, str] | None = None
    # autoscaling.provider KEDA: the Autoscaling condition (controller/decide/keda.py); None
    # otherwise (the condition goes).
    autoscaling: tuple[str, str, str] | None = None
    # spec.multiNode: the MultiNodeBackend condition (controller/decide/multinode.py); None for
    # a replica on one node (the condition goes).
    multi_node: tuple[str, str, str] | None = None
    verified: VerifiedCondition | None = None  # status/verification.py
    # With LoRA on, what each serving pod serves (controller/pods/adapters.py): (pod, names, the
    # last failure to load or unload).
    adapters: tuple[tuple[str, tuple[str, ...], str | None], ...] | None = None
    # status/startup.py: the serving pods' start-up phases and the plan's prediction; None keeps
    # what status has.
    startup: s.Startup | None = None
    predicted_startup: s.Prediction | None = None
    rollout: RolloutState | None = None  # spec.rollout (status/rollout.py)
    # The shared cache's download Job while the serving pods wait for it (status/download.py).
    download: r.Blocker | None = None


def _plan_summary(plan: Plan) -> str:
    return (
        f"{plan.gpus_per_replica}x {plan.gpu_product} per replica (TP {plan.tensor_parallel}, "
        f"PP {plan.pipeline_parallel}, {plan.nodes_per_replica} node(s)); max concurrency "
        f"{plan.max_concurrency:.2f} at {plan.max_model_len} tokens"
    )


ConditionFactory = Callable[[str, str, str, str], Condition]


def _unplanned(inputs: StatusInputs, cond: ConditionFactory) -> tuple[list[Condition], str]:
    problem = inputs.problem or Problem(NOT_PLANNED, "the operator has not planned this yet")
    conditions = [
        cond("Feasible", "False", problem.reason, problem.message),
        cond("CapacityAvailable", "Unknown", NOT_PLANNED, "no plan to check capacity for"),
        cond(
            "Progressing",
            "False",
            problem.reason,
            "nothing is changed until the spec can be planned; pods of an earlier spec, if any, "
            "keep running",
        ),
        cond("Ready", "False", problem.reason, problem.message),
        cond("Degraded", "False", problem.reason, "not deployed"),
    ]
    return conditions, "Infeasible" if inputs.problem is not None else "Pending"


def _capacity(inputs: StatusInputs, ready: int, cond: ConditionFactory) -> Condition:
    capacity = inputs.capacity
    if inputs.autoscale_capacity_problem is not None:
        return cond(
            "CapacityAvailable", "False", INSUFFICIENT_GPUS, inputs.autoscale_capacity_problem
        )
    if capacity is None:
        return cond("CapacityAvailable", "Unknown", NOT_PLANNED, "GPU inventory not read")
    if capacity.available or ready >= inputs.replicas:
        return cond("CapacityAvailable", "True", GPUS_AVAILABLE, capacity.message)
    problem = inputs.node_pool_problem
    if inputs.karpenter and problem is not None:
        return cond("CapacityAvailable", "False", problem.reason, problem.message)
    reason = WAITING_FOR_NODES if inputs.karpenter else INSUFFICIENT_GPUS
    return cond("CapacityAvailable", "False", reason, capacity.message)


def _phase(degraded: Condition, all_ready: bool, capacity: Condition, blocker: Any) -> str:
    if degraded.status == "True":
        return "Degraded"
    if all_ready:
        return "Ready"
    if capacity.status == "False" or (blocker is not None and blocker.reason == r.UNSCHEDULABLE):
        return "WaitingForCapacity"
    return "Deploying"


def _blocker(inputs: StatusInputs) -> r.Blocker | None:
    """The one reason not everything is ready and up to date, most telling first."""
    blocker = inputs.readiness.blocker if inputs.readiness is not None else None
    if inputs.download is not None:  # the serving pods wait for it: they say nothing yet
        blocker = inputs.download
    if inputs.apply_error is not None:  # outranks what the pods say: they run an old spec
        blocker = r.Blocker(APPLY_REJECTED, f"the API server refused a child: {inputs.apply_error}")
    rollout = inputs.rollout
    if rollout is not None and rollout.stall is not None:  # outranks a pod's own blocker
        blocker = rollout.stall
    elif rollout is not None and rollout.rolling and blocker is None:  # replicas held back
        blocker = r.Blocker(r.ROLLOUT_IN_PROGRESS, "some replicas still run the old revision")
    return blocker


def _planned(
    inputs: StatusInputs, plan: Plan, ready: int, cond: ConditionFactory
) -> tuple[list[Condition], str]:
    blocker = _blocker(inputs)
    rollout = inputs.rollout
    stuck = blocker is not None and (
        blocker.reason in r.STUCK
        or blocker.reason in {APPLY_REJECTED, ROLLOUT_STALLED, DOWNLOAD_FAILED}
    )
    all_ready = ready >= inputs.replicas > 0  # at zero replicas nothing serves: Idle
    serving = f"{ready}/{inputs.replicas} replica(s) ready"
    capacity = _capacity(inputs, ready, cond)
    canary = rollout.canary if rollout is not None else None
    if canary is not None and all_ready and blocker and blocker.reason == r.ROLLOUT_IN_PROGRESS:
        progressing = cond("Progressing", "False", CANARY_PAUSED, canary)
    elif blocker is None:
        progressing = cond("Progressing", "False", ROLLOUT_COMPLETE, "up to date")
    else:
        moving = "False" if stuck else "True"
        progressing = cond("Progressing", moving, blocker.reason, blocker.message)
    if inputs.replicas == 0:  # scaled to zero: nothing serves until a scale-up wakes it
        ready_condition = cond("Ready", "False", SCALED_TO_ZERO, IDLE_MESSAGE)
    elif all_ready:
        ready_condition = cond("Ready", "True", ALL_REPLICAS_READY, serving)
    else:
        why = blocker or r.Blocker(r.WAITING_FOR_PODS, serving)
        ready_condition = cond("Ready", "False", why.reason, f"{serving}: {why.message}")
    rolling = blocker is not None and blocker.reason == r.ROLLOUT_IN_PROGRESS
    if blocker is not None and (stuck or blocker.reason in r.DEGRADING):
        degraded = cond("Degraded", "True", blocker.reason, blocker.message)
    elif 0 < ready < inputs.replicas and not rolling:
        degraded = cond("Degraded", "True", REPLICAS_UNAVAILABLE, serving)
    else:
        degraded = cond("Degraded", "False", AS_EXPECTED, serving)
    feasible = cond("Feasible", "True", PLANNED, _plan_summary(plan))
    conditions = [feasible, capacity, progressing, ready_condition, degraded]
    if inputs.replicas == 0 and degraded.status == "False" and blocker is None:
        return conditions, "Idle"
    return conditions, _phase(degraded, all_ready, capacity, blocker)


def compute_status(
    inputs: StatusInputs, previous: NemotronDeploymentStatus | None, *, now: str
) -> NemotronDeploymentStatus:
    """The whole status. Conditions of types this function does not compute (added by other
    parts of the operator) are kept as they were; so is ``throughput`` (the metrics scraper's)."""
    before = list(previous.conditions) if previous is not None else []
    generation = inputs.generation

    def cond(
        type_: str, status: str, reason: str, message: str, since: str | None = None
    ) -> Condition:
        """``since``: when the condition's status flipped, if not now (``Verified``: the gate's)."""
        return transition(
            before, type_, status, reason, message, generation=generation, now=since or now
        )

    ready = inputs.readiness.ready_replicas if inputs.readiness is not None else 0
    if inputs.problem is not None or inputs.plan is None:
        conditions, phase = _unplanned(inputs, cond)
    else:
        conditions, phase = _planned(inputs, inputs.plan, ready, cond)
    if inputs.plan_accurate is not None and inputs.plan is not None:
        conditions.append(cond("PlanAccurate", *inputs.plan_accurate))
    if inputs.gateway is not None and inputs.plan is not None:
        conditions.append(cond(GATEWAY_CONDITION, *inputs.gateway))
    if inputs.autoscaling is not None and inputs.plan is not None:
        conditions.append(cond(AUTOSCALING_CONDITION, *inputs.autoscaling))
    if inputs.multi_node is not None and inputs.plan is not None:
        conditions.append(cond(MULTI_NODE_CONDITION, *inputs.multi_node))
    if inputs.verified is not None and inputs.plan is not None:
        conditions.append(cond("Verified", *inputs.verified))
    # The optional types go when their input does (the feature is off).
    optional = (
        (GATEWAY_CONDITION, inputs.gateway),
        (AUTOSCALING_CONDITION, inputs.autoscaling),
        (MULTI_NODE_CONDITION, inputs.multi_node),
    )
    dropped = {c.type for c in conditions} | {t for t, given in optional if given is None}
    keep_others = [c for c in before if c.type not in dropped]
    return NemotronDeploymentStatus.model_validate(
        {
            "observedGeneration": generation,
            "phase": phase,
            "conditions": ordered([*conditions, *keep_others]),
            "plan": inputs.plan,
            "nodePool": inputs.node_pool,
            "replicas": inputs.replicas,
            "readyReplicas": ready,
            "ready": f"{ready}/{inputs.replicas}",
            "selector": inputs.selector,
            "endpoint": inputs.endpoint if inputs.plan is not None else None,
            "throughput": inputs.throughput
            or (previous.throughput if previous is not None else None),
            "planCheck": inputs.plan_check
            or (previous.plan_check if previous is not None else None),
            "adapters": None
            if inputs.adapters is None
            else [
                {"pod": pod, "adapters": list(names), "message": message}
                for pod, names, message in inputs.adapters
            ],
            "startup": _startup(inputs, previous),
        }
    )


def _startup(
    inputs: StatusInputs, previous: NemotronDeploymentStatus | None
) -> dict[str, Any] | None:
    before = previous.startup if previous is not None else None
    if inputs.startup is None:
        return before.to_wire() if before is not None else None
    return s.startup_status(inputs.startup, inputs.predicted_startup, before).to_wire()
