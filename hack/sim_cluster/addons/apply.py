"""Server-side apply of an add-on's manifests (YAML as their projects publish them)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from nemotron_operator.kube.transport import APPLY, Transport
from nemotron_sim.kubeapi.resources import ResourceKey

FIELD_MANAGER = "nemotron-sim-addons"
_PLURALS = {"Prometheus": "prometheuses", "Endpoints": "endpoints"}
_CLUSTER_KINDS = frozenset(
    {"Namespace", "ClusterRole", "ClusterRoleBinding", "APIService", "CustomResourceDefinition"}
)


def load(paths: Iterable[Path]) -> list[dict[str, Any]]:
    return [
        doc
        for path in paths
        for doc in yaml.safe_load_all(path.read_text())
        if isinstance(doc, dict) and doc.get("kind")
    ]


def resource_key(obj: dict[str, Any]) -> ResourceKey:
    group, _, version = str(obj["apiVersion"]).rpartition("/")
    kind = str(obj["kind"])
    return ResourceKey(group, version, _PLURALS.get(kind, kind.lower() + "s"))


SYSTEM_NAMESPACE = "kube-system"


def in_namespace(obj: dict[str, Any], namespace: str) -> dict[str, Any]:
    """The object moved into ``namespace`` (and a binding's ServiceAccount subjects with it).
    What a manifest puts in ``kube-system`` stays there: a RoleBinding to the system's
    ``extension-apiserver-authentication-reader`` Role, a binding whose subject is a control
    plane controller's ServiceAccount (KEDA's metrics adapter has both)."""
    if obj["kind"] not in _CLUSTER_KINDS and obj["metadata"].get("namespace") != SYSTEM_NAMESPACE:
        obj["metadata"]["namespace"] = namespace
    for subject in obj.get("subjects") or []:
        if subject.get("kind") == "ServiceAccount" and subject.get("namespace") != SYSTEM_NAMESPACE:
            subject["namespace"] = namespace
    return obj


async def apply(api: Transport, objects: Iterable[dict[str, Any]]) -> None:
    for obj in objects:
        md = obj["metadata"]
        namespace = None if obj["kind"] in _CLUSTER_KINDS else md.get("namespace")
        await api.request(
            "PATCH", resource_key(obj).path(namespace, md["name"]),
            params={"fieldManager": FIELD_MANAGER, "force": "true"}, body=obj,
            content_type=APPLY,
        )  # fmt: skip
