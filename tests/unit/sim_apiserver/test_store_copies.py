"""Writes return copies the caller may modify, or with ``copy=False`` the stored object itself
(for callers that only serialize the answer); either way the store keeps what it committed."""

from __future__ import annotations

from nemotron_sim.apiserver import Store
from nemotron_sim.kubeapi.resources import ResourceKey

CONFIGMAPS = ResourceKey("", "v1", "configmaps")


def _config_map(name: str) -> dict[str, object]:
    return {"metadata": {"name": name, "namespace": "default"}, "data": {"a": "1"}}


def test_writes_return_private_copies_by_default() -> None:
    store = Store()
    created = store.create(CONFIGMAPS, _config_map("one"))
    created["data"]["a"] = "changed"
    patched = store.merge_patch(CONFIGMAPS, "default", "one", {"data": {"b": "2"}})
    patched["data"]["b"] = "changed"
    assert store.peek(CONFIGMAPS, "default", "one")["data"] == {"a": "1", "b": "2"}


def test_copy_false_returns_the_stored_object() -> None:
    store = Store()
    created = store.create(CONFIGMAPS, _config_map("two"), copy=False)
    assert created is store.peek(CONFIGMAPS, "default", "two")
    patched = store.merge_patch(CONFIGMAPS, "default", "two", {"data": {"b": "2"}}, copy=False)
    assert patched is store.peek(CONFIGMAPS, "default", "two")
    assert patched["data"] == {"a": "1", "b": "2"}
    gone = store.delete(CONFIGMAPS, "default", "two", copy=False)
    assert gone is not None
    assert store.peek(CONFIGMAPS, "default", "two") is None
