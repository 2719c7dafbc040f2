"""Deployment decisions, after pkg/controller/deployment of kube-controller-manager.

A Deployment owns ReplicaSets ``<deploy>-<pod-template-hash>``; the one whose template equals
the Deployment's (ignoring the hash label) is the *new* one. RollingUpdate scales it up within
``replicas + maxSurge`` and old ones down while ``replicas - maxUnavailable`` stay available;
Recreate scales old ones to 0, waits until their pods are gone, then scales the new one up.
Revisions live in the ``deployment.kubernetes.io/revision`` annotation (``kubectl rollout
history/undo`` read them). Status and the ``Available``/``Progressing`` conditions are computed
as ``syncRolloutStatus`` does. One pass takes one step; the controller runs it again on the next
event. Not simulated: proportional scaling of several live ReplicaSets during a rollout.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from nemotron_sim.controllers.deployment_conditions import (
    is_complete,
    is_progressing,
    parse_time,
    replicas_of,
    set_condition,
    status_count,
)
from nemotron_sim.controllers.replicaset import POD_TEMPLATE_HASH, owner_reference

REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery/pkg/util/rand
_TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
RS = dict[str, Any]


@dataclass
class DeploymentActions:
    """What one pass wants: create a ReplicaSet, merge-patch some, delete old ones."""

    create: RS | None = None
    patches: dict[str, dict[str, Any]] = field(default_factory=dict)
    delete: list[str] = field(default_factory=list)
    annotations: dict[str, str] = field(default_factory=dict)  # for the Deployment itself
    status: dict[str, Any] = field(default_factory=dict)
    recheck_after: float | None = None  # the progress deadline, if a rollout is under way


def template_hash(template: Mapping[str, Any], collision_count: int = 0) -> str:
    """FNV-32a of the template, encoded with the safe alphabet as ``ComputeHash`` does."""
    data = json.dumps(_pruned(template), sort_keys=True, separators=(",", ":")).encode()
    if collision_count:
        data += str(collision_count).encode()
    value = 0x811C9DC5
    for byte in data:
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return "".join(_SAFE_ALPHABET[ord(ch) % len(_SAFE_ALPHABET)] for ch in str(value))


def _pruned(value: Any) -> Any:
    """Without nulls, empty strings and empty maps/lists: a template as Go serializes it (with
    ``creationTimestamp: null``, ``resources: {}``, ``omitempty`` dropping ``value: ""``, as
    ``kubectl rollout undo`` sends it) compares equal to the same template written by hand."""
    if isinstance(value, dict):
        pruned = {k: _pruned(v) for k, v in value.items()}
        return {k: v for k, v in pruned.items() if v not in (None, "", {}, [])}
    if isinstance(value, list):
        return [_pruned(v) for v in value]
    return value


def _without_hash(template: Mapping[str, Any]) -> dict[str, Any]:
    clean: dict[str, Any] = _pruned(copy.deepcopy(dict(template)))
    labels = (clean.get("metadata") or {}).get("labels")
    if labels:
        labels.pop(POD_TEMPLATE_HASH, None)
    return _pruned(clean)  # type: ignore[no-any-return]


def _revision(rs: Mapping[str, Any]) -> int:
    text = ((rs.get("metadata") or {}).get("annotations") or {}).get(REVISION, "0")
    return int(text) if str(text).isdigit() else 0


def scaled_value(value: Any, total: int, *, round_up: bool) -> int:
    if isinstance(value, str) and value.endswith("%"):
        share = total * int(value[:-1]) / 100
        return math.ceil(share) if round_up else math.floor(share)
    return int(value)


def fenceposts(deploy: Mapping[str, Any]) -> tuple[int, int]:
    """(maxSurge, maxUnavailable) as absolute pod counts; both 0 means unavailable 1."""
    replicas = replicas_of(deploy)
    rolling = ((deploy.get("spec") or {}).get("strategy") or {}).get("rollingUpdate") or {}
    surge = scaled_value(rolling.get("maxSurge", "25%"), replicas, round_up=True)
    unavailable = scaled_value(rolling.get("maxUnavailable", "25%"), replicas, round_up=False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def is_recreate(deploy: Mapping[str, Any]) -> bool:
    return ((deploy.get("spec") or {}).get("strategy") or {}).get("type") == "Recreate"


def max_unavailable(deploy: Mapping[str, Any]) -> int:
    replicas = replicas_of(deploy)
    if is_recreate(deploy) or replicas == 0:
        return 0
    return min(fenceposts(deploy)[1], replicas)


def new_replica_set(deploy: Mapping[str, Any], replicas: int, revision: int) -> RS:
    md = deploy["metadata"]
    spec = deploy.get("spec") or {}
    collision = int((deploy.get("status") or {}).get("collisionCount") or 0)
    pod_hash = template_hash(spec.get("template") or {}, collision)
    template = copy.deepcopy(spec.get("template") or {})
    template.setdefault("metadata", {}).setdefault("labels", {})[POD_TEMPLATE_HASH] = pod_hash
    selector = copy.deepcopy(spec.get("selector") or {})
    selector.setdefault("matchLabels", {})[POD_TEMPLATE_HASH] = pod_hash
    surge = 0 if is_recreate(deploy) else fenceposts(deploy)[0]
    annotations = {
        **{k: v for k, v in (md.get("annotations") or {}).items() if not _is_rollout_key(k)},
        REVISION: str(revision),
        DESIRED_REPLICAS: str(replicas_of(deploy)),
        MAX_REPLICAS: str(replicas_of(deploy) + surge),
    }
    rs_spec: dict[str, Any] = {"replicas": replicas, "selector": selector, "template": template}
    if spec.get("minReadySeconds"):
        rs_spec["minReadySeconds"] = spec["minReadySeconds"]
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": f"{md['name']}-{pod_hash}",
            "namespace": md.get("namespace", "default"),
            "labels": dict(template["metadata"]["labels"]),
            "annotations": annotations,
            "ownerReferences": [owner_reference(deploy, "Deployment")],
        },
        "spec": rs_spec,
    }


def _is_rollout_key(key: str) -> bool:
    return key.startswith("deployment.kubernetes.io/") or key.startswith("kubectl.kubernetes.io/")


@dataclass
class _Pass:
    deploy: Mapping[str, Any]
    new: RS | None
    old: list[RS]
    now: datetime
    actions: DeploymentActions = field(default_factory=DeploymentActions)

    def all(self) -> list[RS]:
        return [*([self.new] if self.new is not None else []), *self.old]

    def scale(self, rs: RS, replicas: int) -> None:
        name = rs["metadata"]["name"]
        patch = self.actions.patches.setdefault(name, {"spec": {}})
        patch["spec"]["replicas"] = replicas
        rs["spec"] = {**rs.get("spec", {}), "replicas": replicas}


def split(deploy: Mapping[str, Any], replica_sets: list[RS]) -> tuple[RS | None, list[RS]]:
    """(the new ReplicaSet or None, the old ones oldest first); copies, free to change."""
    wanted = _without_hash((deploy.get("spec") or {}).get("template") or {})
    owned = sorted(
        (copy.deepcopy(rs) for rs in replica_sets),
        key=lambda rs: (rs["metadata"].get("creationTimestamp", ""), rs["metadata"]["name"]),
    )
    new = next((rs for rs in owned if _without_hash(rs["spec"]["template"]) == wanted), None)
    return new, [rs for rs in owned if rs is not new]


def reconcile(
    deploy: Mapping[str, Any],
    replica_sets: list[RS],
    pods_by_rs: Mapping[str, list[dict[str, Any]]],
    now: datetime,
) -> DeploymentActions:
    """One sync of ``deploy`` given the ReplicaSets it controls and their pods."""
    new, old = split(deploy, replica_sets)
    step = _Pass(deploy, new, old, now)
    spec = deploy.get("spec") or {}
    if (deploy.get("metadata") or {}).get("deletionTimestamp"):
        return step.actions
    if not spec.get("paused"):
        if is_recreate(deploy):
            _recreate(step, pods_by_rs)
        else:
            _rolling(step)
        _sync_revision(step)
        if step.new is not None and is_complete(deploy, _counts(step)):
            _cleanup(step)
    _finish_status(step)
    return step.actions


def _next_revision(step: _Pass) -> int:
    return max((_revision(rs) for rs in step.old), default=0) + 1


def _create_new(step: _Pass, replicas: int) -> None:
    step.new = new_replica_set(step.deploy, replicas, _next_revision(step))
    step.actions.create = copy.deepcopy(step.new)
    step.new.setdefault("status", {})


def _rolling(step: _Pass) -> None:
    replicas = replicas_of(step.deploy)
    surge, _ = fenceposts(step.deploy)
    current = sum(replicas_of(rs) for rs in step.all())
    if step.new is None:
        room = max(0, min(replicas + surge - current, replicas))
        _create_new(step, room)
        return
    have = replicas_of(step.new)
    if have > replicas:
        step.scale(step.new, replicas)
        return
    if have < replicas and current < replicas + surge:
        step.scale(step.new, have + min(replicas + surge - current, replicas - have))
        return
    _scale_down_old(step)


def _scale_down_old(step: _Pass) -> None:
    if step.new is None or not any(replicas_of(rs) for rs in step.old):
        return
    min_available = replicas_of(step.deploy) - max_unavailable(step.deploy)
    new_unavailable = replicas_of(step.new) - status_count(step.new, "availableReplicas")
    total = sum(replicas_of(rs) for rs in step.all())
    budget = total - min_available - new_unavailable
    if budget <= 0:
        return
    for rs in step.old:  # first the pods that are not available anyway
        unhealthy = replicas_of(rs) - status_count(rs, "availableReplicas")
        cut = min(budget, max(0, unhealthy))
        if cut > 0:
            step.scale(rs, replicas_of(rs) - cut)
            budget -= cut
    available = sum(status_count(rs, "availableReplicas") for rs in step.all())
    spare = min(budget, available - min_available)
    for rs in step.old:
        if spare <= 0:
            break
        cut = min(replicas_of(rs), spare)
        if cut > 0:
            step.scale(rs, replicas_of(rs) - cut)
            spare -= cut


def _recreate(step: _Pass, pods_by_rs: Mapping[str, list[dict[str, Any]]]) -> None:
    scaled = False
    for rs in step.old:
        if replicas_of(rs) != 0:
            step.scale(rs, 0)
            scaled = True
    running = any(
        (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
        for rs in step.old
        for pod in pods_by_rs.get(rs["metadata"]["name"], [])
    )
    if scaled or running:
        return
    if step.new is None:
        _create_new(step, replicas_of(step.deploy))
    elif replicas_of(step.new) != replicas_of(step.deploy):
        step.scale(step.new, replicas_of(step.deploy))


def _sync_revision(step: _Pass) -> None:
    if step.new is None:
        return
    wanted = _next_revision(step)
    current = _revision(step.new)
    md = step.new["metadata"]
    if step.actions.create is None and current < wanted:
        annotations = {REVISION: str(wanted)}
        if current:
            history = (md.get("annotations") or {}).get(REVISION_HISTORY)
            annotations[REVISION_HISTORY] = f"{history},{current}" if history else str(current)
        patch = step.actions.patches.setdefault(md["name"], {})
        patch["metadata"] = {"annotations": annotations}
        current = wanted
    annotations = (step.deploy.get("metadata") or {}).get("annotations") or {}
    if annotations.get(REVISION) != str(current):
        step.actions.annotations[REVISION] = str(current)


def _cleanup(step: _Pass) -> None:
    limit = int((step.deploy.get("spec") or {}).get("revisionHistoryLimit", 10))
    idle = [
        rs
        for rs in step.old
        if replicas_of(rs) == 0
        and status_count(rs, "replicas") == 0
        and not rs["metadata"].get("deletionTimestamp")
        and rs["metadata"]["name"] not in step.actions.patches
    ]
    idle.sort(key=_revision)
    step.actions.delete = [rs["metadata"]["name"] for rs in idle[: max(0, len(idle) - limit)]]


def _counts(step: _Pass) -> dict[str, int]:
    all_rs = step.all()
    total_spec = sum(replicas_of(rs) for rs in all_rs)
    available = sum(status_count(rs, "availableReplicas") for rs in all_rs)
    return {
        "replicas": sum(status_count(rs, "replicas") for rs in all_rs),
        "updatedReplicas": status_count(step.new, "replicas") if step.new is not None else 0,
        "readyReplicas": sum(status_count(rs, "readyReplicas") for rs in all_rs),
        "availableReplicas": available,
        "unavailableReplicas": max(0, total_spec - available),
    }


def _finish_status(step: _Pass) -> None:
    deploy, now = step.deploy, step.now
    counts = _counts(step)
    previous = deploy.get("status") or {}
    conditions = {c.get("type"): c for c in previous.get("conditions") or []}
    stamp = now.strftime(_TIME_FORMAT)
    if counts["availableReplicas"] >= replicas_of(deploy) - max_unavailable(deploy):
        available = ("True", "MinimumReplicasAvailable", "Deployment has minimum availability.")
    else:
        available = (
            "False",
            "MinimumReplicasUnavailable",
            "Deployment does not have minimum availability.",
        )
    set_condition(conditions, "Available", available, stamp)
    _progress_condition(step, conditions, counts, stamp)
    order = [
        conditions[k] for k in ("Available", "Progressing", "ReplicaFailure") if k in conditions
    ]
    status: dict[str, Any] = {
        "observedGeneration": (deploy.get("metadata") or {}).get("generation", 1),
        **counts,
        "conditions": order,
    }
    if previous.get("collisionCount"):
        status["collisionCount"] = previous["collisionCount"]
    step.actions.status = status


def _progress_condition(
    step: _Pass, conditions: dict[str, Any], counts: Mapping[str, int], stamp: str
) -> None:
    deploy = step.deploy
    spec = deploy.get("spec") or {}
    name = step.new["metadata"]["name"] if step.new is not None else ""
    if spec.get("paused"):
        set_condition(
            conditions,
            "Progressing",
            ("Unknown", "DeploymentPaused", "Deployment is paused"),
            stamp,
        )
        return
    current = conditions.get("Progressing")
    if step.actions.create is not None:
        text = f'Created new replica set "{name}"'
        set_condition(conditions, "Progressing", ("True", "NewReplicaSetCreated", text), stamp)
        return
    if current is None and step.new is not None:
        text = f'Found new replica set "{name}"'
        set_condition(conditions, "Progressing", ("True", "FoundNewReplicaSet", text), stamp)
        current = conditions["Progressing"]
    done = (
        counts["replicas"] == counts["updatedReplicas"]
        and current is not None
        and (current.get("reason") == "NewReplicaSetAvailable")
    )
    if done:
        return
    if is_complete(deploy, counts):
        text = f'ReplicaSet "{name}" has successfully progressed.'
        set_condition(conditions, "Progressing", ("True", "NewReplicaSetAvailable", text), stamp)
    elif is_progressing(deploy, counts) or step.actions.patches:
        text = f'ReplicaSet "{name}" is progressing.'
        set_condition(
            conditions, "Progressing", ("True", "ReplicaSetUpdated", text), stamp, touch=True
        )
    elif current is not None and current.get("status") == "True":
        deadline = int(spec.get("progressDeadlineSeconds", 600))
        updated = parse_time(current.get("lastUpdateTime"))
        if updated is None:
            return
        left = (updated + timedelta(seconds=deadline) - step.now).total_seconds()
        if left <= 0:
            text = f'ReplicaSet "{name}" has timed out progressing.'
            set_condition(
                conditions, "Progressing", ("False", "ProgressDeadlineExceeded", text), stamp
            )
        else:
            step.actions.recheck_after = left
