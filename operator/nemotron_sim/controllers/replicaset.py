"""ReplicaSet decisions: which pods to create or delete, and the status to report.

As pkg/controller/replicaset: pods ``<rs>-<5 random>`` from the template with a controller
ownerReference; scale-down deletes the least useful pods first (unscheduled, then pending, then
not ready, then the most recently ready); status counts *active* pods (neither terminating nor
``Succeeded``/``Failed``). A pod is available once it has been Ready for ``minReadySeconds``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

POD_TEMPLATE_HASH = "pod-template-hash"


@dataclass
class ReplicaSetActions:
    create_pods: list[dict[str, Any]] = field(default_factory=list)
    delete_pods: list[str] = field(default_factory=list)
    status: dict[str, Any] = field(default_factory=dict)
    # Seconds until a Ready pod becomes available (minReadySeconds): look again then.
    recheck_after: float | None = None


def is_active(pod: Mapping[str, Any]) -> bool:
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    return (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


def _ready_since(pod: Mapping[str, Any]) -> str | None:
    status = pod.get("status") or {}
    if status.get("phase") != "Running":
        return None
    for condition in status.get("conditions") or []:
        if condition.get("type") == "Ready" and condition.get("status") == "True":
            return str(condition.get("lastTransitionTime") or "")
    return None


def _parse_time(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def available_in(pod: Mapping[str, Any], min_ready_seconds: int, now: datetime) -> float | None:
    """0 when available now, the seconds still to wait, or None when not Ready."""
    since = _ready_since(pod)
    if since is None:
        return None
    if min_ready_seconds <= 0:
        return 0.0
    started = _parse_time(since)
    if started is None:
        return 0.0
    return max(0.0, min_ready_seconds - (now - started).total_seconds())


def owner_reference(owner: Mapping[str, Any], kind: str) -> dict[str, Any]:
    md = owner.get("metadata") or {}
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "name": md.get("name", ""),
        "uid": md.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def build_pod(rs: Mapping[str, Any]) -> dict[str, Any]:
    template = copy.deepcopy((rs.get("spec") or {}).get("template") or {})
    meta = template.get("metadata") or {}
    md = rs["metadata"]
    metadata: dict[str, Any] = {
        "generateName": f"{md['name']}-",
        "namespace": md.get("namespace", "default"),
        "labels": dict(meta.get("labels") or {}),
        "ownerReferences": [owner_reference(rs, "ReplicaSet")],
    }
    if meta.get("annotations"):
        metadata["annotations"] = dict(meta["annotations"])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": template.get("spec")}


def _deletion_rank(pod: Mapping[str, Any]) -> tuple[int, int, int, str]:
    """Lower ranks go first, as controller.ActivePods orders them for deletion."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    phase_rank = {"Pending": 0, "Unknown": 1, "Running": 2}.get(status.get("phase", ""), 0)
    ready = _ready_since(pod)
    # Among ready pods, the one ready for the shortest time goes first (reverse time order).
    recent = "".join(chr(0x10FFFF - ord(ch)) for ch in ready) if ready else ""
    return (1 if spec.get("nodeName") else 0, phase_rank, 0 if ready is None else 1, recent)


def reconcile(
    rs: Mapping[str, Any], pods: list[dict[str, Any]], now: datetime
) -> ReplicaSetActions:
    """The next step for ``rs`` given the pods it controls."""
    spec = rs.get("spec") or {}
    wanted = int(spec.get("replicas", 1))
    actions = ReplicaSetActions()
    active = [p for p in pods if is_active(p)]
    if not rs["metadata"].get("deletionTimestamp"):
        if len(active) < wanted:
            actions.create_pods = [build_pod(rs) for _ in range(wanted - len(active))]
        elif len(active) > wanted:
            doomed = sorted(active, key=_deletion_rank)[: len(active) - wanted]
            actions.delete_pods = [p["metadata"]["name"] for p in doomed]
    actions.status, actions.recheck_after = replicaset_status(rs, active, now)
    return actions


def replicaset_status(
    rs: Mapping[str, Any], active: list[dict[str, Any]], now: datetime
) -> tuple[dict[str, Any], float | None]:
    spec = rs.get("spec") or {}
    min_ready = int(spec.get("minReadySeconds", 0))
    selector = (spec.get("selector") or {}).get("matchLabels") or {}
    template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    labels_wanted = {**selector, **template_labels}
    ready = available = 0
    wait: float | None = None
    for pod in active:
        remaining = available_in(pod, min_ready, now)
        if remaining is None:
            continue
        ready += 1
        if remaining <= 0:
            available += 1
        else:
            wait = remaining if wait is None else min(wait, remaining)
    labelled = sum(
        1
        for p in active
        if all((p["metadata"].get("labels") or {}).get(k) == v for k, v in labels_wanted.items())
    )
    status = {
        "replicas": len(active),
        "fullyLabeledReplicas": labelled,
        "readyReplicas": ready,
        "availableReplicas": available,
        "observedGeneration": rs["metadata"].get("generation", 1),
    }
    return status, wait
