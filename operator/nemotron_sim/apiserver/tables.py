"""``Accept: application/json;as=Table``: the server-side printing kubectl get relies on.

Custom resources get their CRD's ``additionalPrinterColumns``; a few built-in types get the
columns kube-apiserver prints for them; every other type gets Name and Age.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

from nemotron_sim.apiserver import jsonpath
from nemotron_sim.apiserver.objects import meta
from nemotron_sim.apiserver.resources import ResourceInfo

Cells = Callable[[dict[str, Any]], list[Any]]


def human_duration(since: str | None, now: datetime | None = None) -> str:  # noqa: PLR0911
    """k8s.io/apimachinery duration.HumanDuration of the time since an RFC 3339 timestamp."""
    if not since:
        return "<unknown>"
    try:
        then = datetime.strptime(since, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return "<invalid>"
    seconds = int(((now or datetime.now(UTC)) - then).total_seconds())
    if seconds < 0:
        return "0s"
    minutes, hours = seconds // 60, seconds // 3600
    if seconds < 120:
        return f"{seconds}s"
    if minutes < 10:
        return f"{minutes}m{seconds % 60}s" if seconds % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d{hours % 24}h" if hours % 24 else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    years = hours // (24 * 365)
    return f"{years}y{(hours // 24) % 365}d" if years < 8 else f"{years}y"


def _col(name: str, kind: str = "string", priority: int = 0, fmt: str = "") -> dict[str, Any]:
    return {"name": name, "type": kind, "format": fmt, "description": "", "priority": priority}


def _age(obj: dict[str, Any]) -> str:
    return human_duration(meta(obj).get("creationTimestamp"))


def _pod_cells(pod: dict[str, Any]) -> list[Any]:
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    containers = status.get("containerStatuses") or []
    ready = sum(1 for c in containers if c.get("ready"))
    reason = status.get("reason") or status.get("phase") or "Unknown"
    for container in containers:
        waiting = (container.get("state") or {}).get("waiting")
        if waiting and waiting.get("reason"):
            reason = waiting["reason"]
    if meta(pod).get("deletionTimestamp"):
        reason = "Terminating"
    restarts = sum(int(c.get("restartCount") or 0) for c in containers)
    return [
        f"{ready}/{len(spec.get('containers') or [])}",
        reason,
        restarts,
        _age(pod),
        status.get("podIP") or "<none>",
        spec.get("nodeName") or "<none>",
    ]


def _node_cells(node: dict[str, Any]) -> list[Any]:
    conditions = {c.get("type"): c.get("status") for c in _conditions(node)}
    ready = {"True": "Ready", "False": "NotReady"}.get(str(conditions.get("Ready")), "Unknown")
    if (node.get("spec") or {}).get("unschedulable"):
        ready += ",SchedulingDisabled"
    labels = meta(node).get("labels") or {}
    roles = [k.split("/", 1)[1] for k in labels if k.startswith("node-role.kubernetes.io/")]
    info = (node.get("status") or {}).get("nodeInfo") or {}
    return [ready, ",".join(roles) or "<none>", _age(node), info.get("kubeletVersion", "")]


def _service_cells(svc: dict[str, Any]) -> list[Any]:
    spec = svc.get("spec") or {}
    ports = ",".join(f"{p.get('port')}/{p.get('protocol', 'TCP')}" for p in spec.get("ports") or [])
    return [
        spec.get("type", "ClusterIP"),
        spec.get("clusterIP") or "<none>",
        "<none>",
        ports or "<none>",
        _age(svc),
    ]


def _event_cells(event: dict[str, Any]) -> list[Any]:
    involved = event.get("involvedObject") or event.get("regarding") or {}
    seen = (
        event.get("lastTimestamp") or event.get("eventTime") or meta(event).get("creationTimestamp")
    )
    if isinstance(seen, str) and "." in seen:
        seen = seen.split(".")[0] + "Z"  # MicroTime
    return [
        human_duration(seen),
        event.get("type", ""),
        event.get("reason", ""),
        f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}",
        event.get("message") or event.get("note") or "",
    ]


def _pdb_cells(pdb: dict[str, Any]) -> list[Any]:
    spec, status = pdb.get("spec") or {}, pdb.get("status") or {}
    return [
        str(spec.get("minAvailable", "N/A")),
        str(spec.get("maxUnavailable", "N/A")),
        status.get("disruptionsAllowed", 0),
        _age(pdb),
    ]


def _conditions(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return list((obj.get("status") or {}).get("conditions") or [])


def _count(obj: dict[str, Any], name: str) -> int:
    return int((obj.get("status") or {}).get(name) or 0)


def _replicas(obj: dict[str, Any]) -> str:
    ready = (obj.get("status") or {}).get("readyReplicas") or 0
    return f"{ready}/{(obj.get('spec') or {}).get('replicas', 1)}"


_BUILTIN: dict[tuple[str, str], tuple[list[dict[str, Any]], Cells]] = {
    ("", "pods"): (
        [_col("Ready"), _col("Status"), _col("Restarts", "integer"), _col("Age"),
         _col("IP", priority=1), _col("Node", priority=1)],
        _pod_cells,
    ),
    ("", "nodes"): (
        [_col("Status"), _col("Roles"), _col("Age"), _col("Version")],
        _node_cells,
    ),
    ("", "services"): (
        [_col("Type"), _col("Cluster-IP"), _col("External-IP"), _col("Port(s)"), _col("Age")],
        _service_cells,
    ),
    ("", "namespaces"): (
        [_col("Status"), _col("Age")],
        lambda o: [(o.get("status") or {}).get("phase", ""), _age(o)],
    ),
    ("", "configmaps"): (
        [_col("Data", "integer"), _col("Age")],
        lambda o: [len(o.get("data") or {}) + len(o.get("binaryData") or {}), _age(o)],
    ),
    ("", "persistentvolumeclaims"): (
        [_col("Status"), _col("Volume"), _col("Capacity"), _col("Age")],
        lambda o: [
            (o.get("status") or {}).get("phase", ""),
            (o.get("spec") or {}).get("volumeName", ""),
            ((o.get("status") or {}).get("capacity") or {}).get("storage", ""),
            _age(o),
        ],
    ),
    ("", "events"): (
        [_col("Last Seen"), _col("Type"), _col("Reason"), _col("Object"), _col("Message")],
        _event_cells,
    ),
    ("events.k8s.io", "events"): (
        [_col("Last Seen"), _col("Type"), _col("Reason"), _col("Object"), _col("Message")],
        _event_cells,
    ),
    ("", "secrets"): (
        [_col("Type"), _col("Data", "integer"), _col("Age")],
        lambda o: [o.get("type", "Opaque"), len(o.get("data") or {}), _age(o)],
    ),
    ("policy", "poddisruptionbudgets"): (
        [_col("Min Available"), _col("Max Unavailable"), _col("Allowed Disruptions", "integer"),
         _col("Age")],
        _pdb_cells,
    ),
    ("apps", "statefulsets"): ([_col("Ready"), _col("Age")], lambda o: [_replicas(o), _age(o)]),
    ("apps", "deployments"): (
        [_col("Ready"), _col("Up-to-date", "integer"), _col("Available", "integer"), _col("Age")],
        lambda o: [_replicas(o), _count(o, "updatedReplicas"), _count(o, "availableReplicas"),
                   _age(o)],
    ),
    ("apps", "replicasets"): (
        [_col("Desired", "integer"), _col("Current", "integer"), _col("Ready", "integer"),
         _col("Age")],
        lambda o: [(o.get("spec") or {}).get("replicas", 1), _count(o, "replicas"),
                   _count(o, "readyReplicas"), _age(o)],
    ),
}  # fmt: skip


def _crd_columns(info: ResourceInfo) -> tuple[list[dict[str, Any]], Cells]:
    specs = list(info.printer_columns)
    columns = [
        _col(c["name"], c.get("type", "string"), c.get("priority", 0), c.get("format", ""))
        for c in specs
    ]

    def cells(obj: dict[str, Any]) -> list[Any]:
        return [_printer_cell(obj, c) for c in specs]

    return columns, cells


def _printer_cell(obj: dict[str, Any], column: dict[str, Any]) -> Any:
    values = jsonpath.find(obj, column.get("jsonPath", ""))
    if not values or values[0] is None:
        return None
    value = values[0]
    kind = column.get("type", "string")
    if kind == "date":
        return human_duration(str(value))
    if kind in ("integer", "number", "boolean") and not isinstance(value, dict | list):
        return value
    if len(values) > 1:
        return ",".join(str(v) for v in values)
    return value if isinstance(value, str) else _text(value)


def _text(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def columns_for(info: ResourceInfo) -> tuple[list[dict[str, Any]], Cells]:
    name_col = _col("Name", fmt="name")
    name_col["description"] = "Name must be unique within a namespace."
    if info.printer_columns:
        columns, cells = _crd_columns(info)
    elif info.key.bucket in _BUILTIN:
        columns, cells = _BUILTIN[info.key.bucket]
    elif info.crd_name is not None:
        columns, cells = [_col("Age", "date")], lambda o: [_age(o)]
    else:
        columns, cells = [_col("Age")], lambda o: [_age(o)]

    if info.key.plural == "events":  # kube-apiserver shows an event's name only with -o wide
        name_col["priority"] = 1
        return [*columns, name_col], lambda o: [*cells(o), meta(o).get("name", "")]

    def row_cells(obj: dict[str, Any]) -> list[Any]:
        return [meta(obj).get("name", ""), *cells(obj)]

    return [name_col, *columns], row_cells


def table(
    info: ResourceInfo,
    objects: Iterable[dict[str, Any]],
    *,
    include_object: str = "Metadata",
    list_meta: dict[str, Any] | None = None,
    with_columns: bool = True,
) -> dict[str, Any]:
    columns, cells = columns_for(info)
    rows = [{"cells": cells(o), "object": _row_object(o, include_object)} for o in objects]
    out: dict[str, Any] = {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta or {},
        "rows": rows,
    }
    if with_columns:
        out["columnDefinitions"] = columns
    return out


def _row_object(obj: dict[str, Any], include: str) -> dict[str, Any] | None:
    if include == "None":
        return None
    if include == "Object":
        return obj
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta(obj)}
