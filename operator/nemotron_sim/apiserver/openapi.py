"""Just enough ``/openapi/v3`` for ``kubectl apply`` to validate on the server.

kubectl 1.27+ asks the OpenAPI v3 document of a group-version whether the PATCH operation of a
kind accepts the ``fieldValidation`` (and ``dryRun``) query parameters; when it does, kubectl
sends ``fieldValidation=Strict`` and leaves validation to the server instead of downloading
schemas. The PATCH operations advertised here list no strategic-merge content type, so kubectl
computes strategic merge patches from its compiled-in types, as it does for any server whose
OpenAPI lacks them. There are no component schemas: ``kubectl explain`` does not work.
"""

from __future__ import annotations

import hashlib
from typing import Any

from nemotron_sim.apiserver.discovery import SIM_VERSION
from nemotron_sim.apiserver.resources import Registry, ResourceInfo

_PARAMS = ("fieldValidation", "dryRun", "fieldManager", "force")
_PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
)


def document(registry: Registry, path: str, _hash: str | None) -> dict[str, Any] | None:
    """The root (``/openapi/v3``) or one group-version's document; ``None`` if unknown."""
    parts = [p for p in path.split("/") if p][2:]
    if not parts:
        return _root(registry)
    group, version = ("", parts[1]) if parts[0] == "api" else (parts[1], parts[2])
    if parts[0] not in ("api", "apis") or len(parts) != (2 if parts[0] == "api" else 3):
        return None
    infos = registry.resources_of(group, version)
    return _group_version(infos) if infos else None


def _gv_path(group: str, version: str) -> str:
    return f"api/{version}" if not group else f"apis/{group}/{version}"


def _root(registry: Registry) -> dict[str, Any]:
    paths = {}
    for group, versions in registry.groups().items():
        for version in versions:
            infos = registry.resources_of(group, version)
            gv = _gv_path(group, version)
            paths[gv] = {"serverRelativeURL": f"/openapi/v3/{gv}?hash={_digest(infos)}"}
    return {"paths": paths}


def _digest(infos: list[ResourceInfo]) -> str:
    text = ",".join(sorted(f"{i.key}:{i.kind}:{i.namespaced}" for i in infos))
    return hashlib.sha256(text.encode()).hexdigest()[:32].upper()


def _group_version(infos: list[ResourceInfo]) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for info in infos:
        key = info.key
        scope = "/namespaces/{namespace}" if info.namespaced else ""
        base = f"/{_gv_path(key.group, key.version)}{scope}/{key.plural}/{{name}}"
        gvk = {"group": key.group, "version": key.version, "kind": info.kind}
        parameters = [
            {"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
            for name in _PARAMS
        ]
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
        "components": {"schemas": {}},
    }
