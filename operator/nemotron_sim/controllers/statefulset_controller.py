"""Runs :mod:`statefulset` decisions against the store, and binds PersistentVolumeClaims.

Claims become ``Bound`` at once, with ``spec.volumeName`` ``pvc-<uid>`` as a dynamic
provisioner would name the volume; no PersistentVolume object is created (nothing reads one),
and there is no ``WaitForFirstConsumer`` delay.
"""

from __future__ import annotations

import contextlib
from typing import Any

from nemotron_sim.apiserver.errors import ApiError
from nemotron_sim.apiserver.store import Store
from nemotron_sim.controllers import statefulset
from nemotron_sim.controllers.kinds import CLAIMS, PODS, STATEFULSETS
from nemotron_sim.controllers.runtime import (
    EventRecorder,
    WorkQueue,
    create_if_absent,
    involved,
)
from nemotron_sim.kubeapi.resources import WatchEvent

COMPONENT = "statefulset-controller"
Key = tuple[str, str]


def _controller_owner(obj: dict[str, Any], kind: str) -> str | None:
    for owner in obj.get("metadata", {}).get("ownerReferences") or []:
        if owner.get("controller") and owner.get("kind") == kind:
            return str(owner.get("name", ""))
    return None


def _bound(claim: dict[str, Any]) -> bool:
    return (claim.get("status") or {}).get("phase") == "Bound"


class StatefulSetController:
    def __init__(self, store: Store, recorder: EventRecorder) -> None:
        self._store = store
        self._recorder = recorder
        self.queue: WorkQueue[Key] = WorkQueue("statefulsets", self.reconcile)
        self.claims: WorkQueue[Key] = WorkQueue("claims", self.bind_claim)
        # Pod names per StatefulSet, from watch events: finds pods beyond spec.replicas.
        self._owned: dict[Key, set[str]] = {}
        # The update revision per StatefulSet, with the stored template it hashes: stored
        # objects are never changed in place, so the same template object has the same hash.
        self._revisions: dict[Key, tuple[Any, str]] = {}

    def observe(self, event: WatchEvent) -> None:
        md = event.obj.get("metadata", {})
        namespace, name = md.get("namespace", ""), md.get("name", "")
        if event.key == STATEFULSETS:
            self.queue.add((namespace, name))
        elif event.key == PODS:
            owner = _controller_owner(event.obj, "StatefulSet")
            if owner is None:
                return
            names = self._owned.setdefault((namespace, owner), set())
            if event.type == "DELETED":
                names.discard(name)
            else:
                names.add(name)
            self.queue.add((namespace, owner))
        elif event.key == CLAIMS and event.type != "DELETED" and not _bound(event.obj):
            self.claims.add((namespace, name))

    def reconcile(self, key: Key) -> None:
        namespace, name = key
        sts = self._store.peek(STATEFULSETS, namespace, name)
        if sts is None:
            self._owned.pop(key, None)
            self._revisions.pop(key, None)
            return
        if sts["metadata"].get("deletionTimestamp"):
            return
        spec = sts.get("spec") or {}
        ordinals = statefulset.wanted_ordinals(sts)
        names = self._owned.get(key, set()) | {f"{name}-{i}" for i in ordinals}
        pods = [p for n in sorted(names) if (p := self._store.peek(PODS, namespace, n))]
        claims = {
            claim
            for template in spec.get("volumeClaimTemplates") or []
            for i in ordinals
            if self._store.peek(
                CLAIMS,
                namespace,
                claim := statefulset.claim_name(template["metadata"]["name"], name, i),
            )
        }
        actions = statefulset.reconcile(sts, pods, claims, revision=self._revision(key, sts))
        self._apply(sts, actions)

    def _revision(self, key: Key, sts: dict[str, Any]) -> str:
        template = sts.get("spec", {}).get("template")
        known = self._revisions.get(key)
        if known is None or known[0] is not template:
            known = (template, statefulset.update_revision(sts))
            self._revisions[key] = known
        return known[1]

    def _apply(self, sts: dict[str, Any], actions: statefulset.Actions) -> None:
        md = sts["metadata"]
        namespace = md.get("namespace", "")
        ref = involved(sts, "apps/v1", "StatefulSet")
        for claim in actions.create_claims:
            if create_if_absent(self._store, CLAIMS, claim):
                self._event(ref, "SuccessfulCreate", claim, "Claim")
        for pod in actions.create_pods:
            if create_if_absent(self._store, PODS, pod):
                self._event(ref, "SuccessfulCreate", pod, "Pod")
        for pod_name in actions.delete_pods:
            if self._store.delete(PODS, namespace, pod_name) is not None:
                self._event(ref, "SuccessfulDelete", {"metadata": {"name": pod_name}}, "Pod")
        if (sts.get("status") or {}) != {**(sts.get("status") or {}), **actions.status}:
            self._store.merge_patch(
                STATEFULSETS,
                namespace,
                md["name"],
                {"status": actions.status},
                subresource="status",
                copy=False,
            )

    def _event(self, ref: dict[str, Any], reason: str, obj: dict[str, Any], what: str) -> None:
        verb = "create" if reason == "SuccessfulCreate" else "delete"
        name = obj["metadata"]["name"]
        message = f"{verb} {what} {name} in StatefulSet {ref['name']} successful"
        with contextlib.suppress(ApiError):
            self._recorder.record(COMPONENT, ref, reason, message)

    def bind_claim(self, key: Key) -> None:
        claim = self._store.peek(CLAIMS, *key)
        if claim is None or claim["metadata"].get("deletionTimestamp"):
            return
        if (claim.get("status") or {}).get("phase") == "Bound":
            return
        spec = claim.get("spec") or {}
        volume = spec.get("volumeName") or f"pvc-{claim['metadata'].get('uid', '')}"
        if not spec.get("volumeName"):
            self._store.merge_patch(
                CLAIMS,
                *key,
                {
                    "metadata": {"annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
                    "spec": {"volumeName": volume},
                },
            )
        storage = ((spec.get("resources") or {}).get("requests") or {}).get("storage", "0")
        status = {
            "phase": "Bound",
            "accessModes": spec.get("accessModes") or ["ReadWriteOnce"],
            "capacity": {"storage": storage},
        }
        self._store.merge_patch(CLAIMS, *key, {"status": status}, subresource="status", copy=False)
