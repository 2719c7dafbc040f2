"""Reading a container's log file as the kubelet serves it: the last lines, a byte limit, and
following it while the container instance runs."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web

_FOLLOW_POLL = 0.1
_CHUNK = 64 * 1024


class LogRequestError(Exception):
    """A log request the kubelet refuses; ``code`` is the HTTP status it answers with."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class LogTarget:
    path: Path | None  # None: the container writes no log (it is not a real process)
    live: Callable[[], bool]  # still being written (for ``follow``)


def tail_lines(data: bytes, lines: int | None) -> bytes:
    if lines is None:
        return data
    if lines <= 0:
        return b""
    parts = data.splitlines(keepends=True)
    return b"".join(parts[-lines:])


def read(target: LogTarget, tail: int | None, limit: int | None) -> bytes:
    data = b""
    if target.path is not None and target.path.exists():
        data = tail_lines(target.path.read_bytes(), tail)
    return data if limit is None else data[:limit]


async def stream(request: web.Request, target: LogTarget, first: bytes) -> web.StreamResponse:
    """``first``, then what the container writes until its instance ends (``follow``)."""
    response = web.StreamResponse(headers={"Content-Type": "text/plain"})
    await response.prepare(request)
    await response.write(first)
    if target.path is not None:
        offset = target.path.stat().st_size if target.path.exists() else 0
        await _follow(response, target, offset)
    await response.write_eof()
    return response


async def _follow(response: web.StreamResponse, target: LogTarget, offset: int) -> None:
    assert target.path is not None
    while True:
        live = target.live()
        with target.path.open("rb") as log_file:
            log_file.seek(offset)
            chunk = log_file.read(_CHUNK)
        if chunk:
            offset += len(chunk)
            await response.write(chunk)
            continue
        if not live:
            return
        await asyncio.sleep(_FOLLOW_POLL)
