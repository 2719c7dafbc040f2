"""The JSONPath subset of CRD ``additionalPrinterColumns``: ``.a.b``, ``[0]``, ``[*]``,
``['dotted.key']`` and ``[?(@.type=="Ready")]`` filters."""

from __future__ import annotations

import re
from typing import Any

_TOKEN = re.compile(
    r"""\.(?P<field>[A-Za-z0-9_$-]+)
      | \[(?P<index>-?\d+|\*)\]
      | \[['"](?P<quoted>[^'"]+)['"]\]
      | \[\?\(@\.(?P<fpath>[A-Za-z0-9_.]+)\s*(?P<fop>==|!=)\s*['"]?(?P<fval>[^'")]*)['"]?\)\]
    """,
    re.VERBOSE,
)


def find(obj: Any, path: str) -> list[Any]:
    """All values ``path`` selects in ``obj`` (an empty list when nothing matches)."""
    path = path.strip()
    if path.startswith("{") and path.endswith("}"):
        path = path[1:-1]
    current = [obj]
    pos = 0
    while pos < len(path):
        match = _TOKEN.match(path, pos)
        if match is None:
            return []
        pos = match.end()
        current = [value for node in current for value in _step(node, match)]
    return current


def _step(node: Any, match: re.Match[str]) -> list[Any]:
    name = match.group("field") or match.group("quoted")
    if name is not None:
        return [node[name]] if isinstance(node, dict) and name in node else []
    index = match.group("index")
    if index is not None:
        if not isinstance(node, list):
            return []
        if index == "*":
            return list(node)
        i = int(index)
        return [node[i]] if -len(node) <= i < len(node) else []
    if not isinstance(node, list):
        return []
    fpath, fop, fval = match.group("fpath"), match.group("fop"), match.group("fval")
    out = []
    for item in node:
        values = find(item, "." + fpath)
        hit = bool(values) and str(_plain(values[0])) == fval
        if hit == (fop == "=="):
            out.append(item)
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    return value
