"""Runs :mod:`deployment` and :mod:`replicaset` decisions against the store.

Two level-based loops as in kube-controller-manager: the ReplicaSet controller keeps each
ReplicaSet's pods and status, the Deployment controller keeps each Deployment's ReplicaSets and
status. Ownership is found from controller ownerReferences seen in watch events (no adoption of
orphans by selector).
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime
from typing import Any

from nemotron_sim.apiserver.errors import ApiError
from nemotron_sim.apiserver.store import Store
from nemotron_sim.controllers import deployment, replicaset
from nemotron_sim.controllers.kinds import DEPLOYMENTS, PODS, REPLICASETS
from nemotron_sim.controllers.runtime import EventRecorder, WorkQueue, create_if_absent, involved
from nemotron_sim.kubeapi.resources import WatchEvent

Key = tuple[str, str]


def _controller_owner(obj: dict[str, Any], kind: str) -> str | None:
    for owner in obj.get("metadata", {}).get("ownerReferences") or []:
        if owner.get("controller") and owner.get("kind") == kind:
            return str(owner.get("name", ""))
    return None


class _Index:
    """Names of the objects each owner controls, kept from watch events."""

    def __init__(self) -> None:
        self.owned: dict[Key, set[str]] = {}

    def note(self, event: WatchEvent, kind: str) -> Key | None:
        owner = _controller_owner(event.obj, kind)
        if owner is None:
            return None
        md = event.obj.get("metadata", {})
        key = (md.get("namespace", ""), owner)
        names = self.owned.setdefault(key, set())
        if event.type == "DELETED":
            names.discard(md.get("name", ""))
        else:
            names.add(md.get("name", ""))
        return key


class DeploymentController:
    def __init__(self, store: Store, recorder: EventRecorder) -> None:
        self._store = store
        self._recorder = recorder
        self.deployments: WorkQueue[Key] = WorkQueue("deployments", self.sync_deployment)
        self.replicasets: WorkQueue[Key] = WorkQueue("replicasets", self.sync_replicaset)
        self._pods = _Index()
        self._replica_sets = _Index()

    @property
    def queues(self) -> list[WorkQueue[Key]]:
        return [self.deployments, self.replicasets]

    def observe(self, event: WatchEvent) -> None:
        md = event.obj.get("metadata", {})
        key = (md.get("namespace", ""), md.get("name", ""))
        if event.key == DEPLOYMENTS:
            self.deployments.add(key)
        elif event.key == REPLICASETS:
            self.replicasets.add(key)
            owner = self._replica_sets.note(event, "Deployment")
            if owner is not None:
                self.deployments.add(owner)
        elif event.key == PODS:
            owner = self._pods.note(event, "ReplicaSet")
            if owner is not None:
                self.replicasets.add(owner)
                rs = self._store.peek(REPLICASETS, *owner)
                deploy = None if rs is None else _controller_owner(rs, "Deployment")
                if deploy is not None:  # Recreate waits for old pods to be gone
                    self.deployments.add((owner[0], deploy))

    def _later(self, queue: WorkQueue[Key], key: Key, seconds: float | None) -> None:
        if seconds is not None:
            asyncio.get_running_loop().call_later(seconds + 0.05, queue.add, key)

    def _owned(self, index: _Index, key: Key, resource: Any, kind: str, uid: str) -> list[Any]:
        found = []
        for name in sorted(index.owned.get(key, ())):
            obj = self._store.peek(resource, key[0], name)
            owners = (obj or {}).get("metadata", {}).get("ownerReferences") or []
            if obj is not None and any(
                o.get("uid") == uid and o.get("kind") == kind for o in owners
            ):
                found.append(obj)
        return found

    # --- ReplicaSets ------------------------------------------------------------------------

    def sync_replicaset(self, key: Key) -> None:
        rs = self._store.peek(REPLICASETS, *key)
        if rs is None:
            self._pods.owned.pop(key, None)
            return
        pods = self._owned(self._pods, key, PODS, "ReplicaSet", rs["metadata"].get("uid", ""))
        actions = replicaset.reconcile(rs, pods, datetime.now(UTC))
        ref = involved(rs, "apps/v1", "ReplicaSet")
        for pod in actions.create_pods:
            created = self._store.create(PODS, pod)
            self._pods.owned.setdefault(key, set()).add(created["metadata"]["name"])
            self._event(ref, "SuccessfulCreate", f"Created pod: {created['metadata']['name']}")
        for name in actions.delete_pods:
            if self._store.delete(PODS, key[0], name) is not None:
                self._event(ref, "SuccessfulDelete", f"Deleted pod: {name}")
        self._write_status(REPLICASETS, rs, actions.status)
        self._later(self.replicasets, key, actions.recheck_after)

    # --- Deployments ------------------------------------------------------------------------

    def sync_deployment(self, key: Key) -> None:
        deploy = self._store.peek(DEPLOYMENTS, *key)
        if deploy is None:
            self._replica_sets.owned.pop(key, None)
            return
        uid = deploy["metadata"].get("uid", "")
        owned = self._owned(self._replica_sets, key, REPLICASETS, "Deployment", uid)
        pods = {
            rs["metadata"]["name"]: self._owned(
                self._pods,
                (key[0], rs["metadata"]["name"]),
                PODS,
                "ReplicaSet",
                rs["metadata"].get("uid", ""),
            )
            for rs in owned
        }
        actions = deployment.reconcile(deploy, owned, pods, datetime.now(UTC))
        ref = involved(deploy, "apps/v1", "Deployment")
        if actions.create is not None:
            name = actions.create["metadata"]["name"]
            if create_if_absent(self._store, REPLICASETS, actions.create):
                self._replica_sets.owned.setdefault(key, set()).add(name)
                replicas = actions.create["spec"]["replicas"]
                self._event(
                    ref, "ScalingReplicaSet", f"Scaled up replica set {name} from 0 to {replicas}"
                )
        for name, patch in actions.patches.items():
            old = self._store.peek(REPLICASETS, key[0], name)
            if old is None:
                continue
            self._store.merge_patch(REPLICASETS, key[0], name, patch)
            self._scaling_event(ref, name, old, patch)
        for name in actions.delete:
            self._store.delete(REPLICASETS, key[0], name)
        if actions.annotations:
            patch = {"metadata": {"annotations": actions.annotations}}
            deploy = self._store.merge_patch(DEPLOYMENTS, *key, patch)
        self._write_status(DEPLOYMENTS, deploy, actions.status)
        self._later(self.deployments, key, actions.recheck_after)

    def _scaling_event(
        self, ref: dict[str, Any], name: str, old: dict[str, Any], patch: dict[str, Any]
    ) -> None:
        before = int((old.get("spec") or {}).get("replicas", 1))
        after = (patch.get("spec") or {}).get("replicas")
        if after is None or after == before:
            return
        verb = "up" if after > before else "down"
        self._event(
            ref, "ScalingReplicaSet", f"Scaled {verb} replica set {name} from {before} to {after}"
        )

    def _write_status(self, resource: Any, obj: dict[str, Any], status: dict[str, Any]) -> None:
        if not status or (obj.get("status") or {}) == {**(obj.get("status") or {}), **status}:
            return
        md = obj["metadata"]
        self._store.merge_patch(
            resource, md.get("namespace"), md["name"], {"status": status}, subresource="status"
        )

    def _event(self, ref: dict[str, Any], reason: str, message: str) -> None:
        component = (
            "deployment-controller" if ref["kind"] == "Deployment" else "replicaset-controller"
        )
        with contextlib.suppress(ApiError):
            self._recorder.record(component, ref, reason, message)
