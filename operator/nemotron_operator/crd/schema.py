"""Pydantic models → a structural Kubernetes ``openAPIV3Schema``.

Why our own ~150 lines rather than ``kube-custom-resource``: that package's functions are untyped
(mypy --strict rejects every call), it wants its own model base class and derives versions from
module names, and it leaves ``anyOf`` for optionals, ``$defs`` titles and JSON-Schema-2020
``exclusiveMinimum`` numbers in place. Kubernetes needs OpenAPI v3.0 structural schemas: no
``$ref``, no ``anyOf`` for optionals (``nullable`` instead), boolean ``exclusiveMinimum``, and —
for CEL cost estimation — ``maxLength``/``maxItems``/``maxProperties`` on every string, list and
map, which :func:`check_bounded` enforces so a new unbounded field fails the generator.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue, NoDefault
from pydantic_core import core_schema

from nemotron_operator.api.base import ApiModel

Schema = dict[str, Any]

# Keys of JSON Schema that Kubernetes' JSONSchemaProps does not accept or we do not want.
# ``additionalProperties: false`` is not allowed next to ``properties`` (pruning and
# ``kubectl --validate=strict`` reject unknown fields instead); ``propertyNames`` and ``const`` do
# not exist in JSONSchemaProps.
_DROP_KEYS = frozenset({"title", "examples", "$schema", "propertyNames", "const"})


class UnboundedSchemaError(ValueError):
    """A string, list or map in the API has no size bound."""


class _K8sJsonSchema(GenerateJsonSchema):
    """pydantic's generator, adjusted: defaults from factories, nullable instead of anyOf."""

    def get_default_value(self, schema: core_schema.WithDefaultSchema) -> Any:
        if "default_factory" in schema and not schema.get("default_factory_takes_data"):
            factory = cast(Callable[[], Any], schema["default_factory"])
            return _wire(factory())
        value = schema.get("default", NoDefault)
        if value is None:
            return NoDefault
        return _wire(value)

    def nullable_schema(self, schema: core_schema.NullableSchema) -> JsonSchemaValue:
        inner = self.generate_inner(schema["schema"])
        return {**inner, "nullable": True}

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def _wire(value: Any) -> Any:
    if isinstance(value, ApiModel):
        return value.to_wire()
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    if isinstance(value, list):
        return [_wire(v) for v in value]
    if isinstance(value, dict):
        return {k: _wire(v) for k, v in value.items()}
    return value


def openapi_schema(model: type[BaseModel]) -> Schema:
    """The structural ``openAPIV3Schema`` of ``model``."""
    raw = model.model_json_schema(by_alias=True, mode="validation", schema_generator=_K8sJsonSchema)
    defs: dict[str, Schema] = raw.pop("$defs", {})
    return _structural(raw, defs)


def _structural(node: Schema, defs: dict[str, Schema]) -> Schema:
    node = _inline(node, defs)
    out: Schema = {}
    for key, value in node.items():
        if key in _DROP_KEYS or (key == "additionalProperties" and not isinstance(value, dict)):
            continue
        if key == "properties":
            out[key] = {name: _structural(sub, defs) for name, sub in value.items()}
        elif key in ("items", "additionalProperties"):
            out[key] = _structural(value, defs)
        elif key in ("exclusiveMinimum", "exclusiveMaximum"):
            # JSON Schema 2020 numbers → OpenAPI 3.0 booleans next to minimum/maximum.
            out[key.replace("exclusiveM", "m")], out[key] = value, True
        else:
            out[key] = value
    free_form = "properties" not in out and "additionalProperties" not in out
    if out.get("type") == "object" and free_form:
        # A free-form object (e.g. core/v1 Affinity passed through unchanged).
        out["x-kubernetes-preserve-unknown-fields"] = True
    if "required" in out:
        out["required"] = sorted(out["required"])
    return out


def _inline(node: Schema, defs: dict[str, Schema]) -> Schema:
    """Replace ``$ref`` and single-element ``allOf`` by the referenced schema."""
    while True:
        if "$ref" in node:
            target = defs[node["$ref"].removeprefix("#/$defs/")]
            node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        elif "allOf" in node and len(node["allOf"]) == 1:
            node = {**node["allOf"][0], **{k: v for k, v in node.items() if k != "allOf"}}
        else:
            return node


def check_bounded(schema: Schema, path: str = "") -> None:
    """Raise :class:`UnboundedSchemaError` for any string, list or map without a size bound."""
    kind = schema.get("type")
    if kind == "string" and "maxLength" not in schema and "enum" not in schema:
        raise UnboundedSchemaError(f"{path or '<root>'}: string without maxLength")
    if kind == "array":
        if "maxItems" not in schema:
            raise UnboundedSchemaError(f"{path}: array without maxItems")
        check_bounded(schema["items"], f"{path}[*]")
    if kind == "object":
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            if "maxProperties" not in schema:
                raise UnboundedSchemaError(f"{path}: map without maxProperties")
            check_bounded(extra, f"{path}.*")
        for name, sub in schema.get("properties", {}).items():
            check_bounded(sub, f"{path}.{name}" if path else name)
