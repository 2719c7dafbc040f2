"""A Service's ClusterIP:port as a small asyncio TCP proxy to a Ready endpoint pod.

It stands in for kube-proxy so that a request to the Service is real HTTP to a stand-in vLLM.
Each connection goes to the next backend in round-robin order; with no backend the connection
is closed at once (a real ClusterIP without endpoints rejects the connection).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Callable

log = logging.getLogger(__name__)

Backend = tuple[str, int]
_CHUNK = 64 * 1024
CONNECT_TIMEOUT = 5.0


class ServiceProxy:
    def __init__(self, backends: Callable[[], list[Backend]]) -> None:
        self._backends = backends
        self._turn = itertools.count()
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    async def start(self, host: str, port: int) -> None:
        self._server = await asyncio.start_server(self._accept, host, port)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.gather(*self._connections, return_exceptions=True)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._connections.add(task)
        try:
            await self._serve(reader, writer)
        except asyncio.CancelledError:
            # Stopping the proxy cancels open connections; asyncio would log the cancellation
            # of a connection handler as an error.
            await _close(writer)
        finally:
            if task is not None:
                self._connections.discard(task)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        backends = self._backends()
        if not backends:
            await _close(writer)
            return
        host, port = backends[next(self._turn) % len(backends)]
        try:
            upstream_reader, upstream_writer = await asyncio.wait_for(
                asyncio.open_connection(host, port), CONNECT_TIMEOUT
            )
        except (OSError, TimeoutError) as error:
            log.debug("service proxy: backend %s:%s unreachable: %s", host, port, error)
            await _close(writer)
            return
        try:
            await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer))
        finally:
            await _close(upstream_writer)
            await _close(writer)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(_CHUNK):
            writer.write(chunk)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError):
        return


async def _close(writer: asyncio.StreamWriter) -> None:
    writer.close()
    with contextlib.suppress(ConnectionError, OSError):
        await writer.wait_closed()
