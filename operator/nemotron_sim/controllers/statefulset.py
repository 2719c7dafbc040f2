"""StatefulSet decisions: which pods and claims to create or delete, and the status to report.

Follows pkg/controller/statefulset in spirit: pods ``<sts>-<ordinal>``, OrderedReady creates one
pod at a time in ordinal order and waits for it to be Running and Ready, scale-down and rolling
update go from the highest ordinal down, one pod at a time; ``Parallel`` creates and deletes
without waiting. Revisions are a hash of the pod template (``<sts>-<hash>``), stored on pods in
the ``controller-revision-hash`` label. Simplified: no ControllerRevision objects (so a pod
below ``partition`` that is recreated gets the update revision), no ``minReadySeconds``, and only
``persistentVolumeClaimRetentionPolicy.whenDeleted`` is honoured.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

REVISION_LABEL = "controller-revision-hash"
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"


@dataclass
class Actions:
    """What one reconcile pass of a StatefulSet wants done, in this order."""

    create_claims: list[dict[str, Any]] = field(default_factory=list)
    create_pods: list[dict[str, Any]] = field(default_factory=list)
    delete_pods: list[str] = field(default_factory=list)
    status: dict[str, Any] = field(default_factory=dict)


def wanted_ordinals(sts: Mapping[str, Any]) -> range:
    """``spec.ordinals.start`` .. start + replicas - 1 (StatefulSetStartOrdinal, GA in 1.31)."""
    spec = sts.get("spec") or {}
    start = int((spec.get("ordinals") or {}).get("start", 0))
    return range(start, start + int(spec.get("replicas", 1)))


def update_revision(sts: Mapping[str, Any]) -> str:
    template = sts.get("spec", {}).get("template", {})
    digest = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()
    return f"{sts['metadata']['name']}-{digest[:10]}"


def ordinal_of(sts_name: str, pod_name: str) -> int | None:
    prefix = f"{sts_name}-"
    suffix = pod_name.removeprefix(prefix)
    if suffix == pod_name or not suffix.isdigit():
        return None
    return int(suffix)


def owner_reference(sts: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "name": sts["metadata"]["name"],
        "uid": sts["metadata"].get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def claim_name(template_name: str, sts_name: str, ordinal: int) -> str:
    return f"{template_name}-{sts_name}-{ordinal}"


def build_claim(
    sts: Mapping[str, Any], template: Mapping[str, Any], ordinal: int
) -> dict[str, Any]:
    meta = template.get("metadata") or {}
    spec = sts.get("spec", {})
    labels = {**(spec.get("selector", {}).get("matchLabels") or {}), **(meta.get("labels") or {})}
    metadata: dict[str, Any] = {
        "name": claim_name(meta.get("name", ""), sts["metadata"]["name"], ordinal),
        "namespace": sts["metadata"].get("namespace", "default"),
        "labels": labels,
    }
    if meta.get("annotations"):
        metadata["annotations"] = dict(meta["annotations"])
    policy = spec.get("persistentVolumeClaimRetentionPolicy") or {}
    if policy.get("whenDeleted") == "Delete":
        metadata["ownerReferences"] = [owner_reference(sts)]
    claim_spec = copy.deepcopy(template.get("spec") or {})
    claim_spec.setdefault("volumeMode", "Filesystem")
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": metadata,
        "spec": claim_spec,
    }


def build_pod(sts: Mapping[str, Any], ordinal: int, revision: str) -> dict[str, Any]:
    spec = sts.get("spec", {})
    name = f"{sts['metadata']['name']}-{ordinal}"
    template = copy.deepcopy(spec.get("template") or {})
    meta = template.get("metadata") or {}
    labels = {
        **(meta.get("labels") or {}),
        REVISION_LABEL: revision,
        POD_NAME_LABEL: name,
        POD_INDEX_LABEL: str(ordinal),
    }
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": sts["metadata"].get("namespace", "default"),
        "labels": labels,
        "ownerReferences": [owner_reference(sts)],
    }
    if meta.get("annotations"):
        metadata["annotations"] = meta["annotations"]
    pod_spec = template.get("spec") or {}
    pod_spec["hostname"] = name
    if spec.get("serviceName"):
        pod_spec["subdomain"] = spec["serviceName"]
    claims = {
        t.get("metadata", {}).get("name", ""): claim_name(
            t.get("metadata", {}).get("name", ""), sts["metadata"]["name"], ordinal
        )
        for t in spec.get("volumeClaimTemplates") or []
    }
    volumes = [v for v in pod_spec.get("volumes") or [] if v.get("name") not in claims]
    volumes.extend(
        {"name": volume, "persistentVolumeClaim": {"claimName": claim}}
        for volume, claim in claims.items()
    )
    if volumes:
        pod_spec["volumes"] = volumes
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": pod_spec}


def is_terminating(pod: Mapping[str, Any]) -> bool:
    return bool(pod.get("metadata", {}).get("deletionTimestamp"))


def is_ready(pod: Mapping[str, Any]) -> bool:
    status = pod.get("status") or {}
    if status.get("phase") != "Running" or is_terminating(pod):
        return False
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )


def _revision(pod: Mapping[str, Any]) -> str:
    return str((pod.get("metadata", {}).get("labels") or {}).get(REVISION_LABEL, ""))


@dataclass
class _Pass:
    """One reconcile pass over a StatefulSet and its pods by ordinal."""

    sts: Mapping[str, Any]
    by_ordinal: dict[int, dict[str, Any]]
    revision: str
    actions: Actions = field(default_factory=Actions)

    @property
    def name(self) -> str:
        return str(self.sts["metadata"]["name"])

    @property
    def spec(self) -> Mapping[str, Any]:
        spec: Mapping[str, Any] = self.sts.get("spec", {})
        return spec

    @property
    def ordinals(self) -> range:
        return wanted_ordinals(self.sts)

    @property
    def ordered(self) -> bool:
        return bool(self.spec.get("podManagementPolicy", "OrderedReady") != "Parallel")


def reconcile(
    sts: Mapping[str, Any],
    pods: list[dict[str, Any]],
    existing_claims: set[str],
    *,
    revision: str | None = None,
) -> Actions:
    """Decide the next step for ``sts`` given its pods and the claim names in its namespace
    (``revision``: its ``update_revision``, if the caller knows it already)."""
    name = sts["metadata"]["name"]
    by_ordinal: dict[int, dict[str, Any]] = {}
    for pod in pods:
        ordinal = ordinal_of(name, pod["metadata"]["name"])
        if ordinal is not None:
            by_ordinal[ordinal] = pod
    step = _Pass(sts, by_ordinal, revision or update_revision(sts))
    healthy = _create_missing(step, existing_claims)
    condemned = sorted((o for o in by_ordinal if o not in step.ordinals), reverse=True)
    if condemned and (healthy or not step.ordered):
        doomed = condemned[:1] if step.ordered else condemned
        step.actions.delete_pods.extend(
            f"{name}-{o}" for o in doomed if not is_terminating(by_ordinal[o])
        )
    elif healthy and not condemned:
        _roll_one(step)
    step.actions.status = _status(sts, by_ordinal, len(step.ordinals), step.revision)
    return step.actions


def _create_missing(step: _Pass, existing_claims: set[str]) -> bool:
    """Queue pods (and their claims) for missing ordinals; True when all wanted pods are ready."""
    actions = step.actions
    healthy = True
    for ordinal in step.ordinals:
        pod = step.by_ordinal.get(ordinal)
        if pod is not None and (pod.get("status") or {}).get("phase") == "Failed":
            # A failed pod is deleted and recreated, as the real controller does.
            if not is_terminating(pod):
                actions.delete_pods.append(pod["metadata"]["name"])
            healthy = False
        elif pod is None:
            for template in step.spec.get("volumeClaimTemplates") or []:
                template_name = template.get("metadata", {}).get("name", "")
                if claim_name(template_name, step.name, ordinal) not in existing_claims:
                    actions.create_claims.append(build_claim(step.sts, template, ordinal))
            actions.create_pods.append(build_pod(step.sts, ordinal, step.revision))
            healthy = False
        elif not is_ready(pod):
            healthy = False
        if not healthy and step.ordered:
            break
    return healthy


def _roll_one(step: _Pass) -> None:
    strategy = step.spec.get("updateStrategy") or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return  # OnDelete: pods are replaced only when someone deletes them
    partition = int((strategy.get("rollingUpdate") or {}).get("partition", 0))
    for ordinal in reversed(step.ordinals):
        if ordinal < partition:
            return
        if _revision(step.by_ordinal[ordinal]) != step.revision:
            step.actions.delete_pods.append(f"{step.name}-{ordinal}")
            return


def _status(
    sts: Mapping[str, Any], by_ordinal: dict[int, dict[str, Any]], replicas: int, revision: str
) -> dict[str, Any]:
    previous = sts.get("status") or {}
    current = previous.get("currentRevision") or revision
    live = [p for p in by_ordinal.values() if not is_terminating(p)]
    ready = sum(1 for p in live if is_ready(p))
    updated = sum(1 for p in live if _revision(p) == revision)
    if updated == replicas and len(live) == replicas:
        current = revision  # the rollout finished: the update revision becomes current
    return {
        "observedGeneration": sts["metadata"].get("generation", 1),
        "replicas": len(live),
        "readyReplicas": ready,
        "availableReplicas": ready,
        "currentReplicas": sum(1 for p in live if _revision(p) == current),
        "updatedReplicas": updated,
        "currentRevision": current,
        "updateRevision": revision,
        "collisionCount": previous.get("collisionCount", 0),
    }
