"""The stand-in's pure building blocks: selectors, patches, JSONPath, apply field sets, tables
and the protobuf decoder. Fast checks of the edge cases the HTTP tests do not reach."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from nemotron_sim.apiserver import ApiError, match_labels
from nemotron_sim.apiserver.apply import server_side_apply
from nemotron_sim.apiserver.jsonpath import find
from nemotron_sim.apiserver.patches import json_patch, strategic_merge_patch
from nemotron_sim.apiserver.protobuf import MAGIC, decode_object
from nemotron_sim.apiserver.selectors import parse_field_selector, parse_label_selector
from nemotron_sim.apiserver.tables import human_duration


def labelled(**labels: str) -> dict[str, object]:
    return {"metadata": {"labels": labels}}


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        ("a=1,b!=2", {"a": "1"}, True),
        ("a in (1, 2),c", {"a": "2", "c": ""}, True),
        ("a notin (1,2)", {}, True),
        ("a notin (1,2)", {"a": "1"}, False),
        ("!a", {"a": "x"}, False),
        ("n>3", {"n": "4"}, True),
        ("n<3", {"n": "x"}, False),
    ],
)
def test_label_selectors(selector: str, labels: dict[str, str], expected: bool) -> None:
    predicate = parse_label_selector(selector)
    assert predicate is not None
    assert predicate(labelled(**labels)) is expected


def test_selector_objects_and_bad_selectors() -> None:
    selector = {
        "matchLabels": {"app": "x"},
        "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["a"]}],
    }
    assert match_labels(selector, {"app": "x", "tier": "b"})
    assert not match_labels(selector, {"app": "x", "tier": "a"})
    with pytest.raises(ApiError):
        parse_label_selector("a in (1")
    fields = parse_field_selector("spec.nodeName=,metadata.name!=p")
    assert fields is not None
    assert fields({"metadata": {"name": "q"}, "spec": {}})


def test_json_patch_operations() -> None:
    doc = {"a": {"b~c": 1, "d/e": 2}, "list": [1, 2]}
    ops = [
        {"op": "add", "path": "/list/-", "value": 3},
        {"op": "move", "from": "/a/b~0c", "path": "/moved"},
        {"op": "copy", "from": "/a/d~1e", "path": "/list/0"},
        {"op": "remove", "path": "/list/1"},
    ]
    assert json_patch(doc, ops) == {"a": {"d/e": 2}, "list": [2, 2, 3], "moved": 1}
    assert doc["list"] == [1, 2]  # the input is not changed
    with pytest.raises(ApiError) as missing:
        json_patch(doc, [{"op": "replace", "path": "/nope", "value": 1}])
    assert missing.value.code == 422


def test_strategic_merge_directives() -> None:
    live = {
        "containers": [{"name": "a", "image": "1", "env": [{"name": "X", "value": "1"}]}],
        "volumes": [{"name": "v"}, {"name": "w"}],
        "finalizers": ["f1"],
        "args": ["--x"],
    }
    patch = {
        "containers": [{"name": "a", "env": [{"name": "Y", "value": "2"}]}, {"name": "b"}],
        "volumes": [{"name": "w", "$patch": "delete"}],
        "finalizers": ["f2"],
        "$deleteFromPrimitiveList/args": ["--x"],
        "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
    }
    merged = strategic_merge_patch(live, patch)
    env = [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]
    assert merged["containers"] == [{"name": "a", "image": "1", "env": env}, {"name": "b"}]
    assert merged["volumes"] == [{"name": "v"}]
    assert merged["finalizers"] == ["f1", "f2"]
    assert merged["args"] == []
    assert strategic_merge_patch({"m": {"a": 1}}, {"m": {"$patch": "replace", "b": 2}}) == {
        "m": {"b": 2}
    }


def test_jsonpath_filters_and_indexes() -> None:
    conditions = [{"type": "A", "status": "False"}, {"type": "Ready", "status": "True"}]
    obj = {"status": {"conditions": conditions}}
    assert find(obj, '.status.conditions[?(@.type=="Ready")].status') == ["True"]
    assert find(obj, ".status.conditions[*].type") == ["A", "Ready"]
    assert find(obj, ".status.conditions[-1].type") == ["Ready"]
    assert find(obj, ".status.missing") == []


def test_human_durations_match_kubectl() -> None:
    now = datetime(2026, 1, 10, 12, 0, 0, tzinfo=UTC)
    cases = {
        "2026-01-10T11:59:30Z": "30s",
        "2026-01-10T11:55:30Z": "4m30s",
        "2026-01-10T10:00:00Z": "120m",
        "2026-01-10T06:30:00Z": "5h30m",
        "2026-01-08T12:00:00Z": "2d",
    }
    for then, expected in cases.items():
        assert human_duration(then, now) == expected


def test_apply_removes_what_a_manager_stopped_applying_in_keyed_lists() -> None:
    first = {
        "metadata": {"name": "s"},
        "spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "1"}]},
    }
    live = server_side_apply(
        None, first, manager="op", force=False, keyed=True, subresource=None, api_version="v1"
    )
    live["spec"]["containers"][0]["resources"] = {"cpu": "1"}  # another writer's field
    second = {"metadata": {"name": "s"}, "spec": {"containers": [{"name": "a", "image": "2"}]}}
    result = server_side_apply(
        live, second, manager="op", force=False, keyed=True, subresource=None, api_version="v1"
    )
    assert result["spec"]["containers"] == [{"name": "a", "image": "2", "resources": {"cpu": "1"}}]
    fields = result["metadata"]["managedFields"][0]["fieldsV1"]
    assert 'k:{"name":"a"}' in fields["f:spec"]["f:containers"]


def _varint(value: int) -> bytes:
    out = b""
    while True:
        byte, value = value & 0x7F, value >> 7
        out += bytes([byte | (0x80 if value else 0)])
        if not value:
            return out


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def test_protobuf_config_map_and_refusals() -> None:
    entry = _field(1, b"k") + _field(2, b"v")
    meta = _field(1, b"c") + _field(3, b"ns") + _field(11, _field(1, b"app") + _field(2, b"x"))
    raw = _field(1, meta) + _field(2, entry)
    body = MAGIC + _field(1, _field(1, b"v1") + _field(2, b"ConfigMap")) + _field(2, raw)
    assert decode_object(body) == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "ns", "labels": {"app": "x"}},
        "data": {"k": "v"},
    }
    pod = MAGIC + _field(1, _field(1, b"v1") + _field(2, b"Pod")) + _field(2, b"")
    for refused in (pod, b"{}", MAGIC + b"\x0a\xff"):
        with pytest.raises(ApiError) as error:
            decode_object(refused)
        assert error.value.code == 415


def test_event_tables_put_the_name_last_like_kube_apiserver() -> None:
    from nemotron_sim.apiserver.resources import Registry, ResourceKey
    from nemotron_sim.apiserver.tables import table

    info = Registry.builtin().get(ResourceKey("", "v1", "events"))
    assert info is not None
    event = {
        "metadata": {"name": "e1", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "involvedObject": {"kind": "Pod", "name": "p"},
        "type": "Warning",
        "reason": "FailedScheduling",
        "message": "0/3 nodes are available",
    }
    rendered = table(info, [event])
    names = [c["name"] for c in rendered["columnDefinitions"]]
    assert names == ["Last Seen", "Type", "Reason", "Object", "Message", "Name"]
    assert rendered["rows"][0]["cells"][1:] == [
        "Warning",
        "FailedScheduling",
        "pod/p",
        "0/3 nodes are available",
        "e1",
    ]
