"""The object store: one consistent world for HTTP clients and in-process controllers.

Every write, whether it arrives over HTTP or from a simulated controller calling these methods
directly, goes through the same path: the same validation, one ``resourceVersion`` bump, one
watch event. Stored objects are never mutated in place (a write builds a new dict that may share
unchanged subtrees with the old one), so reads need no locks and lists copy nothing; the public
read and write methods return copies that callers may modify (writes with ``copy=False``: the
stored object itself, read-only, for callers that only serialize it or ignore it).
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from nemotron_sim.apiserver import lifecycle
from nemotron_sim.apiserver.apply import server_side_apply
from nemotron_sim.apiserver.collector import Bucket, GarbageCollection, Ref
from nemotron_sim.apiserver.errors import (
    AlreadyExistsError,
    ApiError,
    ConflictError,
    InvalidError,
    NotFoundError,
    bad_request,
)
from nemotron_sim.apiserver.events import EventLog
from nemotron_sim.apiserver.objects import meta
from nemotron_sim.apiserver.patches import copy_obj, merge_patch
from nemotron_sim.apiserver.resources import (
    CRD_KEY,
    NAMESPACE_KEY,
    Registry,
    ResourceInfo,
)
from nemotron_sim.apiserver.selectors import (
    object_predicate,
)
from nemotron_sim.kubeapi.resources import ResourceKey, WatchEvent

# (resource, proposed object, stored object or None) → the object to store (defaulted). It must
# not modify its arguments (the stored one is shared; the proposed one may share its subtrees).
Admission = Callable[[ResourceInfo, dict[str, Any], dict[str, Any] | None], dict[str, Any]]

# (resource, stored object, requested gracePeriodSeconds) → seconds to keep it terminating
# (> 0: marked with deletionTimestamp until someone deletes it with grace 0), or None: at once.
DeletionGrace = Callable[[ResourceInfo, dict[str, Any], int | None], int | None]

__all__ = ["DEFAULT_NAMESPACES", "Admission", "DeletionGrace", "Store", "WatchEvent"]

DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


@dataclass
class Store(GarbageCollection):
    """Objects indexed by resource and namespace, with watch history and garbage collection."""

    resources: Registry = field(default_factory=Registry.builtin)
    history_size: int = 20_000  # like etcd compaction: older watches get 410 and relist
    admission: Admission | None = None
    deletion_grace: DeletionGrace | None = None  # graceful pod deletion (the kubelet's)
    _objects: dict[Bucket, dict[str, dict[str, dict[str, Any]]]] = field(default_factory=dict)
    _uids: dict[str, Ref] = field(default_factory=dict)
    _dependents: dict[str, set[Ref]] = field(default_factory=dict)
    _rv: int = 0
    _log: EventLog = field(init=False)

    def __post_init__(self) -> None:
        self._log = EventLog(self.history_size)
        for name in DEFAULT_NAMESPACES:
            self.create(NAMESPACE_KEY, {"metadata": {"name": name}})

    # --- reads ------------------------------------------------------------------------------

    @property
    def resource_version(self) -> int:
        return self._rv

    def info(self, key: ResourceKey) -> ResourceInfo:
        info = self.resources.get(key)
        if info is None:
            raise ApiError(404, f"the server could not find the requested resource ({key})")
        return info

    def get(self, key: ResourceKey, namespace: str | None, name: str) -> dict[str, Any] | None:
        obj = self.peek(key, namespace, name)
        return None if obj is None else copy_obj(obj)

    def peek(self, key: ResourceKey, namespace: str | None, name: str) -> dict[str, Any] | None:
        """The stored object itself, without a copy: read-only for the caller."""
        info = self.info(key)
        ns = (namespace or "") if info.namespaced else ""
        return self._objects.get(key.bucket, {}).get(ns, {}).get(name)

    def list(
        self,
        key: ResourceKey,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> builtins.list[dict[str, Any]]:
        return [copy_obj(o) for o in self.scan(key, namespace, label_selector, field_selector)]

    def scan(
        self,
        key: ResourceKey,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> builtins.list[dict[str, Any]]:
        """Matching stored objects (no copies), sorted by namespace and name."""
        info = self.info(key)
        matches = object_predicate(label_selector, field_selector)
        by_ns = self._objects.get(key.bucket, {})
        if info.namespaced and namespace:
            spaces: Iterable[str] = [namespace] if namespace in by_ns else []
        else:
            spaces = sorted(by_ns)
        out = []
        for ns in spaces:
            objects = by_ns[ns]
            for name in sorted(objects):
                obj = objects[name]
                if matches is None or matches(obj):
                    out.append(obj)
        return out

    # --- writes -----------------------------------------------------------------------------

    def create(
        self, key: ResourceKey, obj: dict[str, Any], *, dry_run: bool = False, copy: bool = True
    ) -> dict[str, Any]:
        return self._insert(key, copy_obj(obj), dry_run=dry_run, copy=copy)

    def _insert(
        self, key: ResourceKey, obj: dict[str, Any], *, dry_run: bool, copy: bool
    ) -> dict[str, Any]:
        """Create from ``obj``, which the store may keep: no one else holds it."""
        info = self.info(key)
        new = lifecycle.prepare_create(info, obj)
        ns, name = meta(new).get("namespace", ""), new["metadata"]["name"]
        if info.namespaced:
            self._require_namespace(ns)
        if self.admission is not None:  # validation comes before the existence check
            new = self.admission(info, new, None)
        if name in self._objects.get(key.bucket, {}).get(ns, {}):
            raise AlreadyExistsError(key.plural, key.group, name)
        new = lifecycle.server_fields(info, new, None)
        if dry_run:
            return new
        return _out(self._commit(info, new, None), copy)

    def replace(
        self,
        key: ResourceKey,
        obj: dict[str, Any],
        *,
        subresource: str | None = None,
        dry_run: bool = False,
        copy: bool = True,
    ) -> dict[str, Any]:
        """PUT: the whole object. Custom resources need ``resourceVersion`` (no unconditional
        update, as in apiextensions-apiserver); built-in kinds may omit it."""
        info = self.info(key)
        md = meta(obj)
        old = self._existing(info, md.get("namespace"), md.get("name", ""))
        if info.crd_name is not None and not md.get("resourceVersion"):
            raise InvalidError(
                info.kind,
                info.key.group,
                md.get("name", ""),
                [
                    (
                        "metadata.resourceVersion",
                        "Invalid value: 0x0: must be specified for an update",
                    )
                ],
            )
        return self.update(
            info, old, copy_obj(obj), subresource=subresource, dry_run=dry_run, copy=copy
        )

    def merge_patch(
        self,
        key: ResourceKey,
        namespace: str | None,
        name: str,
        patch: dict[str, Any],
        *,
        subresource: str | None = None,
        dry_run: bool = False,
        copy: bool = True,
    ) -> dict[str, Any]:
        info = self.info(key)
        old = self._existing(info, namespace, name)
        new = merge_patch(old, patch)
        if "resourceVersion" not in meta(patch):
            new["metadata"] = {**new["metadata"], "resourceVersion": meta(old)["resourceVersion"]}
        return self.update(info, old, new, subresource=subresource, dry_run=dry_run, copy=copy)

    def apply(
        self,
        key: ResourceKey,
        obj: dict[str, Any],
        *,
        field_manager: str,
        force: bool = False,
        subresource: str | None = None,
        dry_run: bool = False,
        copy: bool = True,
    ) -> dict[str, Any]:
        """Server-side apply, approximated (see :mod:`.apply`): create or merge by manager."""
        info = self.info(key)
        if not field_manager:
            raise bad_request("PATCH /apply requires fieldManager to be set")
        md = meta(obj)
        ns = (md.get("namespace") or "") if info.namespaced else ""
        current = self._objects.get(key.bucket, {}).get(ns, {}).get(md.get("name", ""))
        merged = server_side_apply(
            current,
            obj,
            manager=field_manager,
            force=force,
            keyed=info.crd_name is None,
            subresource=subresource,
            api_version=key.api_version,
        )
        if current is None:
            if subresource is not None:
                raise NotFoundError(key.plural, key.group, md.get("name", ""))
            # server_side_apply built ``merged`` from copies of what was applied
            return self._insert(key, merged, dry_run=dry_run, copy=copy)
        if "resourceVersion" not in md:
            merged["metadata"] = {
                **merged["metadata"],
                "resourceVersion": meta(current)["resourceVersion"],
            }
        return self.update(
            info, current, merged, subresource=subresource, dry_run=dry_run, copy=copy
        )

    def update(
        self,
        info: ResourceInfo,
        old: dict[str, Any],
        new: dict[str, Any],
        *,
        subresource: str | None = None,
        dry_run: bool = False,
        copy: bool = True,
    ) -> dict[str, Any]:
        """Write ``new`` over the stored ``old`` with the API server's update rules."""
        key = info.key
        sent_rv = meta(new).get("resourceVersion")
        if sent_rv not in (None, "") and str(sent_rv) != meta(old)["resourceVersion"]:
            raise ConflictError(key.plural, key.group, meta(old)["name"])
        new = lifecycle.prepare_update(info, old, new, subresource)
        if self.admission is not None:
            new = self.admission(info, new, old)
        new = lifecycle.server_fields(info, new, old)
        if lifecycle.same_content(old, new):
            return _out(old, copy)
        if dry_run:
            return copy_obj(new)
        return _out(self._commit(info, new, old), copy)

    def delete(
        self,
        key: ResourceKey,
        namespace: str | None,
        name: str,
        *,
        propagation: str | None = None,
        preconditions: dict[str, Any] | None = None,
        dry_run: bool = False,
        grace_period: int | None = None,
        copy: bool = True,
    ) -> dict[str, Any] | None:
        """Delete now, or mark with ``deletionTimestamp`` while finalizers remain.

        With ``deletion_grace`` set, an object it gives a grace period (a pod whose processes
        run) is only marked, with ``deletionGracePeriodSeconds``, until a delete with
        ``grace_period=0`` (the kubelet's, once they stopped) removes it.

        Returns ``None`` when there is no such object. Dependents (by ``ownerReferences``) are
        deleted when their last owner is gone (Background), before the owner (Foreground), or
        released (Orphan).
        """
        info = self.info(key)
        ns = (namespace or "") if info.namespaced else ""
        old = self._objects.get(key.bucket, {}).get(ns, {}).get(name)
        if old is None:
            return None
        md = meta(old)
        for field_name in ("uid", "resourceVersion"):
            wanted = (preconditions or {}).get(field_name)
            if wanted and wanted != md.get(field_name):
                raise ConflictError(
                    key.plural, key.group, name, f"Precondition failed: {field_name}"
                )
        if dry_run:
            return copy_obj(old)
        policy = propagation or "Background"
        if policy == "Orphan":
            self._orphan_dependents(md["uid"])
        finalizers = list(md.get("finalizers") or [])
        if policy == "Foreground" and self._dependents.get(md["uid"]):
            finalizers.append("foregroundDeletion")
        if key == NAMESPACE_KEY:
            return _out(self._delete_namespace(info, old), copy)
        grace = None
        if self.deletion_grace is not None and grace_period != 0:
            grace = self.deletion_grace(info, old, grace_period)
        return _out(self._mark_or_remove(info, old, finalizers, grace), copy)

    # --- watch ------------------------------------------------------------------------------

    def subscribe(
        self, keys: Iterable[ResourceKey] | None = None, *, copy: bool = True
    ) -> asyncio.Queue[WatchEvent]:
        """A queue of every later change (of ``keys`` only, if given).

        With ``copy=False`` the events carry the stored objects themselves: read-only.
        """
        return self._log.subscribe(keys, copy=copy)

    def unsubscribe(self, queue: asyncio.Queue[WatchEvent]) -> None:
        self._log.unsubscribe(queue)

    def watchers_for(self, key: ResourceKey) -> int:
        """Open subscriptions (HTTP watches included) that receive changes of ``key``."""
        return self._log.watchers_for(key)

    def events_since(self, rv: int, key: ResourceKey) -> builtins.list[WatchEvent] | None:
        """Recorded events of one resource after ``rv``; ``None`` if history no longer reaches
        back that far (the caller answers 410 Gone)."""
        return self._log.since(rv, key)

    # --- internals --------------------------------------------------------------------------

    def _existing(self, info: ResourceInfo, namespace: str | None, name: str) -> dict[str, Any]:
        ns = (namespace or "") if info.namespaced else ""
        obj = self._objects.get(info.key.bucket, {}).get(ns, {}).get(name)
        if obj is None:
            raise NotFoundError(info.key.plural, info.key.group, name)
        return obj

    def _current(self, info: ResourceInfo, obj: dict[str, Any]) -> dict[str, Any]:
        md = meta(obj)
        found = self._objects.get(info.key.bucket, {}).get(md.get("namespace", ""), {})
        return found.get(md["name"], obj)

    def _require_namespace(self, ns: str) -> None:
        namespace = self._objects.get(NAMESPACE_KEY.bucket, {}).get("", {}).get(ns)
        if namespace is None:
            raise NotFoundError("namespaces", "", ns)
        if meta(namespace).get("deletionTimestamp"):
            raise ApiError(
                403,
                f"unable to create new content in namespace {ns} because it is being terminated",
                details={"name": ns, "kind": "namespaces"},
            )

    def _commit(
        self, info: ResourceInfo, new: dict[str, Any], old: dict[str, Any] | None
    ) -> dict[str, Any]:
        self._rv += 1
        new["metadata"] = {**new["metadata"], "resourceVersion": str(self._rv)}
        md = new["metadata"]
        ref: Ref = (info.key.bucket, md.get("namespace", ""), md["name"])
        self._objects.setdefault(ref[0], {}).setdefault(ref[1], {})[ref[2]] = new
        self._uids[md["uid"]] = ref
        self._index_owners(ref, old, new)
        self._log.emit("ADDED" if old is None else "MODIFIED", info.key, new, self._rv, old)
        self._check_new_owners(ref, old, new)
        if info.key == CRD_KEY:
            self.resources.register_crd(new)
        if (
            md.get("deletionTimestamp")
            and not md.get("finalizers")
            and not md.get("deletionGracePeriodSeconds")
        ):
            self._remove(info, new)
        return new

    def _remove(self, info: ResourceInfo, obj: dict[str, Any]) -> dict[str, Any]:
        md = meta(obj)
        ref: Ref = (info.key.bucket, md.get("namespace", ""), md["name"])
        spaces = self._objects.get(ref[0], {})
        if spaces.get(ref[1], {}).pop(ref[2], None) is None:
            return obj  # already removed further up a cascade
        if not spaces[ref[1]]:
            del spaces[ref[1]]
        self._rv += 1
        gone = {**obj, "metadata": {**md, "resourceVersion": str(self._rv)}}
        self._uids.pop(md["uid"], None)
        self._index_owners(ref, obj, None)
        self._log.emit("DELETED", info.key, gone, self._rv)
        if info.key == CRD_KEY:
            self._drop_crd_objects(obj)
        for ref_dep in list(self._dependents.pop(md["uid"], ())):
            self._collect_if_orphaned(ref_dep)
        for owner in md.get("ownerReferences") or []:
            self._finish_foreground(owner.get("uid", ""))
        if ref[1]:
            self._finish_namespace(ref[1])
        return gone


def _out(obj: dict[str, Any], copy: bool) -> dict[str, Any]:
    return copy_obj(obj) if copy else obj
