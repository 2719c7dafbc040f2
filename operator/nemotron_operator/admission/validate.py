"""Validate a custom resource against its CustomResourceDefinition, as the API server would."""

from __future__ import annotations

import copy
import re
from typing import Any, Literal

from nemotron_operator.admission import cel_rules, structural
from nemotron_operator.admission.errors import (
    INVALID,
    REQUIRED,
    TYPE_INVALID,
    AdmissionError,
    Cause,
)

FieldValidation = Literal["Strict", "Warn", "Ignore"]
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_ROOT_KEYS = ("apiVersion", "kind", "metadata")


def version_schema(crd: dict[str, Any], api_version: str) -> dict[str, Any]:
    """The ``openAPIV3Schema`` of the CRD version that ``api_version`` names."""
    group = crd["spec"]["group"]
    for version in crd["spec"]["versions"]:
        if f"{group}/{version['name']}" == api_version and version.get("served", True):
            schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
            return schema
    raise KeyError(f"{api_version} is not served by {crd['metadata']['name']}")


def validate_object(
    crd: dict[str, Any],
    obj: dict[str, Any],
    old: dict[str, Any] | None = None,
    *,
    field_validation: FieldValidation = "Strict",
) -> dict[str, Any]:
    """Return ``obj`` pruned and defaulted, or raise :class:`AdmissionError`.

    Order as in apiextensions-apiserver: unknown fields (Strict → 400), null pruning and
    defaulting, schema validation, then CEL rules — skipped when a type error makes them
    meaningless, as the API server does.
    """
    kind = crd["spec"]["names"]["kind"]
    group = crd["spec"]["group"]
    name = str((obj.get("metadata") or {}).get("name", ""))
    schema = version_schema(crd, str(obj.get("apiVersion", "")))
    body = copy.deepcopy(obj)

    top_schema = _top_schema(schema)
    top = {k: v for k, v in body.items() if k not in _ROOT_KEYS}
    unknown = structural.unknown_fields(top, top_schema, "")
    if unknown and field_validation == "Strict":
        raise AdmissionError(kind, group, name, unknown, code=400)
    top = structural.prune_and_default(_prune_unknown(top, top_schema), top_schema)
    body = {**{k: body[k] for k in _ROOT_KEYS if k in body}, **top}

    causes = _metadata_causes(body)
    for key, sub in schema.get("properties", {}).items():
        if key in _ROOT_KEYS:
            continue
        if key in body:
            causes += structural.validate(body[key], sub, key)
        elif key in schema.get("required", []):
            causes.append(Cause(key, "Required value", REQUIRED))
    if not any(c.reason == TYPE_INVALID for c in causes):
        for key, sub in schema.get("properties", {}).items():
            if key in _ROOT_KEYS or key not in body:
                continue
            has_old = old is not None and key in old
            old_value = old.get(key) if old is not None else None
            causes += cel_rules.evaluate(body[key], old_value, sub, key, has_old=has_old)
    if causes:
        raise AdmissionError(kind, group, name, causes)
    return body


def unknown_fields(crd: dict[str, Any], obj: dict[str, Any]) -> list[Cause]:
    """The fields of ``obj`` its CRD version does not declare (what ``fieldValidation=Strict``
    refuses and ``Warn`` warns about); ``obj`` is not modified."""
    schema = version_schema(crd, str(obj.get("apiVersion", "")))
    top = {k: v for k, v in obj.items() if k not in _ROOT_KEYS}
    return structural.unknown_fields(top, _top_schema(schema), "")


def _top_schema(schema: dict[str, Any]) -> dict[str, Any]:
    top_schema: dict[str, Any] = {
        "properties": {k: v for k, v in schema.get("properties", {}).items() if k not in _ROOT_KEYS}
    }
    if schema.get(structural.PRESERVE):
        top_schema[structural.PRESERVE] = True
    return top_schema


def _prune_unknown(value: Any, schema: dict[str, Any]) -> Any:
    """Drop undeclared fields (what the API server stores under Warn/Ignore)."""
    if schema.get(structural.PRESERVE):
        return value
    if isinstance(value, dict) and "properties" in schema:
        props = schema["properties"]
        return {k: _prune_unknown(v, props[k]) for k, v in value.items() if k in props}
    if isinstance(value, dict) and isinstance(schema.get("additionalProperties"), dict):
        return {k: _prune_unknown(v, schema["additionalProperties"]) for k, v in value.items()}
    if isinstance(value, list) and "items" in schema:
        return [_prune_unknown(v, schema["items"]) for v in value]
    return value


def _metadata_causes(body: dict[str, Any]) -> list[Cause]:
    meta = body.get("metadata")
    if not isinstance(meta, dict):
        return [Cause("metadata", "Required value", REQUIRED)]
    name = meta.get("name")
    if not name and not meta.get("generateName"):
        return [
            Cause("metadata.name", "Required value: name or generateName is required", REQUIRED)
        ]
    if name and (len(str(name)) > 253 or not _NAME.match(str(name))):
        return [
            Cause(
                "metadata.name",
                f'Invalid value: "{name}": a lowercase RFC 1123 subdomain '
                "must consist of lower case alphanumeric characters, '-' or '.', and must "
                "start and end with an alphanumeric character",
                INVALID,
            )
        ]
    return []
