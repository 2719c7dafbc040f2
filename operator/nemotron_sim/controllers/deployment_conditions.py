"""Deployment status helpers: counts, completeness and the condition update rules of
kube-controller-manager's ``deployment/util`` (``SetDeploymentCondition`` and friends)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any


def replicas_of(obj: Mapping[str, Any]) -> int:
    return int((obj.get("spec") or {}).get("replicas", 1))


def status_count(obj: Mapping[str, Any], name: str) -> int:
    return int((obj.get("status") or {}).get(name) or 0)


def is_complete(deploy: Mapping[str, Any], counts: Mapping[str, int]) -> bool:
    replicas = replicas_of(deploy)
    return (
        counts["updatedReplicas"] == replicas
        and counts["replicas"] == replicas
        and counts["availableReplicas"] == replicas
    )


def is_progressing(deploy: Mapping[str, Any], counts: Mapping[str, int]) -> bool:
    old = deploy.get("status") or {}
    old_stale = status_count(deploy, "replicas") - status_count(deploy, "updatedReplicas")
    return (
        counts["updatedReplicas"] > int(old.get("updatedReplicas") or 0)
        or counts["replicas"] - counts["updatedReplicas"] < old_stale
        or counts["readyReplicas"] > int(old.get("readyReplicas") or 0)
        or counts["availableReplicas"] > int(old.get("availableReplicas") or 0)
    )


def parse_time(text: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None


def set_condition(
    conditions: dict[str, Any],
    kind: str,
    value: tuple[str, str, str],
    stamp: str,
    *,
    touch: bool = False,
) -> None:
    """SetDeploymentCondition: the transition time moves only when the status changes."""
    status, reason, message = value
    current = conditions.get(kind)
    same = current is not None and (current.get("status"), current.get("reason")) == (
        status,
        reason,
    )
    if same and not touch:
        return
    since = stamp
    if current is not None and current.get("status") == status:
        since = current.get("lastTransitionTime", stamp)
    conditions[kind] = {
        "type": kind,
        "status": status,
        "lastUpdateTime": stamp,
        "lastTransitionTime": since,
        "reason": reason,
        "message": message,
    }
