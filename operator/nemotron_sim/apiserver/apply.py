"""An approximation of server-side apply (``PATCH`` with ``application/apply-patch+yaml``).

What it does: creates the object if it is absent; otherwise merges the applied configuration
into the live object (maps recursively, built-in keyed lists by their merge key, other lists as
a whole); records what each field manager applied in ``metadata.managedFields`` (``FieldsV1``,
operation ``Apply``); removes fields a manager applied before and no longer applies unless
another apply manager also owns them; and answers 409 with the conflicting fields when another
*apply* manager owns a field with a different value, unless ``force=true``.

What it does not do: it does not track fields set by ordinary updates (PUT, merge/JSON patch),
so it never reports conflicts with them and ownership does not move to them; custom resources'
lists are atomic (``x-kubernetes-list-type`` in the CRD schema is not read); there is no
structured-merge-diff type information, no defaulting before the comparison, and field order
follows the merge.
"""

from __future__ import annotations

import json
from typing import Any

from nemotron_sim.apiserver.errors import ApiError
from nemotron_sim.apiserver.objects import now_rfc3339
from nemotron_sim.apiserver.patches import SET_LISTS, copy_json, merge_key_of

Path = tuple[str, ...]
_SKIP_TOP = ("apiVersion", "kind")
_SKIP_META = ("name", "namespace", "resourceVersion", "managedFields", "uid", "generation")


def fieldset(obj: dict[str, Any], *, keyed: bool) -> dict[str, Any]:
    """The FieldsV1 set of an applied configuration."""
    out: dict[str, Any] = {}
    for key, value in obj.items():
        if key in _SKIP_TOP:
            continue
        if key == "metadata" and isinstance(value, dict):
            inner = {k: v for k, v in value.items() if k not in _SKIP_META}
            if inner:
                out["f:metadata"] = _fields(inner, keyed=True)
            continue
        out[f"f:{key}"] = _value_fields(key, value, keyed=keyed)
    return out


def _fields(obj: dict[str, Any], *, keyed: bool) -> dict[str, Any]:
    return {f"f:{k}": _value_fields(k, v, keyed=keyed) for k, v in obj.items()}


def _value_fields(name: str, value: Any, *, keyed: bool) -> dict[str, Any]:
    if isinstance(value, dict):
        return _fields(value, keyed=keyed)
    if isinstance(value, list):
        if name in SET_LISTS:
            return {f"v:{json.dumps(v)}": {} for v in value}
        merge_key = merge_key_of(name, value) if keyed else None
        if merge_key is not None:
            return {
                _item_key(merge_key, item): {".": {}, **_fields(item, keyed=keyed)}
                for item in value
            }
    return {}


def _item_key(merge_key: str, item: dict[str, Any]) -> str:
    return "k:" + json.dumps({merge_key: item[merge_key]}, separators=(",", ":"))


def leaves(fields: dict[str, Any], prefix: Path = ()) -> set[Path]:
    out: set[Path] = set()
    for key, child in fields.items():
        path = (*prefix, key)
        if child:
            out |= leaves(child, path)
        else:
            out.add(path)
    return out


def _locate(obj: Any, path: Path) -> tuple[bool, Any]:
    """Follow a FieldsV1 path in an object: (found, value)."""
    node = obj
    for part in path:
        if part == ".":
            continue
        kind, _, arg = part.partition(":")
        if kind == "f" and isinstance(node, dict) and arg in node:
            node = node[arg]
        elif kind == "k" and isinstance(node, list):
            wanted = json.loads(arg)
            node = next((i for i in node if _item_matches(i, wanted)), _MISSING)
            if node is _MISSING:
                return False, None
        elif kind == "v" and isinstance(node, list):
            return json.loads(arg) in node, json.loads(arg)
        else:
            return False, None
    return True, node


_MISSING = object()


def _item_matches(item: Any, wanted: dict[str, Any]) -> bool:
    return isinstance(item, dict) and all(item.get(k) == v for k, v in wanted.items())


def _remove(obj: Any, path: Path) -> Any:
    """A copy of ``obj`` without the field, list item (``k:…/.``) or set value (``v:…``)."""
    if not path:
        return obj
    head, rest = path[0], path[1:]
    kind, _, arg = head.partition(":")
    result = obj
    if kind == "f" and isinstance(obj, dict) and arg in obj:
        result = {k: v for k, v in obj.items() if k != arg}
        if rest:
            result[arg] = _remove(obj[arg], rest)
    elif kind == "k" and isinstance(obj, list):
        wanted = json.loads(arg)
        if rest in ((), (".",)):
            result = [i for i in obj if not _item_matches(i, wanted)]
        else:
            result = [_remove(i, rest) if _item_matches(i, wanted) else i for i in obj]
    elif kind == "v" and isinstance(obj, list):
        result = [v for v in obj if v != json.loads(arg)]
    return result


def merge_applied(current: Any, applied: Any, *, keyed: bool, name: str = "") -> Any:
    if isinstance(applied, dict) and isinstance(current, dict):
        merged = dict(current)
        for key, value in applied.items():
            inner_keyed = keyed or key == "metadata"
            merged[key] = merge_applied(current.get(key), value, keyed=inner_keyed, name=key)
        return merged
    if isinstance(applied, list) and isinstance(current, list):
        if name in SET_LISTS:
            return current + [copy_json(v) for v in applied if v not in current]
        merge_key = merge_key_of(name, applied) if keyed else None
        if merge_key is not None:
            result = list(current)
            for item in applied:
                index = next(
                    (
                        n
                        for n, c in enumerate(result)
                        if isinstance(c, dict) and c.get(merge_key) == item[merge_key]
                    ),
                    None,
                )
                if index is None:
                    result.append(copy_json(item))
                else:
                    result[index] = merge_applied(result[index], item, keyed=keyed)
            return result
    return copy_json(applied)


def server_side_apply(
    current: dict[str, Any] | None,
    applied: dict[str, Any],
    *,
    manager: str,
    force: bool,
    keyed: bool,
    subresource: str | None,
    api_version: str,
) -> dict[str, Any]:
    """The object after ``manager`` applies ``applied`` (with updated managedFields)."""
    live = current or {}
    managed = list((live.get("metadata") or {}).get("managedFields") or [])
    mine = [
        m
        for m in managed
        if m.get("manager") == manager
        and m.get("operation") == "Apply"
        and m.get("subresource") == subresource
    ]
    others = [m for m in managed if m not in mine]
    new_fields = fieldset(applied, keyed=keyed)
    new_leaves = leaves(new_fields)
    conflicts = _conflicts(live, applied, new_leaves, others)
    if conflicts and not force:
        raise _conflict_error(conflicts)
    if conflicts:
        taken = {path for _, path in conflicts}
        others = [_disown(m, taken) for m in others]
    owned_elsewhere = set().union(*(leaves(m.get("fieldsV1") or {}) for m in others))
    result: Any = live
    for mine_entry in mine:
        for path in sorted(leaves(mine_entry.get("fieldsV1") or {}) - new_leaves - owned_elsewhere):
            result = _remove(result, path)
    result = merge_applied(result, applied, keyed=keyed)
    entry: dict[str, Any] = {
        "manager": manager,
        "operation": "Apply",
        "apiVersion": api_version,
        "time": now_rfc3339(),
        "fieldsType": "FieldsV1",
        "fieldsV1": new_fields,
    }
    if subresource:
        entry["subresource"] = subresource
    unchanged = _without_managed(result) == _without_managed(live)
    if unchanged and mine and mine[0].get("fieldsV1") == new_fields and not conflicts:
        entry = mine[0]  # a no-op apply keeps the timestamp, so nothing is written
    result["metadata"] = {**result.get("metadata", {}), "managedFields": [*others, entry]}
    return dict(result)


def _without_managed(obj: dict[str, Any]) -> dict[str, Any]:
    md = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "managedFields"}
    return {**obj, "metadata": md}


def _conflict_error(conflicts: list[tuple[str, Path]]) -> ApiError:
    lines = [f'conflict with "{who}": {_dotted(path)}' for who, path in conflicts]
    if len(lines) == 1:
        message = f"Apply failed with 1 conflict: {lines[0]}"
    else:
        message = f"Apply failed with {len(lines)} conflicts: " + "\n".join(
            f"- {line}" for line in lines
        )
    causes = [
        {"reason": "FieldManagerConflict", "message": f'conflict with "{who}"', "field": _dotted(p)}
        for who, p in conflicts
    ]
    return ApiError(409, message, details={"causes": causes})


def _conflicts(
    live: dict[str, Any],
    applied: dict[str, Any],
    new_leaves: set[Path],
    others: list[dict[str, Any]],
) -> list[tuple[str, Path]]:
    found = []
    for other in others:
        if other.get("operation") != "Apply":
            continue
        for path in sorted(new_leaves & leaves(other.get("fieldsV1") or {})):
            if path[-1] == ".":
                continue
            live_found, live_value = _locate(live, path)
            _, applied_value = _locate(applied, path)
            if live_found and live_value != applied_value:
                found.append((str(other.get("manager")), path))
    return found


def _disown(entry: dict[str, Any], paths: set[Path]) -> dict[str, Any]:
    fields = entry.get("fieldsV1") or {}
    for path in paths:
        fields = _remove_field_path(fields, path)
    return {**entry, "fieldsV1": fields}


def _remove_field_path(fields: dict[str, Any], path: Path) -> dict[str, Any]:
    if not path or path[0] not in fields:
        return fields
    if len(path) == 1:
        return {k: v for k, v in fields.items() if k != path[0]}
    child = _remove_field_path(fields[path[0]], path[1:])
    rest = {k: v for k, v in fields.items() if k != path[0]}
    return {**rest, path[0]: child} if child else rest


def _dotted(path: Path) -> str:
    out = ""
    for part in path:
        kind, _, arg = part.partition(":")
        out += f".{arg}" if kind == "f" else f"[{arg}]"
    return out
