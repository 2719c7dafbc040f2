"""The ``scale`` subresource: an ``autoscaling/v1`` Scale view of ``spec.replicas``."""

from __future__ import annotations

from typing import Any

from nemotron_sim.apiserver.errors import ApiError, bad_request
from nemotron_sim.apiserver.objects import get_path, meta, set_path
from nemotron_sim.apiserver.resources import ResourceInfo
from nemotron_sim.apiserver.selectors import selector_to_string


def scale_of(info: ResourceInfo, obj: dict[str, Any]) -> dict[str, Any]:
    spec = info.scale
    if spec is None:
        raise ApiError(404, f"the server could not find the requested resource ({info.kind}/scale)")
    md = meta(obj)
    status: dict[str, Any] = {"replicas": get_path(obj, spec.status_replicas) or 0}
    if info.crd_name is None:
        selector = (obj.get("spec") or {}).get("selector")
        if selector:
            status["selector"] = selector_to_string(selector)
    elif spec.label_selector and get_path(obj, spec.label_selector):
        status["selector"] = get_path(obj, spec.label_selector)
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            k: md[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in md
        },
        "spec": {"replicas": get_path(obj, spec.spec_replicas) or 0},
        "status": status,
    }


def with_scale(info: ResourceInfo, obj: dict[str, Any], scale: Any) -> dict[str, Any]:
    """The object with the replicas a (patched) Scale asks for, carrying its resourceVersion."""
    if info.scale is None:
        raise ApiError(404, f"the server could not find the requested resource ({info.kind}/scale)")
    replicas = (scale.get("spec") or {}).get("replicas") if isinstance(scale, dict) else None
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        raise bad_request(f"Scale spec.replicas must be a non-negative integer, got {replicas!r}")
    new = set_path(obj, info.scale.spec_replicas, replicas)
    rv = meta(scale).get("resourceVersion")
    new["metadata"] = {**meta(obj), "resourceVersion": rv or meta(obj).get("resourceVersion")}
    return new
