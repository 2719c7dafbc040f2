"""Rollouts with ``spec.rollout``: which pods run the new revision, whether it stalled, and what
the operator holds back. Pure: the controller passes the pods, the StatefulSets, the rendered
templates' digests and ``now`` (docs/controller.md, "Rollouts").

A pod runs the *new* revision when its ``serving.nemotron.io/config-hash`` is the one its
StatefulSet is rendered with now. A rollout is under way while some serving pod runs another
one. A new-revision pod that is not Ready ``progressDeadlineSeconds`` after it was created, or
whose KV cache vLLM reports below the plan (``PlanAccurate=False`` naming it), *stalls* the
rollout: the operator updates no further replica, the old ones keep serving.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from nemotron_operator.api.rollout import RolloutSpec
from nemotron_operator.render import names as n
from nemotron_operator.status.readiness import Blocker, pod_blocker, pod_ready

ROLLOUT_STALLED = "RolloutStalled"
CANARY_PAUSED = "CanaryPaused"
PLAN_ACCURATE_FAILED = "False"


@dataclass(frozen=True)
class RolloutState:
    """What the rollout looks like now."""

    rolling: bool  # some serving pod runs another revision than the rendered one
    stall: Blocker | None  # why the rollout halted (reason RolloutStalled), naming the pod
    canary: str | None  # the canary holds the other replicas: what to do to promote
    next_deadline: float | None  # epoch seconds when a waiting new pod's deadline passes
    lowest_new_ordinal: int | None  # single-node: the lowest ordinal on the new revision


def _metadata(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def template_hash(statefulset: Mapping[str, Any]) -> str | None:
    template = (statefulset.get("spec") or {}).get("template") or {}
    value = _metadata(template).get("annotations", {}).get(n.CONFIG_HASH)
    return str(value) if value is not None else None


def rendered_revisions(desired: Sequence[Mapping[str, Any]]) -> frozenset[str]:
    """The config hashes of the serving pod templates rendered now (a StatefulSet's template, a
    LeaderWorkerSet's leader template): a pod carrying one runs the current revision."""
    hashes = set()
    for obj in desired:
        spec = obj.get("spec") or {}
        if obj.get("kind") == "StatefulSet":
            template = spec.get("template") or {}
        elif obj.get("kind") == "LeaderWorkerSet":
            template = (spec.get("leaderWorkerTemplate") or {}).get("leaderTemplate") or {}
        else:
            continue
        value = _metadata(template).get("annotations", {}).get(n.CONFIG_HASH)
        if value is not None:
            hashes.add(str(value))
    return frozenset(hashes)


def owner_statefulset(pod: Mapping[str, Any]) -> str | None:
    for ref in _metadata(pod).get("ownerReferences") or []:
        if ref.get("kind") == "StatefulSet":
            return str(ref.get("name"))
    return None


def ordinal(pod: Mapping[str, Any]) -> int:
    name = str(_metadata(pod).get("name", ""))
    tail = name.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def _created(pod: Mapping[str, Any]) -> float | None:
    stamp = _metadata(pod).get("creationTimestamp")
    if not stamp:
        return None
    return datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()


def assess_rollout(
    rollout: RolloutSpec,
    *,
    rendered: Mapping[str, str],
    pods: Sequence[Mapping[str, Any]],
    replicas: int,
    plan_accurate: tuple[str, str, str] | None,
    plan_check_pod: str | None,
    now: float,
) -> RolloutState:
    """``rendered``: StatefulSet name → the config hash of its rendered pod template."""
    serving = [
        p
        for p in pods
        if owner_statefulset(p) in rendered and not _metadata(p).get("deletionTimestamp")
    ]

    def is_new(pod: Mapping[str, Any]) -> bool:
        owner = owner_statefulset(pod)
        hashed = _metadata(pod).get("annotations", {}).get(n.CONFIG_HASH)
        return owner is not None and hashed == rendered[owner]

    new = [p for p in serving if is_new(p)]
    rolling = len(new) < len(serving)
    stall: Blocker | None = None
    deadline: float | None = None
    if rolling:
        limit = rollout.progress_deadline_seconds
        for pod in sorted(new, key=lambda p: str(_metadata(p).get("name"))):
            name = str(_metadata(pod).get("name"))
            failed = plan_accurate is not None and plan_accurate[0] == PLAN_ACCURATE_FAILED
            if failed and plan_accurate is not None and plan_check_pod == name:
                stall = Blocker(
                    ROLLOUT_STALLED,
                    f"pod {name} of the new revision: {plan_accurate[1]}: {plan_accurate[2]}; "
                    "the other replicas keep the old revision",
                )
                break
            created = _created(pod)
            if pod_ready(pod) or created is None:
                continue
            if now >= created + limit:
                why = pod_blocker(pod)
                detail = f"{why.reason}: {why.message}" if why is not None else "not Ready"
                stall = Blocker(
                    ROLLOUT_STALLED,
                    f"pod {name} of the new revision is not Ready {limit} s after it was "
                    f"created ({detail}); the other replicas keep the old revision: fix the "
                    "spec, or revert it",
                )
                break
            deadline = min(deadline or created + limit, created + limit)
    canary = None
    held = rollout.canary.replicas if rollout.canary is not None else None
    settled = bool(new) and all(pod_ready(p) for p in new)
    if rolling and held is not None and held < replicas and stall is None and settled:
        canary = (
            f"the new revision runs on {held} of {replicas} replicas (canary); remove "
            "spec.rollout.canary to promote it to all"
        )
    lowest = min((ordinal(p) for p in new), default=None)
    return RolloutState(rolling, stall, canary, None if stall else deadline, lowest)
