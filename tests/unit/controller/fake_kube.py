"""An in-memory stand-in for ``KubeClient``: the calls the reconcile makes, answered the way
kube-apiserver answers them, and every write request recorded so that a test can assert on it.

What it does like the API server: uids and a ``resourceVersion`` bumped on every write; label
selectors (``k=v,…``) and ``status.phase!=…`` field selectors on lists; a server-side apply that
keeps the object's status; a status merge patch refused with 409 when its ``resourceVersion`` is not
the stored one; a JSON patch whose ``test`` fails refused with 422; an object with a
``deletionTimestamp`` removed once its last finalizer goes; a delete refused with 409 when the uid
precondition does not match. What it does not: defaults, admission, watches, owners' garbage. The
one fake API server of the unit tests: the reconcile's, the inventory's and the writes' tests use
it.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from nemotron_operator.kube import ApiError
from nemotron_operator.kube.resources import EVENTS, NEMOTRON_DEPLOYMENTS, Resource
from nemotron_operator.render import names as n

Key = tuple[Resource, str | None, str]


@dataclass(frozen=True)
class Write:
    """One write request: ``verb`` is apply, delete, patch, create or replace."""

    verb: str
    resource: Resource
    name: str
    subresource: str = ""
    body: Any = None

    def __str__(self) -> str:
        if self.resource == EVENTS:  # named at random: say what it reports instead
            return f"{self.verb} Event {self.body['type']} {self.body['reason']}"
        where = f"{self.resource.kind}/{self.name}"
        return (
            f"{self.verb} {where}/{self.subresource}"
            if self.subresource
            else f"{self.verb} {where}"
        )


def merge(target: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """RFC 7386: nulls remove, objects merge, anything else replaces."""
    out = dict(target)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _matches(obj: dict[str, Any], label_selector: str | None, field_selector: str | None) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    for term in filter(None, (label_selector or "").split(",")):
        key, _, value = term.partition("=")
        if labels.get(key) != value:
            return False
    for term in filter(None, (field_selector or "").split(",")):
        path, _, value = term.partition("!=")
        assert path == "status.phase", f"the fake knows no field selector {term}"
        if (obj.get("status") or {}).get("phase") == value:
            return False
    return True


@dataclass
class FakeKube:
    served_crds: set[Resource] = field(default_factory=set)  # optional kinds whose CRD exists
    objects: dict[Key, dict[str, Any]] = field(default_factory=dict)
    writes: list[Write] = field(default_factory=list)
    lists: list[str] = field(default_factory=list)  # the plural of every list request, in order
    # Called after a GET of a NemotronDeployment: another writer acting between read and write.
    after_get: Callable[[FakeKube], None] | None = None
    _versions: itertools.count[int] = field(default_factory=lambda: itertools.count(100))
    _uids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    # -- test set-up ------------------------------------------------------------------------
    def key(self, resource: Resource, namespace: str | None, name: str) -> Key:
        return resource, namespace if resource.namespaced else None, name

    def put(self, resource: Resource, obj: dict[str, Any]) -> dict[str, Any]:
        """Store ``obj`` as the server would hold it (a uid, a new resourceVersion)."""
        stored = copy.deepcopy(obj)
        metadata = stored.setdefault("metadata", {})
        stored.setdefault("apiVersion", resource.api_version)
        stored.setdefault("kind", resource.kind)
        metadata.setdefault("uid", f"uid-{next(self._uids)}")
        metadata["resourceVersion"] = str(next(self._versions))
        self.objects[self.key(resource, metadata.get("namespace"), metadata["name"])] = stored
        return stored

    def stored(self, resource: Resource, namespace: str | None, name: str) -> dict[str, Any]:
        return self.objects[self.key(resource, namespace, name)]

    def clear(self, resource: Resource) -> None:
        """Remove every object of ``resource`` (set-up, not a request)."""
        for key in [k for k in self.objects if k[0] == resource]:
            del self.objects[key]

    def of_kind(self, resource: Resource) -> list[dict[str, Any]]:
        return [obj for (r, _, _), obj in self.objects.items() if r == resource]

    def written(self) -> list[str]:
        return [str(w) for w in self.writes]

    # -- reads ------------------------------------------------------------------------------
    async def get(self, resource: Resource, namespace: str | None, name: str) -> Any:
        found = self.objects.get(self.key(resource, namespace, name))
        answer = copy.deepcopy(found)
        if resource == NEMOTRON_DEPLOYMENTS and self.after_get is not None:
            self.after_get(self)
        return answer

    async def list(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> list[dict[str, Any]]:
        self.lists.append(resource.plural)
        return [
            copy.deepcopy(obj)
            for (r, ns, _), obj in self.objects.items()
            if r == resource
            and (namespace is None or ns == namespace)
            and _matches(obj, label_selector, field_selector)
        ]

    async def served(self, resource: Resource) -> bool:
        return resource in self.served_crds

    # -- writes -----------------------------------------------------------------------------
    async def apply(self, resource: Resource, obj: dict[str, Any]) -> Any:
        metadata = obj["metadata"]
        self.writes.append(Write("apply", resource, metadata["name"], body=obj))
        key = self.key(resource, metadata.get("namespace"), metadata["name"])
        before = self.objects.get(key)
        applied = copy.deepcopy(obj)
        if before is not None:
            applied["metadata"]["uid"] = before["metadata"]["uid"]
            if "status" in before:
                applied["status"] = before["status"]
        return copy.deepcopy(self.put(resource, applied))

    async def delete(
        self, resource: Resource, namespace: str | None, name: str, *, uid: str | None = None
    ) -> bool:
        self.writes.append(Write("delete", resource, name, body={"uid": uid}))
        key = self.key(resource, namespace, name)
        found = self.objects.get(key)
        if found is None:
            return False
        if uid is not None and found["metadata"]["uid"] != uid:
            raise ApiError(409, "Conflict", "uid precondition failed", "DELETE", name)
        del self.objects[key]
        return True

    async def patch(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        body: Any,
        *,
        subresource: str = "",
        json_patch: bool = False,
        strategic: bool = False,
    ) -> Any:
        self.writes.append(Write("patch", resource, name, subresource, body))
        key = self.key(resource, namespace, name)
        found = self.objects.get(key)
        if found is None:
            raise ApiError(404, "NotFound", f"{name} not found", "PATCH", name)
        if json_patch:
            updated = self._json_patch(found, body)
        elif strategic:  # a pod's status conditions, merged by type (the one use)
            wanted_uid = (body.get("metadata") or {}).get("uid")
            if wanted_uid is not None and wanted_uid != found["metadata"].get("uid"):
                raise ApiError(409, "Conflict", "uid precondition failed", "PATCH", name)
            status = dict(found.get("status") or {})
            by_type = {c["type"]: c for c in status.get("conditions") or []}
            by_type.update({c["type"]: c for c in body["status"]["conditions"]})
            updated = {**found, "status": {**status, "conditions": list(by_type.values())}}
        elif subresource == "status":
            wanted = (body.get("metadata") or {}).get("resourceVersion")
            if wanted is not None and wanted != found["metadata"]["resourceVersion"]:
                raise ApiError(409, "Conflict", "the object has been modified", "PATCH", name)
            updated = {**found, "status": merge(found.get("status") or {}, body["status"])}
        else:  # the scale subresource, or a plain merge patch
            updated = merge(found, body)
        stored = self.put(resource, updated)
        metadata = stored["metadata"]
        if metadata.get("deletionTimestamp") and not metadata.get("finalizers"):
            del self.objects[key]
        return copy.deepcopy(stored)

    @staticmethod
    def _json_patch(found: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
        updated = copy.deepcopy(found)
        for op in ops:
            *parents, last = op["path"].strip("/").split("/")
            node = updated
            for part in parents:
                node = node.setdefault(part, {})
            if op["op"] == "test" and node.get(last) != op["value"]:
                raise ApiError(422, "Invalid", f"test of {op['path']} failed", "PATCH", "")
            if op["op"] in ("add", "replace"):
                node[last] = copy.deepcopy(op["value"])
        return updated

    async def create(self, resource: Resource, namespace: str | None, obj: dict[str, Any]) -> Any:
        name = obj["metadata"]["name"]
        self.writes.append(Write("create", resource, name, body=obj))
        return copy.deepcopy(self.put(resource, {**obj, "metadata": {**obj["metadata"]}}))

    async def replace(self, resource: Resource, namespace: str | None, obj: dict[str, Any]) -> Any:
        name = obj["metadata"]["name"]
        self.writes.append(Write("replace", resource, name, body=obj))
        found = self.objects.get(self.key(resource, namespace, name))
        if found is not None and found["metadata"]["resourceVersion"] != (
            obj["metadata"].get("resourceVersion")
        ):
            raise ApiError(409, "Conflict", "the object has been modified", "PUT", name)
        return copy.deepcopy(self.put(resource, obj))


class KubeBackedCache:
    """The watch cache as a reconcile reads it, kept in step with the fake server: every child
    and pod the server holds, indexed by the instance label (``children.Cache``)."""

    def __init__(self, kube: FakeKube) -> None:
        self.kube = kube

    def _of(self, resource: Resource, namespace: str, instance: str) -> list[dict[str, Any]]:
        found = []
        for (kind, where, _), obj in sorted(self.kube.objects.items(), key=lambda kv: kv[0][2]):
            labels = (obj.get("metadata") or {}).get("labels") or {}
            same_place = where == namespace or not resource.namespaced
            if kind == resource and same_place and labels.get(n.INSTANCE) == instance:
                found.append(obj)
        return found

    def of_instance(
        self, resource: Resource, namespace: str, instance: str
    ) -> list[dict[str, Any]] | None:
        return copy.deepcopy(self._of(resource, namespace, instance))

    def versions_of_instance(
        self, resource: Resource, namespace: str, instance: str
    ) -> tuple[tuple[str, str], ...] | None:
        return tuple(
            (o["metadata"]["name"], o["metadata"]["resourceVersion"])
            for o in self._of(resource, namespace, instance)
        )

    def stored(self, resource: Resource, obj: Any) -> None:
        pass  # the fake server already holds it

    def unserved(self) -> frozenset[Resource]:
        return frozenset()
