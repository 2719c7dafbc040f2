"""A cluster (any async context manager) running in its own event-loop thread, for synchronous
callers such as pytest fixtures and scripts."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from contextlib import AbstractAsyncContextManager
from typing import Any, Generic, TypeVar

T = TypeVar("T")
C = TypeVar("C", bound=AbstractAsyncContextManager[Any])
_START_TIMEOUT = 180.0  # a real control plane starts in seconds, more on a loaded machine
_STOP_TIMEOUT = 60.0


class Background(Generic[C]):
    """``with Background(factory) as bg``: ``factory()`` is entered on the thread's loop;
    ``call(fn)`` runs ``fn(cluster)`` there, ``run(coro_fn)`` awaits ``coro_fn(cluster)``."""

    def __init__(self, factory: Callable[[], C], *, name: str = "cluster") -> None:
        self._factory = factory
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=name, daemon=True)
        self._cluster: C | None = None

    @property
    def cluster(self) -> C:
        if self._cluster is None:
            raise RuntimeError("the cluster is not running")
        return self._cluster

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def __enter__(self) -> Background[C]:
        self._thread.start()
        try:
            self._cluster = self._submit(self._start()).result(_START_TIMEOUT)
        except BaseException:
            self._stop_loop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self._cluster is not None:
                self._submit(self._cluster.__aexit__(None, None, None)).result(_STOP_TIMEOUT)
        finally:
            self._cluster = None
            self._stop_loop()

    async def _start(self) -> C:
        cluster = self._factory()
        await cluster.__aenter__()
        return cluster

    def _submit(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(_STOP_TIMEOUT)
        with contextlib.suppress(RuntimeError):
            self._loop.close()

    def call(self, fn: Callable[[C], T], timeout: float = 10.0) -> T:
        async def invoke() -> T:
            return fn(self.cluster)

        return self._submit(invoke()).result(timeout)

    def run(self, fn: Callable[[C], Coroutine[Any, Any, T]], timeout: float = 30.0) -> T:
        return self._submit(fn(self.cluster)).result(timeout)
