"""The garbage collector and the cascades of the store: owner references (Background,
Foreground, Orphan), namespace termination, a deleted CRD taking its objects along, and how a
delete marks an object (finalizers, a pod's grace period) instead of removing it.

Collection is synchronous: a dependent goes in the same call that removes its last owner, where
kube-controller-manager would take a moment. A mixin of :class:`Store`, split out for size.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from nemotron_sim.apiserver import lifecycle
from nemotron_sim.apiserver.objects import meta
from nemotron_sim.apiserver.resources import (
    NAMESPACE_KEY,
    Registry,
    ResourceInfo,
)
from nemotron_sim.kubeapi.resources import ResourceKey

Bucket = tuple[str, str]
Ref = tuple[Bucket, str, str]  # (bucket, namespace or "", name)


class GarbageCollection:
    resources: Registry
    _objects: dict[Bucket, dict[str, dict[str, dict[str, Any]]]]
    _uids: dict[str, Ref]
    _dependents: dict[str, set[Ref]]

    if TYPE_CHECKING:  # provided by Store, which mixes this class in

        def info(self, key: ResourceKey) -> ResourceInfo: ...

        def delete(
            self,
            key: ResourceKey,
            namespace: str | None,
            name: str,
            *,
            propagation: str | None = None,
            copy: bool = True,
        ) -> dict[str, Any] | None: ...

        def _commit(
            self, info: ResourceInfo, new: dict[str, Any], old: dict[str, Any] | None
        ) -> dict[str, Any]: ...

        def _remove(self, info: ResourceInfo, obj: dict[str, Any]) -> dict[str, Any]: ...

        def _current(self, info: ResourceInfo, obj: dict[str, Any]) -> dict[str, Any]: ...

    def _mark_or_remove(
        self,
        info: ResourceInfo,
        old: dict[str, Any],
        finalizers: list[str],
        grace: int | None,
    ) -> dict[str, Any]:
        md = meta(old)
        if grace:
            return self._delete_gracefully(info, old, finalizers, grace)
        if not finalizers:
            return self._remove(info, old)
        if md.get("deletionTimestamp"):
            return old
        marked = lifecycle.mark_deleted(old, finalizers)
        stored = self._commit(info, marked, old)
        if "foregroundDeletion" in finalizers:
            for ref in list(self._dependents.get(md["uid"], ())):
                self._delete_ref(ref)
            self._finish_foreground(md["uid"])
        return self._current(info, stored)

    def _delete_gracefully(
        self,
        info: ResourceInfo,
        old: dict[str, Any],
        finalizers: list[str],
        grace: int,
    ) -> dict[str, Any]:
        current = meta(old).get("deletionGracePeriodSeconds")
        if meta(old).get("deletionTimestamp") and (current is None or current <= grace):
            return old  # already terminating; a shorter grace period would cut it short
        marked = lifecycle.mark_deleted(old, finalizers, grace_seconds=grace)
        return self._current(info, self._commit(info, marked, old))

    def _index_owners(
        self, ref: Ref, old: dict[str, Any] | None, new: dict[str, Any] | None
    ) -> None:
        for owner in meta(old or {}).get("ownerReferences") or []:
            self._dependents.get(owner.get("uid", ""), set()).discard(ref)
        for owner in meta(new or {}).get("ownerReferences") or []:
            self._dependents.setdefault(owner.get("uid", ""), set()).add(ref)

    def _lookup(self, ref: Ref) -> tuple[ResourceInfo, dict[str, Any]] | None:
        obj = self._objects.get(ref[0], {}).get(ref[1], {}).get(ref[2])
        info = self.resources.storage_info(ref[0])
        return None if obj is None or info is None else (info, obj)

    def _delete_ref(self, ref: Ref, propagation: str = "Background") -> None:
        found = self._lookup(ref)
        if found is not None:
            info = found[0]
            self.delete(info.key, ref[1], ref[2], propagation=propagation, copy=False)

    def _collect_if_orphaned(self, ref: Ref) -> None:
        """The garbage collector: delete a dependent once none of its owners exists.

        An owner "exists" when an object of the referenced kind has the referenced uid, in the
        dependent's namespace unless the owner is cluster-scoped. A cluster-scoped dependent's
        reference to a namespaced kind (or to an unknown kind) cannot be resolved, and keeps the
        dependent, as in Kubernetes 1.20+.
        """
        found = self._lookup(ref)
        if found is None:
            return
        info, obj = found
        owners = meta(obj).get("ownerReferences") or []
        if owners and all(self._owner_absent(info, ref[1], o) for o in owners):
            self._delete_ref(ref)

    def _owner_absent(self, info: ResourceInfo, namespace: str, owner: dict[str, Any]) -> bool:
        owner_info = self.resources.by_kind(owner.get("apiVersion", ""), owner.get("kind", ""))
        if owner_info is None or (owner_info.namespaced and not info.namespaced):
            return False  # unresolvable: never collected
        where = self._uids.get(owner.get("uid", ""))
        if where is None or where[0] != owner_info.key.bucket:
            return True
        return owner_info.namespaced and where[1] != namespace

    def _check_new_owners(self, ref: Ref, old: dict[str, Any] | None, new: dict[str, Any]) -> None:
        """Collect, soon after the write (the GC is asynchronous), a dependent whose owners
        do not exist — a wrong uid or a cross-namespace owner."""
        owners = meta(new).get("ownerReferences")
        if not owners or owners == meta(old or {}).get("ownerReferences"):
            return
        try:
            asyncio.get_running_loop().call_soon(self._collect_if_orphaned, ref)
        except RuntimeError:  # no event loop: collect right away
            self._collect_if_orphaned(ref)

    def _orphan_dependents(self, uid: str) -> None:
        for ref in list(self._dependents.get(uid, ())):
            found = self._lookup(ref)
            if found is None:
                continue
            info, obj = found
            refs = [o for o in meta(obj).get("ownerReferences") or [] if o.get("uid") != uid]
            new = {**obj, "metadata": {**meta(obj), "ownerReferences": refs}}
            if not refs:
                del new["metadata"]["ownerReferences"]
            self._commit(info, new, obj)

    def _finish_foreground(self, uid: str) -> None:
        ref = self._uids.get(uid)
        found = None if ref is None else self._lookup(ref)
        if found is None:
            return
        info, owner = found
        finalizers = meta(owner).get("finalizers") or []
        if "foregroundDeletion" in finalizers and not self._dependents.get(uid):
            rest = [f for f in finalizers if f != "foregroundDeletion"]
            self._commit(info, {**owner, "metadata": {**meta(owner), "finalizers": rest}}, owner)

    def _delete_namespace(self, info: ResourceInfo, ns_obj: dict[str, Any]) -> dict[str, Any]:
        name = meta(ns_obj)["name"]
        if not meta(ns_obj).get("deletionTimestamp"):
            marked = lifecycle.mark_deleted(ns_obj, list(meta(ns_obj).get("finalizers") or []))
            marked["status"] = {"phase": "Terminating"}
            self._commit(info, marked, ns_obj)
        for bucket, spaces in list(self._objects.items()):
            for obj_name in list(spaces.get(name, {})):
                self._delete_ref((bucket, name, obj_name))
        self._finish_namespace(name)
        return self._current(info, ns_obj)

    def _finish_namespace(self, name: str) -> None:
        ns_obj = self._objects.get(NAMESPACE_KEY.bucket, {}).get("", {}).get(name)
        if ns_obj is None or not meta(ns_obj).get("deletionTimestamp"):
            return
        if any(name in spaces for bucket, spaces in self._objects.items()):
            return
        if not meta(ns_obj).get("finalizers"):
            info = self.info(NAMESPACE_KEY)
            self._remove(info, ns_obj)

    def _drop_crd_objects(self, crd: dict[str, Any]) -> None:
        spec = crd.get("spec") or {}
        bucket = (spec.get("group", ""), (spec.get("names") or {}).get("plural", ""))
        for ns, objects in list(self._objects.get(bucket, {}).items()):
            for name in list(objects):
                found = self._lookup((bucket, ns, name))
                if found is not None:
                    self._remove(found[0], found[1])
        self.resources.unregister_crd(meta(crd)["name"])
