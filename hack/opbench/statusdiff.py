"""What changed in the deployments' status across a window (idle, a restart): the evidence
for a write the operator should not have made."""

from __future__ import annotations

from typing import Any

from opbench.collector import Key


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Dotted paths to leaves; conditions keyed by their type, other lists by index."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            out |= flatten(item, f"{prefix}.{key}" if prefix else key)
        return out
    if isinstance(value, list):
        out = {}
        for index, item in enumerate(value):
            label = item.get("type", index) if isinstance(item, dict) else index
            out |= flatten(item, f"{prefix}[{label}]")
        return out
    return {prefix: value}


def status_changes(before: dict[Key, Any], after: dict[Key, Any]) -> dict[str, Any]:
    """Which status fields differ after the restart, and in how many deployments: the evidence
    for a write the restart should not have made."""
    paths: dict[str, int] = {}
    example: dict[str, Any] = {}
    changed = 0
    for key, old in before.items():
        new_flat, old_flat = flatten(after.get(key) or {}), flatten(old)
        differing = {p for p in old_flat.keys() | new_flat.keys()
                     if old_flat.get(p) != new_flat.get(p)}  # fmt: skip
        changed += bool(differing)
        for path in differing:
            paths[path] = paths.get(path, 0) + 1
            example.setdefault(path, [old_flat.get(path), new_flat.get(path)])
    return {"deployments": changed, "paths": dict(sorted(paths.items())), "example": example}
