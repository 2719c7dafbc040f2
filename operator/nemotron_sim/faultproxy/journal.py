"""What passed through the fault proxy: a journal of the latest requests and counts by client,
verb and resource (``GET /_sim/requests``, ``GET``/``DELETE /_sim/request-counts``)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from aiohttp import web

APPLY = "application/apply-patch+yaml"
JOURNAL_SIZE = 10_000  # as the retired home-made API server kept it


@dataclass
class Entry:
    """One request as the proxy saw it: the source of truth for when a fault fired and how long
    the answer took (a test measures from here, not from when it noticed)."""

    method: str
    path: str
    status: int  # 0: the connection was reset without an answer
    at: float  # wall clock (time.time()) when the request arrived
    fault: int | None = None  # the id of the fault that fired on it
    seconds: float | None = None  # arrival to the end of the answer (a watch: of its stream)
    cut: str | None = None  # "reset", or "watch-dropped" when a fault ended the stream
    # A watch_stall fault: seconds from arrival until the first held-back event was released.
    stalled: float | None = None
    began: float = field(default_factory=time.monotonic, repr=False)  # for ``seconds``

    def finish(self) -> None:
        self.seconds = time.monotonic() - self.began

    def to_dict(self) -> dict[str, object]:
        return {
            "method": self.method, "path": self.path, "status": self.status, "at": self.at,
            "fault": self.fault, "seconds": self.seconds, "cut": self.cut, "stalled": self.stalled,
        }  # fmt: skip


def request_verb(method: str, path: str, *, watch: bool, content_type: str) -> tuple[str, str]:
    """(Kubernetes verb, resource[/subresource]) of a request, from its path alone: a counter
    must not fail, so a path that names no resource is counted as ``(discovery)`` (``/api``,
    ``/apis/<group>/<version>``) or ``(<first segment>)`` (``/version``, ``/openapi``)."""
    parts = [p for p in path.split("/") if p]
    if parts[:1] == ["api"] and len(parts) >= 3:
        rest = parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 4:
        rest = parts[3:]
    elif parts[:1] in (["api"], ["apis"]):
        return method.lower(), "(discovery)"
    else:
        return method.lower(), f"({parts[0] if parts else ''})"
    if rest[0] == "watch":
        watch, rest = True, rest[1:]
    if len(rest) >= 3 and rest[0] == "namespaces" and rest[2:] not in (["status"], ["finalize"]):
        rest = rest[2:]  # a namespaced resource, not a namespace's own subresource
    if not rest:
        return method.lower(), "?"
    resource = "/".join([rest[0], *rest[2:3]])
    named = len(rest) > 1
    if method == "GET":
        verb = "watch" if watch else ("get" if named else "list")
    elif method == "PATCH":
        verb = "apply" if content_type.startswith(APPLY) else "patch"
    elif method == "DELETE":
        verb = "delete" if named else "deletecollection"
    else:
        verb = {"POST": "create", "PUT": "update"}.get(method, method.lower())
    return verb, resource


@dataclass
class RequestCounts:
    """Requests by client (User-Agent's product), verb and resource, counted when they arrive.

    Unlike the journal it does not wrap: a benchmark resets it, runs a phase and reads how many
    requests of each kind the phase cost, and when each kind was last seen (wall clock).
    """

    since: float = field(default_factory=time.time)
    counts: dict[tuple[str, str, str], list[float]] = field(default_factory=dict)

    def record(self, request: web.Request, *, watch: bool) -> None:
        agent = request.headers.get("User-Agent", "").split("/", 1)[0].split(" ", 1)[0]
        verb, resource = request_verb(
            request.method, request.path, watch=watch, content_type=request.content_type
        )
        row = self.counts.setdefault((agent or "?", verb, resource), [0, 0.0])
        row[0] += 1
        row[1] = time.time()

    def reset(self) -> None:
        self.counts.clear()
        self.since = time.time()

    def to_dict(self) -> dict[str, object]:
        rows = [
            {"agent": a, "verb": v, "resource": r, "count": int(c), "last": last}
            for (a, v, r), (c, last) in sorted(self.counts.items())
        ]
        return {"since": self.since, "now": time.time(), "counts": rows}
