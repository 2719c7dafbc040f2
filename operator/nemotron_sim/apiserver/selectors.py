"""Label and field selectors, in the query-string syntax and as ``LabelSelector`` objects."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from typing import Any

from nemotron_sim.apiserver.errors import bad_request

Predicate = Callable[[Mapping[str, Any]], bool]
LabelPredicate = Callable[[Mapping[str, str]], bool]

_SET_RE = re.compile(r"^\s*([^\s!=<>]+)\s+(in|notin)\s*\((.*)\)\s*$")
_OP_RE = re.compile(r"^\s*([^\s!=<>]+)\s*(==|!=|=|<|>)\s*([^\s]*)\s*$")
_EXISTS_RE = re.compile(r"^\s*(!?)\s*([^\s!=<>()]+)\s*$")


def _split_requirements(text: str) -> list[str]:
    """Split on commas that are not inside ``( )`` of a set requirement."""
    parts, depth, current = [], 0, ""
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return [p for p in parts if p.strip()]


def _requirement(text: str) -> Callable[[Mapping[str, str]], bool]:
    if match := _SET_RE.match(text):
        key, op = match.group(1), match.group(2)
        values = {v.strip() for v in match.group(3).split(",") if v.strip()}
        if op == "in":
            return lambda labels: key in labels and labels[key] in values
        return lambda labels: key not in labels or labels[key] not in values
    if match := _OP_RE.match(text):
        key, op, value = match.groups()
        if op in ("=", "=="):
            return lambda labels: labels.get(key) == value
        if op == "!=":
            return lambda labels: labels.get(key) != value
        return _compare(key, op, value, text)
    if match := _EXISTS_RE.match(text):
        negate, key = match.group(1) == "!", match.group(2)
        return lambda labels: (key in labels) != negate
    raise bad_request(f"unable to parse requirement: {text!r}")


def _compare(key: str, op: str, value: str, text: str) -> Callable[[Mapping[str, str]], bool]:
    try:
        bound = int(value)
    except ValueError:
        raise bad_request(f"invalid label selector: {text!r}: {op} needs an integer") from None

    def compare(labels: Mapping[str, str]) -> bool:
        try:
            actual = int(labels[key])
        except (KeyError, ValueError):
            return False
        return actual < bound if op == "<" else actual > bound

    return compare


@functools.lru_cache(maxsize=4096)
def label_predicate(text: str) -> LabelPredicate | None:
    """``tier=big,env in (a,b),!legacy`` → a predicate over a label map; ``None`` if empty.
    Parsed once per distinct text (controllers match the same few selectors all the time)."""
    if not text.strip():
        return None
    requirements = tuple(_requirement(part) for part in _split_requirements(text))
    if len(requirements) == 1:
        return requirements[0]
    return lambda labels: all(req(labels) for req in requirements)


def parse_label_selector(text: str | None) -> Predicate | None:
    """``tier=big,env in (a,b),!legacy`` → a predicate over an object; ``None`` if empty."""
    if not text:
        return None
    predicate = label_predicate(text)
    if predicate is None:
        return None
    return lambda obj: predicate((obj.get("metadata") or {}).get("labels") or {})


def parse_field_selector(text: str | None) -> Predicate | None:
    """``metadata.name=x,spec.nodeName!=`` → a predicate. Any dotted path is accepted (a real
    server allows only a few fields per type); values compare as strings."""
    if not text or not text.strip():
        return None
    terms: list[tuple[list[str], bool, str]] = []
    for part in text.split(","):
        match = re.match(r"^\s*([A-Za-z0-9_.]+)\s*(==|!=|=)\s*(.*?)\s*$", part)
        if match is None:
            raise bad_request(f"invalid field selector: {part!r}")
        path, op, value = match.groups()
        terms.append((path.split("."), op == "!=", value))

    def matches(obj: Mapping[str, Any]) -> bool:
        return all((_field_text(obj, path) == value) != negate for path, negate, value in terms)

    return matches


def _field_text(obj: Mapping[str, Any], path: list[str]) -> str:
    node: Any = obj
    for part in path:
        if not isinstance(node, Mapping):
            return ""
        node = node.get(part)
    if node is None:
        return ""
    if isinstance(node, bool):
        return "true" if node else "false"
    return str(node)


def selector_to_string(selector: Mapping[str, Any] | None) -> str:
    """A ``LabelSelector`` object (matchLabels/matchExpressions) in query-string syntax."""
    if not selector:
        return ""
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        if op == "In":
            parts.append(f"{key} in ({','.join(values)})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({','.join(values)})")
        elif op == "Exists":
            parts.append(key)
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
        else:
            raise bad_request(f"unknown label selector operator {op!r}")
    return ",".join(parts)


def match_labels(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """Does a ``LabelSelector`` object select these labels? An empty selector selects all."""
    predicate = label_predicate(selector_to_string(selector))
    return predicate is None or predicate(labels)


def object_predicate(label_selector: str | None, field_selector: str | None) -> Predicate | None:
    """Both selectors of a list or watch request as one predicate; ``None`` if both are empty."""
    labels = parse_label_selector(label_selector)
    fields = parse_field_selector(field_selector)
    if labels is None or fields is None:
        return labels or fields
    return lambda obj: labels(obj) and fields(obj)
