"""``x-kubernetes-validations`` (CEL) evaluated with cel-python, the way the API server applies
them: rules run on every schema node present in the object; a rule that mentions ``oldSelf`` is a
transition rule and runs only on update, where the old object has a value at the same path.
Unchanged values are not re-checked (ratcheting).

Values are converted using the schema's types (a YAML ``1`` in a ``number`` field is a CEL
double), because CEL has no implicit int/double comparison.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import celpy
from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.evaluation import CELEvalError

from nemotron_operator.admission.errors import INVALID, Cause
from nemotron_operator.admission.structural import Schema, child

RULES = "x-kubernetes-validations"
_ENV = celpy.Environment()


@lru_cache(maxsize=256)
def _program(rule: str) -> celpy.Runner:
    return _ENV.program(_ENV.compile(rule))


def _run(text: str, activation: dict[str, Any]) -> bool | str:
    """The rule's verdict, or the text of its evaluation error.

    CEL is deterministic, so a verdict is remembered per rule and activation (keyed by the CEL
    values' ``repr``, which carries their types): a thousand objects with the same spec are
    checked once, not a thousand times through the interpreter."""
    key = (text, repr(activation))
    verdict = _VERDICTS.get(key)
    if verdict is None:
        try:
            result = _program(text).evaluate(activation)
        except CELEvalError as exc:
            verdict = str(exc.args[0] if exc.args else exc)
        else:
            verdict = bool(result)
        if len(_VERDICTS) >= _VERDICTS_KEPT:
            del _VERDICTS[next(iter(_VERDICTS))]  # the oldest
        _VERDICTS[key] = verdict
    return verdict


_VERDICTS: dict[tuple[str, str], bool | str] = {}
_VERDICTS_KEPT = 4096


def to_cel(value: Any, schema: Schema) -> Any:
    """A JSON value as a CEL value, typed by its schema."""
    kind = schema.get("type")
    if value is None:
        return None
    if kind == "number":
        return celtypes.DoubleType(float(value))
    if isinstance(value, dict):
        props: dict[str, Schema] = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        items = {
            celtypes.StringType(k): to_cel(
                v, props.get(k, extra if isinstance(extra, dict) else {})
            )
            for k, v in value.items()
        }
        return celtypes.MapType(items)
    if isinstance(value, list):
        return celtypes.ListType([to_cel(v, schema.get("items", {})) for v in value])
    return json_to_cel(value)


def _schema_type(schema: Schema) -> str:
    return str(schema.get("type", "object"))


def evaluate(value: Any, old: Any, schema: Schema, path: str, *, has_old: bool) -> list[Cause]:
    """Run every rule under ``schema`` against ``value`` (and ``old`` where correlated).

    A value equal to the stored one is not re-checked (validation ratcheting, on by default since
    Kubernetes 1.30): a status write does not re-run the spec's rules, and an object stored before
    a rule existed can still be updated elsewhere.
    """
    if has_old and value == old:
        return []
    causes: list[Cause] = []
    for rule in schema.get(RULES, []):
        text: str = rule["rule"]
        transition = "oldSelf" in text
        if transition and not has_old:
            continue
        activation: dict[str, Any] = {"self": to_cel(value, schema)}
        if transition:
            activation["oldSelf"] = to_cel(old, schema)
        where = path + rule["fieldPath"] if rule.get("fieldPath") else path
        passed = _run(text, activation)
        if isinstance(passed, str):
            message = f"rule evaluation error: {text}: {passed}"
            causes.append(Cause(where, f'Invalid value: "{_schema_type(schema)}": {message}'))
            continue
        if not passed:
            message = rule.get("message") or f"failed rule: {text}"
            causes.append(
                Cause(where, f'Invalid value: "{_schema_type(schema)}": {message}', INVALID)
            )
    causes += _children(value, old, schema, path, has_old=has_old)
    return causes


def _children(value: Any, old: Any, schema: Schema, path: str, *, has_old: bool) -> list[Cause]:
    causes: list[Cause] = []
    if isinstance(value, dict):
        props: dict[str, Schema] = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        old_map = old if has_old and isinstance(old, dict) else {}
        for name, sub_value in value.items():
            sub = props.get(name, extra if isinstance(extra, dict) else None)
            if sub is None:
                continue
            sub_path = child(path, name) if name in props else f"{path}[{name}]"
            causes += evaluate(sub_value, old_map.get(name), sub, sub_path, has_old=name in old_map)
    elif isinstance(value, list) and "items" in schema:
        # List items correlate with old items only for listType=map; ours have none, so
        # transition rules inside lists run as on create (as the API server does).
        for i, item in enumerate(value):
            causes += evaluate(item, None, schema["items"], f"{path}[{i}]", has_old=False)
    return causes
