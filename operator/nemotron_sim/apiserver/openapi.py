"""``/openapi/v3``: enough for ``kubectl apply`` to validate on the server and for ``kubectl
explain`` on custom resources.

kubectl 1.27+ asks the OpenAPI v3 document of a group-version whether the PATCH operation of a
kind accepts the ``fieldValidation`` (and ``dryRun``) query parameters; when it does, kubectl
sends ``fieldValidation=Strict`` and leaves validation to the server instead of downloading
schemas. The PATCH operations advertised here list no strategic-merge content type, so kubectl
computes strategic merge patches from its compiled-in types, as it does for any server whose
OpenAPI lacks them.

Each custom resource's ``openAPIV3Schema`` is published under ``components.schemas`` with its
``x-kubernetes-group-version-kind``, as apiextensions-apiserver publishes it (``apiVersion``,
``kind`` and ``metadata`` described), which is what ``kubectl explain`` reads. Built-in kinds
have no schemas here. A document's ``hash`` changes with the CRDs' ``resourceVersion``, so
kubectl's cache does not serve an old schema (no caching headers are sent today).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from nemotron_sim.apiserver.discovery import SIM_VERSION
from nemotron_sim.apiserver.resources import Registry, ResourceInfo

_PARAMS = ("fieldValidation", "dryRun", "fieldManager", "force")
_PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
)


# A CRD's name → the stored CRD (or None)
CrdLookup = Callable[[str], dict[str, Any] | None]
_TYPE_META = {
    "apiVersion": (
        "APIVersion defines the versioned schema of this representation of an object. Servers "
        "should convert recognized schemas to the latest internal value, and may reject "
        "unrecognized values."
    ),
    "kind": (
        "Kind is a string value representing the REST resource this object represents. Servers "
        "may infer this from the endpoint the client submits requests to. Cannot be updated. In "
        "CamelCase."
    ),
}
_METADATA = (
    "Standard object's metadata. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)


def document(
    registry: Registry, path: str, _hash: str | None, crd: CrdLookup
) -> dict[str, Any] | None:
    """The root (``/openapi/v3``) or one group-version's document; ``None`` if unknown."""
    parts = [p for p in path.split("/") if p][2:]
    if not parts:
        return _root(registry, crd)
    group, version = ("", parts[1]) if parts[0] == "api" else (parts[1], parts[2])
    if parts[0] not in ("api", "apis") or len(parts) != (2 if parts[0] == "api" else 3):
        return None
    infos = registry.resources_of(group, version)
    return _group_version(infos, crd) if infos else None


def _gv_path(group: str, version: str) -> str:
    return f"api/{version}" if not group else f"apis/{group}/{version}"


def _root(registry: Registry, crd: CrdLookup) -> dict[str, Any]:
    paths = {}
    for group, versions in registry.groups().items():
        for version in versions:
            infos = registry.resources_of(group, version)
            gv = _gv_path(group, version)
            paths[gv] = {"serverRelativeURL": f"/openapi/v3/{gv}?hash={_digest(infos, crd)}"}
    return {"paths": paths}


def _crd_revision(info: ResourceInfo, crd: CrdLookup) -> str:
    found = crd(info.crd_name) if info.crd_name else None
    return str((found or {}).get("metadata", {}).get("resourceVersion", ""))


def _digest(infos: list[ResourceInfo], crd: CrdLookup) -> str:
    text = ",".join(
        sorted(f"{i.key}:{i.kind}:{i.namespaced}:{_crd_revision(i, crd)}" for i in infos)
    )
    return hashlib.sha256(text.encode()).hexdigest()[:32].upper()


def _schema_name(info: ResourceInfo) -> str:
    """As apiextensions-apiserver names it: the group reversed, then version and kind."""
    group = ".".join(reversed(info.key.group.split(".")))
    return f"{group}.{info.key.version}.{info.kind}"


def _crd_schema(info: ResourceInfo, crd: CrdLookup) -> dict[str, Any] | None:
    found = crd(info.crd_name) if info.crd_name else None
    for version in ((found or {}).get("spec") or {}).get("versions") or []:
        if version.get("name") != info.key.version:
            continue
        schema = dict((version.get("schema") or {}).get("openAPIV3Schema") or {})
        properties = dict(schema.get("properties") or {})
        for name, text in _TYPE_META.items():
            properties[name] = {**properties.get(name, {}), "type": "string", "description": text}
        properties["metadata"] = {"type": "object", "description": _METADATA}
        schema.update(type="object", properties=properties)
        gvk = {"group": info.key.group, "version": info.key.version, "kind": info.kind}
        schema["x-kubernetes-group-version-kind"] = [gvk]
        return schema
    return None


def _group_version(infos: list[ResourceInfo], crd: CrdLookup) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {}
    for info in infos:
        key = info.key
        scope = "/namespaces/{namespace}" if info.namespaced else ""
        base = f"/{_gv_path(key.group, key.version)}{scope}/{key.plural}/{{name}}"
        gvk = {"group": key.group, "version": key.version, "kind": info.kind}
        parameters = [
            {"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
            for name in _PARAMS
        ]
        schema = _crd_schema(info, crd)
        if schema is not None:
            schemas[_schema_name(info)] = schema
        paths[base] = {
            "patch": {
                "operationId": f"patch{info.kind}",
                "x-kubernetes-action": "patch",
                "x-kubernetes-group-version-kind": gvk,
                "parameters": parameters,
                "requestBody": {
                    "content": {t: {"schema": {"type": "object"}} for t in _PATCH_TYPES},
                    "required": True,
                },
                "responses": {"200": {"description": "OK"}},
            }
        }
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes (simulated)", "version": SIM_VERSION},
        "paths": paths,
        "components": {"schemas": schemas},
    }
