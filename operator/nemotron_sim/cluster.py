"""``SimCluster``: the API stand-in plus simulated GPU nodes and controllers, on loopback.

A simulation for tests, benchmarks and the demo: no real API server, kubelet, container or GPU.
Use it as an async context manager in a running event loop, or :class:`BackgroundCluster` from
synchronous code (pytest fixtures, scripts): it runs the cluster's event loop in a thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import tempfile
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from nemotron_sim.apiserver.server import SimApiServer
from nemotron_sim.apiserver.store import Store
from nemotron_sim.controllers.kubelet import KubeletSettings
from nemotron_sim.controllers.manager import (
    DEFAULT_NODES,
    ClusterControllers,
    ClusterSettings,
)
from nemotron_sim.vllm import StubVllm

T = TypeVar("T")
_START_TIMEOUT = 30.0
_STOP_TIMEOUT = 30.0


class SimCluster:
    """A simulated Kubernetes cluster with GPU nodes; ``async with SimCluster(...) as cluster``."""

    def __init__(
        self,
        nodes: str = DEFAULT_NODES,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        kubeconfig: str | Path | None = None,
        load_seconds: float = 0.0,
        init_seconds: float = 0.05,
        probe_period: float = 0.1,
        record_events: bool = True,
        validate_crs: bool = True,
    ) -> None:
        self.settings = ClusterSettings(
            nodes=nodes,
            kubelet=KubeletSettings(
                load_seconds=load_seconds, init_seconds=init_seconds, probe_period=probe_period
            ),
            record_events=record_events,
        )
        self._kubeconfig_path = Path(kubeconfig) if kubeconfig is not None else None
        self._tempdir: tempfile.TemporaryDirectory[str] | None = None
        self.api = SimApiServer(host, port, validate_crs=validate_crs)
        self.controllers: ClusterControllers | None = None
        self.kubeconfig: Path | None = None

    @property
    def url(self) -> str:
        return str(self.api.url)

    @property
    def store(self) -> Store:
        store: Store = self.api.store
        return store

    async def __aenter__(self) -> SimCluster:
        await self.api.__aenter__()
        try:
            self.controllers = ClusterControllers(self.store, self.settings)
            await self.controllers.start()
            path = self._kubeconfig_path
            if path is None:
                self._tempdir = tempfile.TemporaryDirectory(prefix="nemotron-sim-")
                path = Path(self._tempdir.name) / "kubeconfig"
            self.kubeconfig = Path(self.api.kubeconfig(path))
        except BaseException:
            await self._shutdown()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._shutdown()

    async def _shutdown(self) -> None:
        if self.controllers is not None:
            await self.controllers.stop()
        await self.api.__aexit__(None, None, None)
        if self._tempdir is not None:
            self._tempdir.cleanup()
            self._tempdir = None

    def _running(self) -> ClusterControllers:
        if self.controllers is None:
            raise RuntimeError("the simulated cluster is not running")
        return self.controllers

    def gpu_inventory(self) -> str:
        """The nodes as ``PRODUCT:GPUSxNODES,...`` (what ``render --gpu-inventory`` takes)."""
        return self._running().gpu_inventory()

    def stub(self, namespace: str, pod: str) -> StubVllm | None:
        """The stand-in vLLM serving in a pod, if any."""
        return self._running().kubelet.stub(namespace, pod)

    async def settle(self, seconds: float = 5.0) -> bool:
        return await self._running().settle(seconds)

    def set_kv_cache_bias(self, bias: float) -> None:
        """Stand-in vLLMs started from now on allocate ``bias`` more (+) or less (-) KV cache
        than their own accounting (the operator's plan check reports it)."""
        kubelet = self._running().kubelet
        kubelet.settings = dataclasses.replace(kubelet.settings, kv_cache_bias=bias)


class BackgroundCluster:
    """A :class:`SimCluster` running in its own event-loop thread, for synchronous callers.

    ``call(fn)`` runs ``fn(cluster)`` on the cluster's loop (the store is single-threaded);
    ``run(coro_fn)`` awaits ``coro_fn(cluster)`` there.
    """

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="sim-cluster")
        self._cluster: SimCluster | None = None

    @property
    def cluster(self) -> SimCluster:
        if self._cluster is None:
            raise RuntimeError("the simulated cluster is not running")
        return self._cluster

    def __enter__(self) -> BackgroundCluster:
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

    async def _start(self) -> SimCluster:
        cluster = SimCluster(**self._options)
        return await cluster.__aenter__()

    def _submit(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(_STOP_TIMEOUT)
        with contextlib.suppress(RuntimeError):
            self._loop.close()

    def call(self, fn: Callable[[SimCluster], T], timeout: float = 10.0) -> T:
        async def invoke() -> T:
            return fn(self.cluster)

        return self._submit(invoke()).result(timeout)

    def run(self, fn: Callable[[SimCluster], Coroutine[Any, Any, T]], timeout: float = 30.0) -> T:
        return self._submit(fn(self.cluster)).result(timeout)
