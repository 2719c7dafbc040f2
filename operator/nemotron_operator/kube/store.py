"""``ObjectStore``: objects of one kind as watches delivered them, kept as compact JSON text.

The storage half of an informer, usable without its loop: the child and inventory caches fill one
from their own list-then-watch (:mod:`nemotron_operator.kube.informer`), the NemotronDeployment
store from kopf's watch events (``controller/runtime/kopf_wiring.py``). Writers put their own
results in at once (``store``/``drop``): the answer of a write is newer than anything a watch has
delivered, so the next read sees it even before its event. Of two versions of an object the higher
``resourceVersion`` wins (etcd revisions, integers in practice; otherwise the later arrival).

Objects are parsed when read: a reader parses only the few it asks for, and 1,000 StatefulSets
cost a few MiB instead of a Python tree each. orjson encodes and decodes them (every watch event
is stored: the standard library's ``json`` was a fifth of the operator's CPU to converge 1,000
deployments, docs/benchmarks.md), through ``kube/json_text.py``, which keeps each text at its
own size. A ``project`` function keeps only what readers use
(the GPU inventory keeps a pod's node, GPU requests and phase), so that a change to anything else
is no change here. ``changes`` counts the changes of content, not of ``resourceVersion``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nemotron_operator.kube import json_text
from nemotron_operator.kube.resources import Resource

ObjectKey = tuple[str, str]  # (namespace, "" when cluster-scoped; name)
Projection = Callable[[dict[str, Any]], dict[str, Any]]
_IGNORED_METADATA = ("managedFields", "resourceVersion")


def object_key(obj: dict[str, Any]) -> ObjectKey:
    metadata = obj.get("metadata") or {}
    return str(metadata.get("namespace") or ""), str(metadata.get("name"))


def _revision(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def slim(obj: dict[str, Any]) -> dict[str, Any]:
    """The object without what no reader uses and what changes on every write."""
    out = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
    metadata = out.get("metadata")
    if isinstance(metadata, dict):
        out["metadata"] = {k: v for k, v in metadata.items() if k not in _IGNORED_METADATA}
    return out


class ObjectStore:
    def __init__(
        self,
        resource: Resource,
        *,
        index_label: str | None = None,
        project: Projection = slim,
    ) -> None:
        self.resource = resource
        self.index_label = index_label
        self.project = project
        self.changes = 0
        self._objects: dict[ObjectKey, tuple[str | None, bytes]] = {}  # key → (version, JSON)
        self._index: dict[tuple[str, str], set[ObjectKey]] = {}  # (namespace, label) → keys
        self._labels: dict[ObjectKey, str] = {}

    def __len__(self) -> int:
        return len(self._objects)

    # -- reads -----------------------------------------------------------------------------
    def get(self, namespace: str | None, name: str) -> dict[str, Any] | None:
        key = (namespace or "", name)
        entry = self._objects.get(key)
        return None if entry is None else self._parse(entry)

    def object_keys(self) -> list[ObjectKey]:
        return list(self._objects)

    def by_label(self, namespace: str | None, value: str) -> list[dict[str, Any]]:
        """Objects whose ``index_label`` is ``value`` (in ``namespace``; None: any)."""
        return [self._parse(self._objects[k]) for k in self._labelled(namespace, value)]

    def versions_by_label(self, namespace: str | None, value: str) -> tuple[tuple[str, str], ...]:
        """(name, resourceVersion) of the same objects, without parsing any."""
        return tuple((k[1], self._objects[k][0] or "") for k in self._labelled(namespace, value))

    def items(self) -> list[dict[str, Any]]:
        return [self._parse(entry) for entry in self._objects.values()]

    def _labelled(self, namespace: str | None, value: str) -> list[ObjectKey]:
        if namespace is None:
            keys = sorted(k for (_, v), ks in self._index.items() if v == value for k in ks)
        else:
            keys = sorted(self._index.get((namespace, value), ()))
        return [k for k in keys if k in self._objects]

    def _parse(self, entry: tuple[str | None, bytes]) -> dict[str, Any]:
        obj: dict[str, Any] = json_text.loads(entry[1])
        obj.setdefault("apiVersion", self.resource.api_version)
        obj.setdefault("kind", self.resource.kind)
        if entry[0] is not None and isinstance(obj.get("metadata"), dict):
            obj["metadata"]["resourceVersion"] = entry[0]
        return obj

    # -- writes ----------------------------------------------------------------------------
    def store(self, obj: dict[str, Any], *, snapshot: bool = False) -> bool:
        """Keep ``obj`` unless a newer version is kept (a list's ``snapshot`` replaces whatever
        is kept); True when the content changed."""
        key = object_key(obj)
        version = (obj.get("metadata") or {}).get("resourceVersion")
        current = self._objects.get(key)
        if current is not None and version is not None and version == current[0]:
            return False  # the same version is the same object: our write, then its watch event
        if current is not None and not snapshot:
            new, old = _revision(version), _revision(current[0])
            if new is not None and old is not None and new < old:
                return False
        text = json_text.dumps(self.project(obj))
        self._objects[key] = (version, text)
        if current is not None and current[1] == text:
            return False
        self.changes += 1
        self._reindex(key, obj)
        return True

    def drop(self, namespace: str | None, name: str, version: str | None = None) -> bool:
        """Forget an object (deleted); a kept version newer than ``version`` stays."""
        key = (namespace or "", name)
        current = self._objects.get(key)
        if current is None:
            return False
        new, old = _revision(version), _revision(current[0])
        if new is not None and old is not None and new < old:
            return False
        self.remove(key)
        return True

    def remove(self, key: ObjectKey) -> dict[str, Any] | None:
        """Forget ``key`` whatever its version; the object that was kept."""
        entry = self._objects.pop(key, None)
        if entry is None:
            return None
        self._unindex(key)
        self.changes += 1
        return self._parse(entry)

    def _reindex(self, key: ObjectKey, obj: dict[str, Any]) -> None:
        if self.index_label is None:
            return
        self._unindex(key)
        value = ((obj.get("metadata") or {}).get("labels") or {}).get(self.index_label)
        if value is not None:
            self._labels[key] = str(value)
            self._index.setdefault((key[0], str(value)), set()).add(key)

    def _unindex(self, key: ObjectKey) -> None:
        value = self._labels.pop(key, None)
        if value is None:
            return
        keys = self._index.get((key[0], value))
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._index[(key[0], value)]
