"""The behavioural check's results, as the pods carry them: each serving leader's readiness-gate
condition (``serving.nemotron.io/verified``, set by the operator) reduced to the deployment's
``Verified`` condition. Pure; level-based (an operator restart loses nothing: the results live in
the pods).

Gate condition reasons: ``Passed`` (the pod takes traffic), ``CheckFailed`` (its message names
the check and a short excerpt of the answer), ``FollowingLeader`` (a worker of a multi-node
replica, set as its leader's).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, NamedTuple

from nemotron_operator.render import names as n
from nemotron_operator.render.multinode import GROUP_INDEX_LABEL

GATE = n.VERIFIED_CONDITION
PASSED = "Passed"
CHECK_FAILED = "CheckFailed"
FOLLOWING_LEADER = "FollowingLeader"
# Verified condition reasons besides PASSED and CHECK_FAILED.
VERIFYING = "Verifying"
WAITING_FOR_PODS = "WaitingForPods"
CHECK_DISABLED = "CheckDisabled"


class VerifiedCondition(NamedTuple):
    """The deployment's ``Verified`` condition; ``since``: when it passed (the last passing
    leader's gate transition, as the pod carries it), its ``lastTransitionTime`` even if status
    writes it later (a step of progress may wait: controller/reconcile/progress_hold.py)."""

    status: str
    reason: str
    message: str
    since: str | None = None


def pod_condition(pod: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == type_:
            return condition  # type: ignore[no-any-return]
    return None


def containers_ready(pod: Mapping[str, Any]) -> bool:
    """vLLM reports ready (its readiness probe passes): the point at which the check runs."""
    found = pod_condition(pod, "ContainersReady")
    return found is not None and found.get("status") == "True"


def has_gate(pod: Mapping[str, Any]) -> bool:
    gates = (pod.get("spec") or {}).get("readinessGates") or []
    return any(g.get("conditionType") == GATE for g in gates)


def role(pod: Mapping[str, Any]) -> str | None:
    return ((pod.get("metadata") or {}).get("labels") or {}).get(n.ROLE)


def replica(pod: Mapping[str, Any]) -> str | None:
    """The multi-node replica of a pod: its StatefulSet layout label, or its LeaderWorkerSet
    group (LWS labels a group's pods with their group index, not with ours)."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    found: str | None = labels.get(n.REPLICA) or labels.get(GROUP_INDEX_LABEL)
    return found


def pod_name(pod: Mapping[str, Any]) -> str:
    return str((pod.get("metadata") or {}).get("name", "?"))


def gate_status(pod: Mapping[str, Any]) -> tuple[str, str, str]:
    """(status, reason, message) of the pod's gate condition; ("Unknown", "", "") if unset."""
    found = pod_condition(pod, GATE)
    if found is None:
        return "Unknown", "", ""
    return (
        str(found.get("status", "Unknown")),
        str(found.get("reason") or ""),
        str(found.get("message") or ""),
    )


def _time(text: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None


def restarted_since_check(pod: Mapping[str, Any]) -> bool:
    """A container (vLLM) started after the gate turned True: the check was of an earlier
    process, so the pod is checked again."""
    found = pod_condition(pod, GATE)
    if found is None or found.get("status") != "True":
        return False
    checked = _time(found.get("lastTransitionTime"))
    if checked is None:
        return False
    for container in (pod.get("status") or {}).get("containerStatuses") or []:
        started = _time(((container.get("state") or {}).get("running") or {}).get("startedAt"))
        if started is not None and started > checked:
            return True
    return False


def leaders(pods: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The pods that run vLLM's API server and are checked (workers follow their leader)."""
    return [p for p in pods if has_gate(p) and role(p) != n.ROLE_WORKER]


def verified_condition(pods: Sequence[Mapping[str, Any]], *, enabled: bool) -> VerifiedCondition:
    """The deployment's ``Verified`` condition."""
    if not enabled:
        return VerifiedCondition(
            "Unknown",
            CHECK_DISABLED,
            "spec.verification.enabled is false: pods take traffic as soon as vLLM reports "
            "ready, unchecked",
        )
    checked = leaders(pods)
    failed = [p for p in checked if gate_status(p)[:2] == ("False", CHECK_FAILED)]
    if failed:
        first = failed[0]
        more = f" ({len(failed) - 1} more pod(s) failed)" if len(failed) > 1 else ""
        message = f"pod {pod_name(first)}: {gate_status(first)[2]}{more}"
        return VerifiedCondition("False", CHECK_FAILED, message)
    waiting = [p for p in checked if gate_status(p)[0] != "True"]
    if any(containers_ready(p) for p in waiting):
        names = ", ".join(pod_name(p) for p in waiting if containers_ready(p))
        message = f"checking pod(s) {names} before they take traffic"
        return VerifiedCondition("Unknown", VERIFYING, message)
    passed = [p for p in checked if gate_status(p)[0] == "True"]
    if passed and not waiting:
        message = f"{len(passed)} serving pod(s) passed the behavioural check"
        return VerifiedCondition("True", PASSED, message, _last_pass(passed))
    return VerifiedCondition("Unknown", WAITING_FOR_PODS, "no serving pod has reported ready yet")


def _last_pass(passed: Sequence[Mapping[str, Any]]) -> str | None:
    """The latest gate transition of the passed leaders (the text as the pod carries it)."""
    times = []
    for pod in passed:
        text = (pod_condition(pod, GATE) or {}).get("lastTransitionTime")
        moment = _time(text)
        if moment is not None:
            times.append((moment, str(text)))
    return max(times)[1] if times else None
