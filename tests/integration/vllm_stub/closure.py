"""Requirement names normalised, and their closure over the installed distributions."""

from __future__ import annotations

import re
from importlib import metadata

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*")


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_closure(names: set[str]) -> set[str]:
    """The distributions `pip install NAMES` pulls in (extras' requirements left out)."""
    seen: set[str] = set()
    pending = [normalise(name) for name in names]
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requirements = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue  # behind an environment marker that excludes this Python
        for requirement in requirements:
            match = _NAME.match(requirement)
            if match and "extra ==" not in requirement:
                pending.append(normalise(match.group()))
    return seen
