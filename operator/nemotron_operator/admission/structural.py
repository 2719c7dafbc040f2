"""Pruning of nulls, defaulting and OpenAPI v3 schema validation, as the API server does them for
a custom resource (apiextensions-apiserver: structural defaulting, then kube-openapi validation).

Messages follow the API server's wording so a test, a user and ``kubectl`` see the same text.
"""

from __future__ import annotations

import copy
import re
from functools import lru_cache
from typing import Any

from nemotron_operator.admission.errors import (
    INVALID,
    NOT_SUPPORTED,
    REQUIRED,
    TOO_LONG,
    TOO_MANY,
    TYPE_INVALID,
    UNKNOWN_FIELD,
    Cause,
)

Schema = dict[str, Any]
PRESERVE = "x-kubernetes-preserve-unknown-fields"


def child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def prune_and_default(value: Any, schema: Schema) -> Any:
    """Drop nulls of non-nullable fields, then fill absent fields that have a ``default``."""
    if isinstance(value, dict) and "properties" in schema:
        props: dict[str, Schema] = schema["properties"]
        for name in list(value):
            sub = props.get(name)
            if value[name] is None and sub is not None and not sub.get("nullable"):
                del value[name]
        for name, sub in props.items():
            if name not in value and "default" in sub:
                value[name] = copy.deepcopy(sub["default"])
            if name in value:
                value[name] = prune_and_default(value[name], sub)
    elif isinstance(value, dict) and isinstance(schema.get("additionalProperties"), dict):
        for key in value:
            value[key] = prune_and_default(value[key], schema["additionalProperties"])
    elif isinstance(value, list) and "items" in schema:
        return [prune_and_default(item, schema["items"]) for item in value]
    return value


def unknown_fields(value: Any, schema: Schema, path: str) -> list[Cause]:
    """Fields the schema does not declare (``fieldValidation=Strict``, kubectl's default)."""
    if schema.get(PRESERVE):
        return []
    found: list[Cause] = []
    if isinstance(value, dict) and "properties" in schema:
        for name, sub_value in value.items():
            sub = schema["properties"].get(name)
            if sub is None:
                found.append(
                    Cause(child(path, name), "field not declared in schema", UNKNOWN_FIELD)
                )
            else:
                found.extend(unknown_fields(sub_value, sub, child(path, name)))
    elif isinstance(value, dict) and isinstance(schema.get("additionalProperties"), dict):
        for key, sub_value in value.items():
            found.extend(
                unknown_fields(sub_value, schema["additionalProperties"], f"{path}[{key}]")
            )
    elif isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            found.extend(unknown_fields(item, schema["items"], f"{path}[{i}]"))
    return found


_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
}


def _type_of(value: Any) -> str:
    for name in ("boolean", "integer", "number", "string", "object", "array"):
        if isinstance(value, _TYPES[name]) and not (name != "boolean" and isinstance(value, bool)):
            return name
    return "null"


def _show(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@lru_cache(maxsize=512)
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def validate(value: Any, schema: Schema, path: str) -> list[Cause]:
    """Every schema violation of ``value`` (already pruned and defaulted)."""
    if value is None:
        if schema.get("nullable"):
            return []
        return [
            Cause(
                path,
                f'Invalid value: "null": {path} in body must be of type '
                f'{schema.get("type", "object")}: "null"',
                TYPE_INVALID,
            )
        ]
    if schema.get("x-kubernetes-int-or-string") and _type_of(value) in ("integer", "string"):
        return []
    expected = schema.get("type")
    actual = _type_of(value)
    if expected and not (actual == expected or (expected == "number" and actual == "integer")):
        message = (
            f'Invalid value: "{actual}": {path} in body must be of type {expected}: "{actual}"'
        )
        return [Cause(path, message, TYPE_INVALID)]
    causes = _scalar_rules(value, schema, path)
    if isinstance(value, dict):
        causes += _object_rules(value, schema, path)
    elif isinstance(value, list):
        causes += _array_rules(value, schema, path)
    return causes


def _scalar_rules(value: Any, schema: Schema, path: str) -> list[Cause]:
    causes: list[Cause] = []
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(_show(v) for v in schema["enum"])
        causes.append(
            Cause(
                path,
                f"Unsupported value: {_show(value)}: supported values: {allowed}",
                NOT_SUPPORTED,
            )
        )
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        causes += _number_rules(value, schema, path)
    if isinstance(value, str):
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            causes.append(
                Cause(path, f"Too long: may not be more than {schema['maxLength']} bytes", TOO_LONG)
            )
        if "minLength" in schema and len(value) < schema["minLength"]:
            causes.append(
                Cause(
                    path,
                    f"Invalid value: {_show(value)}: {path} in body should be "
                    f"at least {schema['minLength']} chars long",
                )
            )
        if "pattern" in schema and not _regex(schema["pattern"]).search(value):
            causes.append(
                Cause(
                    path,
                    f"Invalid value: {_show(value)}: {path} in body should "
                    f"match '{schema['pattern']}'",
                )
            )
    return causes


def _number_rules(value: float, schema: Schema, path: str) -> list[Cause]:
    causes = []
    if "minimum" in schema:
        low, strict = schema["minimum"], bool(schema.get("exclusiveMinimum"))
        if value < low or (strict and value == low):
            bound = "greater than" if strict else "greater than or equal to"
            causes.append(
                Cause(
                    path, f"Invalid value: {_show(value)}: {path} in body should be {bound} {low}"
                )
            )
    if "maximum" in schema:
        high, strict = schema["maximum"], bool(schema.get("exclusiveMaximum"))
        if value > high or (strict and value == high):
            bound = "less than" if strict else "less than or equal to"
            causes.append(
                Cause(
                    path, f"Invalid value: {_show(value)}: {path} in body should be {bound} {high}"
                )
            )
    return causes


def _object_rules(value: dict[str, Any], schema: Schema, path: str) -> list[Cause]:
    causes = [
        Cause(child(path, name), "Required value", REQUIRED)
        for name in schema.get("required", [])
        if name not in value
    ]
    if "maxProperties" in schema and len(value) > schema["maxProperties"]:
        causes.append(
            Cause(
                path,
                f"Too many: {len(value)}: must have at most {schema['maxProperties']} items",
                TOO_MANY,
            )
        )
    props: dict[str, Schema] = schema.get("properties", {})
    extra = schema.get("additionalProperties")
    for name, sub_value in value.items():
        if name in props:
            causes += validate(sub_value, props[name], child(path, name))
        elif isinstance(extra, dict):
            causes += validate(sub_value, extra, f"{path}[{name}]")
    return causes


def _array_rules(value: list[Any], schema: Schema, path: str) -> list[Cause]:
    causes = []
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        causes.append(
            Cause(
                path,
                f"Too many: {len(value)}: must have at most {schema['maxItems']} items",
                TOO_MANY,
            )
        )
    if "minItems" in schema and len(value) < schema["minItems"]:
        causes.append(
            Cause(
                path,
                f"Invalid value: {len(value)}: {path} in body should have at "
                f"least {schema['minItems']} items",
                INVALID,
            )
        )
    if "items" in schema:
        for i, item in enumerate(value):
            causes += validate(item, schema["items"], f"{path}[{i}]")
    return causes
