"""``spec.rollout``: how a changed pod template reaches the replicas (docs/controller.md,
"Rollouts").

Without it the StatefulSets roll with their defaults (one pod at a time, every replica). With
it: ``maxUnavailable`` replicas at a time, optionally a canary (the new revision on the last
``canary.replicas`` replicas only, until the canary is removed from the spec: the promotion),
and a progress deadline after which a new revision that is not Ready halts the rollout with
``Degraded=RolloutStalled``.
"""

from __future__ import annotations

from pydantic import Field

from nemotron_operator.api.base import ApiModel

MAX_ROLLOUT_REPLICAS = 64  # spec.replicas' own bound
# A 120B replica takes 15-20 minutes to download, load and compile (issue 21): the default
# leaves twice that before a new revision counts as stalled.
DEFAULT_PROGRESS_DEADLINE_SECONDS = 2400


class CanarySpec(ApiModel):
    """The new revision on a few replicas first."""

    replicas: int = Field(
        ge=1,
        le=MAX_ROLLOUT_REPLICAS,
        description="Replicas that run a new pod template first (the highest-numbered ones); the "
        "others keep the old one until spec.rollout.canary is removed (the promotion). At or "
        "above spec.replicas every replica is updated.",
    )


class RolloutSpec(ApiModel):
    """How a changed pod template rolls through the replicas."""

    max_unavailable: int = Field(
        default=1,
        ge=1,
        le=MAX_ROLLOUT_REPLICAS,
        description="Replicas replaced at the same time (a multi-node replica's leader and "
        "workers always together).",
    )
    max_surge: int = Field(
        default=0,
        ge=0,
        le=MAX_ROLLOUT_REPLICAS,
        description="Extra replicas started with the new template before old ones are removed "
        "(LeaderWorkerSet backend only: whole groups; StatefulSets cannot surge).",
    )
    canary: CanarySpec | None = Field(
        default=None,
        description="Put a new revision on this many replicas only; remove it to promote.",
    )
    progress_deadline_seconds: int = Field(
        default=DEFAULT_PROGRESS_DEADLINE_SECONDS,
        ge=10,
        le=86400,
        description="A pod of the new revision not Ready this long after it was created halts "
        "the rollout (Degraded=RolloutStalled, naming the pod and why); so does a new-revision "
        "pod whose KV cache falls short of the plan (PlanAccurate=False).",
    )
