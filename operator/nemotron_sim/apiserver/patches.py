"""Patch formats: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and an approximation of
Kubernetes strategic merge patch.

Strategic merge is approximated as a merge patch that knows the merge keys of the built-in list
fields (containers by ``name``, ports by ``containerPort``/``port``, ...) and the ``$patch``,
``$setElementOrder``, ``$deleteFromPrimitiveList`` and ``$retainKeys`` directives that kubectl
sends; it does not read the Go struct tags, so an unlisted keyed list is replaced as a whole.
"""

from __future__ import annotations

import json
from typing import Any

from nemotron_sim.apiserver.errors import ApiError, bad_request

# patchMergeKey of the built-in list fields kubectl's strategic merge patches address.
MERGE_KEYS: dict[str, tuple[str, ...]] = {
    "containers": ("name",),
    "initContainers": ("name",),
    "ephemeralContainers": ("name",),
    "volumes": ("name",),
    "volumeMounts": ("mountPath",),
    "volumeDevices": ("devicePath",),
    "env": ("name",),
    "ports": ("containerPort", "port"),
    "imagePullSecrets": ("name",),
    "hostAliases": ("ip",),
    "conditions": ("type",),
    "ownerReferences": ("uid",),
    "resourceClaims": ("name",),
    "topologySpreadConstraints": ("topologyKey",),
}
# Lists of scalars that merge as sets (patchStrategy "merge" on a []string).
SET_LISTS = frozenset({"finalizers"})


def copy_json(value: Any) -> Any:
    """Deep copy of a JSON tree; several times faster than ``copy.deepcopy``."""
    if isinstance(value, dict):
        return {k: copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_json(v) for v in value]
    return value


def copy_obj(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: copy_json(v) for k, v in obj.items()}


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: maps merge recursively, ``null`` deletes, everything else replaces."""
    if not isinstance(patch, dict):
        return copy_json(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def merge_key_of(field: str, items: list[Any]) -> str | None:
    """The merge key a keyed built-in list uses, judged from its items."""
    for key in MERGE_KEYS.get(field, ()):
        if items and all(isinstance(i, dict) and key in i for i in items):
            return key
    return None


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy_json(patch)
    if patch.get("$patch") == "replace":
        return {k: copy_json(v) for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    result = dict(target) if isinstance(target, dict) else {}
    retain = patch.get("$retainKeys")
    for key, value in patch.items():
        if key.startswith("$setElementOrder/") or key in ("$retainKeys", "$patch"):
            continue  # element order is approximated by merge order
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            result[field] = [v for v in result.get(field) or [] if v not in value]
        elif value is None:
            result.pop(key, None)
        elif isinstance(value, list) and isinstance(result.get(key), list):
            result[key] = _merge_list(key, result[key], value)
        else:
            merged = strategic_merge_patch(result.get(key), value)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _merge_list(field: str, current: list[Any], patch: list[Any]) -> list[Any]:
    if field in SET_LISTS:
        return current + [copy_json(v) for v in patch if v not in current]
    key = (
        merge_key_of(field, [p for p in patch if p.get("$patch") != "delete"] or patch)
        if (patch and all(isinstance(p, dict) for p in patch))
        else None
    )
    if key is None:
        return [copy_json(v) for v in patch]
    merged = list(current)
    for item in patch:
        index = next(
            (i for i, c in enumerate(merged) if isinstance(c, dict) and c.get(key) == item[key]),
            None,
        )
        if item.get("$patch") == "delete":
            if index is not None:
                del merged[index]
        elif index is None:
            merged.append(strategic_merge_patch({}, item))
        else:
            merged[index] = strategic_merge_patch(merged[index], item)
    return merged


# --- RFC 6902 -------------------------------------------------------------------------------


class PatchTestFailedError(ApiError):
    def __init__(self, message: str) -> None:
        super().__init__(422, message, reason="Invalid")


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise bad_request(f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _resolve(doc: Any, parts: list[str], path: str) -> Any:
    node = doc
    for part in parts:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise PatchTestFailedError(f"jsonpatch: path {path!r} does not exist")
    return node


def _add(doc: Any, parts: list[str], value: Any, path: str, *, replace: bool) -> Any:
    if not parts:
        return value
    parent = _resolve(doc, parts[:-1], path)
    last = parts[-1]
    if isinstance(parent, dict):
        if replace and last not in parent:
            raise PatchTestFailedError(f"jsonpatch replace: path {path!r} does not exist")
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-" and not replace:
            parent.append(value)
        elif last.isdigit() and int(last) <= len(parent) - (1 if replace else 0):
            if replace:
                parent[int(last)] = value
            else:
                parent.insert(int(last), value)
        else:
            raise PatchTestFailedError(f"jsonpatch: index {last!r} out of range in {path!r}")
    else:
        raise PatchTestFailedError(f"jsonpatch: cannot address {path!r}")
    return doc


def _remove(doc: Any, parts: list[str], path: str) -> Any:
    if not parts:
        raise PatchTestFailedError("jsonpatch: cannot remove the whole document")
    parent = _resolve(doc, parts[:-1], path)
    last = parts[-1]
    if isinstance(parent, dict) and last in parent:
        return parent.pop(last)
    if isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        return parent.pop(int(last))
    raise PatchTestFailedError(f"jsonpatch remove: path {path!r} does not exist")


def json_patch(doc: Any, operations: Any) -> Any:
    """Apply RFC 6902 operations to a copy; a failed ``test`` raises 422 (kopf relies on it)."""
    if not isinstance(operations, list):
        raise bad_request("a JSON patch must be a list of operations")
    doc = copy_json(doc)
    for op in operations:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise bad_request(f"invalid JSON patch operation: {op!r}")
        kind, path = op["op"], op["path"]
        parts = _pointer(path)
        if kind == "test":
            actual = _resolve(doc, parts, path)
            if actual != op.get("value"):
                raise PatchTestFailedError(
                    f"the server rejected our request due to an error in our request: "
                    f"testing value {path} failed: {json.dumps(actual)} != "
                    f"{json.dumps(op.get('value'))}"
                )
        elif kind in ("add", "replace"):
            doc = _add(doc, parts, copy_json(op.get("value")), path, replace=kind == "replace")
        elif kind == "remove":
            _remove(doc, parts, path)
        elif kind in ("move", "copy"):
            source = _pointer(op.get("from", ""))
            value = copy_json(_resolve(doc, source, op.get("from", "")))
            if kind == "move":
                _remove(doc, source, op.get("from", ""))
            doc = _add(doc, parts, value, path, replace=False)
        else:
            raise bad_request(f"unknown JSON patch operation {kind!r}")
    return doc
