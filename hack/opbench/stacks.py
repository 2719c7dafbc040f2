"""Summaries of sampled call stacks (py-spy's collapsed stacks, pprof's traces): the top
functions by self and by inclusive weight, and the share of each named bucket.

A stack is a tuple of frames, the root first and the frame that was running last. Its weight is
a sample count (py-spy) or CPU seconds (pprof). Buckets are tried in their order: a stack goes
to the FIRST bucket whose pattern matches any of its frames, else to ``other``; so buckets are
exclusive, sum to the total, and a more specific purpose listed earlier wins over a general one
(a status patch's JSON encoding is the status patch's, not the JSON bucket's).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

Stack = tuple[str, ...]


@dataclass(frozen=True)
class Bucket:
    """``leaf``: the pattern is matched against the running frame only (waiting, say)."""

    name: str
    pattern: re.Pattern[str]
    leaf: bool = False

    @classmethod
    def of(cls, name: str, *patterns: str, leaf: bool = False) -> Bucket:
        return cls(name, re.compile("|".join(f"(?:{p})" for p in patterns)), leaf)


def classify(stack: Stack, buckets: Sequence[Bucket]) -> str:
    for bucket in buckets:
        frames = stack[-1:] if bucket.leaf else stack
        if any(bucket.pattern.search(frame) for frame in frames):
            return bucket.name
    return "other"


def _rows(
    weights: Mapping[str, float], total: float, top: int, unit: str
) -> list[dict[str, object]]:
    ranked = sorted(weights.items(), key=lambda item: (-item[1], item[0]))[:top]
    return [
        {"function": name, unit: _round(weight), "percent": _percent(weight, total)}
        for name, weight in ranked
    ]


def _round(value: float) -> float:
    return round(value, 3) if isinstance(value, float) and not value.is_integer() else int(value)


def _percent(part: float, total: float) -> float:
    return round(100 * part / total, 1) if total else 0.0


def summarise(
    stacks: Iterable[tuple[Stack, float]],
    buckets: Sequence[Bucket],
    *,
    top: int = 25,
    unit: str = "samples",
) -> dict[str, object]:
    """``total``; ``top_self`` (the running frame) and ``top_inclusive`` (a frame anywhere in
    the stack, counted once per stack however often it recurs); ``buckets`` by weight."""
    total = 0.0
    own: dict[str, float] = {}
    inclusive: dict[str, float] = {}
    by_bucket: dict[str, float] = {b.name: 0.0 for b in buckets}
    by_bucket["other"] = 0.0
    for stack, weight in stacks:
        if not stack or weight <= 0:
            continue
        total += weight
        own[stack[-1]] = own.get(stack[-1], 0.0) + weight
        for frame in set(stack):
            inclusive[frame] = inclusive.get(frame, 0.0) + weight
        name = classify(stack, buckets)
        by_bucket[name] += weight
    return {
        unit: _round(total),
        "top_self": _rows(own, total, top, unit),
        "top_inclusive": _rows(inclusive, total, top, unit),
        "buckets": {
            name: {unit: _round(weight), "percent": _percent(weight, total)}
            for name, weight in sorted(by_bucket.items(), key=lambda item: -item[1])
        },
    }


_FRAME = re.compile(r"^(?P<function>.*) \((?P<path>[^()]*?)(?::(?P<line>\d+))?\)$")
# Where a package's path starts in an absolute file name: after site-packages, after the
# standard library's directory, or at the repository's packages.
_PREFIXES = (
    re.compile(r"^.*/site-packages/"),
    re.compile(r"^.*/lib/python3\.\d+/"),
    re.compile(r"^.*/operator/(?=nemotron_(?:operator|sim)/)"),
    re.compile(r"^.*/hack/(?=opbench/)"),
)


def short_frame(frame: str) -> str:
    """``function (file:line)`` with the file made package-relative (``kopf/_core/x.py``,
    ``json/decoder.py``, ``nemotron_operator/kube/store.py``); other frames as they are."""
    found = _FRAME.match(frame)
    if found is None:
        return frame
    path = found["path"]
    for prefix in _PREFIXES:
        shorter = prefix.sub("", path, count=1)
        if shorter != path:
            path = shorter
            break
    line = f":{found['line']}" if found["line"] else ""
    return f"{found['function']} ({path}{line})"


def parse_collapsed(text: str) -> tuple[list[tuple[Stack, float]], int]:
    """py-spy's ``--format raw`` (Brendan Gregg's collapsed stacks): one ``root;...;leaf COUNT``
    per line. Frames are made package-relative (:func:`short_frame`). Also how many lines were
    not such a line: with ``--nonblocking`` py-spy may read a name while it changes, and a
    torn name can hold a line break."""
    out: list[tuple[Stack, float]] = []
    skipped = 0
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            skipped += 1
            continue
        out.append((tuple(short_frame(f) for f in stack.split(";")), float(int(count))))
    return out, skipped
