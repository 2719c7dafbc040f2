"""Watch lines: each event encoded once for all watchers of the object, as kube-apiserver's watch
cache does, and never a stale line for an object that changed (a write stores a new dict)."""

from __future__ import annotations

import json

from nemotron_sim.apiserver import Store
from nemotron_sim.apiserver.watch import _EncodedLines
from nemotron_sim.kubeapi.resources import ResourceKey

CONFIGMAPS = ResourceKey("", "v1", "configmaps")


def meta() -> dict[str, str]:
    return {"name": "a", "namespace": "default"}


def test_one_encoding_serves_every_watcher_of_the_same_object() -> None:
    store, lines = Store(), _EncodedLines()
    stored = store.create(CONFIGMAPS, {"metadata": meta()}, copy=False)
    first = lines.line("ADDED", stored, "v1")
    assert lines.line("ADDED", stored, "v1") is first
    assert json.loads(first) == {"type": "ADDED", "object": {**stored, "apiVersion": "v1"}}
    # Another event type or group version is another line.
    assert json.loads(lines.line("DELETED", stored, "v1"))["type"] == "DELETED"
    assert json.loads(lines.line("ADDED", stored, "v2"))["object"]["apiVersion"] == "v2"


def test_a_changed_object_gets_a_new_line() -> None:
    store, lines = Store(), _EncodedLines()
    store.create(CONFIGMAPS, {"metadata": meta(), "data": {"k": "1"}})
    before = lines.line("MODIFIED", store.peek(CONFIGMAPS, "default", "a"), "v1")
    store.merge_patch(CONFIGMAPS, "default", "a", {"data": {"k": "2"}})
    after = lines.line("MODIFIED", store.peek(CONFIGMAPS, "default", "a"), "v1")
    assert json.loads(before)["object"]["data"] == {"k": "1"}
    assert json.loads(after)["object"]["data"] == {"k": "2"}
