"""Small helpers over Kubernetes objects as plain dicts."""

from __future__ import annotations

import re
import secrets
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # as k8s.io/apimachinery utilrand


def now_rfc3339(later_seconds: float = 0) -> str:
    return (datetime.now(UTC) + timedelta(seconds=later_seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_uid() -> str:
    return str(uuid.uuid4())


def generated_name(prefix: str) -> str:
    return prefix + "".join(secrets.choice(_GENERATE_ALPHABET) for _ in range(5))


def name_problem(name: str, *, label: bool) -> str | None:
    """Why ``name`` is not a valid object name, or ``None``."""
    if label:
        if len(name) > 63 or not _DNS_LABEL.match(name):
            return (
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
                "or '-', and must start and end with an alphanumeric character"
            )
        return None
    if len(name) > 253 or not _DNS_SUBDOMAIN.match(name):
        return (
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
            "'-' or '.', and must start and end with an alphanumeric character"
        )
    return None


def meta(obj: dict[str, Any]) -> dict[str, Any]:
    value = obj.get("metadata")
    return value if isinstance(value, dict) else {}


def get_path(obj: Any, dotted: str) -> Any:
    """``.spec.replicas`` → the value, or ``None`` when any step is missing."""
    node = obj
    for part in dotted.lstrip(".").split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


def set_path(obj: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    """A copy of ``obj`` with the value at a dotted path set (copying only the path)."""
    parts = dotted.lstrip(".").split(".")
    result = dict(obj)
    node = result
    for part in parts[:-1]:
        child = node.get(part)
        node[part] = dict(child) if isinstance(child, dict) else {}
        node = node[part]
    node[parts[-1]] = value
    return result


def without(obj: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in keys}
