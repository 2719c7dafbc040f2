"""``SimCluster``: the API stand-in plus simulated GPU nodes and controllers, on loopback.

A simulation for tests, benchmarks and the demo: no real API server, kubelet, container or GPU.
Use it as an async context manager in a running event loop, or :class:`BackgroundCluster` from
synchronous code (pytest fixtures, scripts): it runs the cluster's event loop in a thread.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from nemotron_sim.apiserver.errors import NotFoundError
from nemotron_sim.apiserver.server import SimApiServer
from nemotron_sim.apiserver.store import Store
from nemotron_sim.background import Background
from nemotron_sim.controllers.images import ImagePrograms
from nemotron_sim.controllers.kinds import PODS
from nemotron_sim.controllers.kubelet import CRASH_BACKOFF_CAP_SECONDS, KubeletSettings
from nemotron_sim.controllers.manager import (
    DEFAULT_NODES,
    ClusterControllers,
    ClusterSettings,
)
from nemotron_sim.controllers.podfiles import ApiAccess, service_account
from nemotron_sim.controllers.process_pods import PodTokenSource
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
        images: Mapping[str, Sequence[str]] | None = None,
        commands: Mapping[str, Sequence[str]] | None = None,
        probe_time_scale: float = 1.0,
        crash_backoff_seconds: float = 10.0,
        crash_backoff_cap_seconds: float = CRASH_BACKOFF_CAP_SECONDS,
        stop_grace_seconds: float = 5.0,
        system_nodes: int = 0,
    ) -> None:
        """``images``: image repository → argv standing for its entrypoint (added to the
        default, which runs the operator's image); ``commands``: program name → argv used when
        a container sets ``command`` (see :mod:`nemotron_sim.controllers.images`);
        ``system_nodes``: GPU-less, untainted nodes ``sim-system-<i>`` where the operator's own
        Deployment can be scheduled."""
        self.settings = ClusterSettings(
            nodes=nodes,
            kubelet=KubeletSettings(
                load_seconds=load_seconds,
                init_seconds=init_seconds,
                probe_period=probe_period,
                programs=ImagePrograms.with_defaults(images, commands),
                probe_time_scale=probe_time_scale,
                crash_backoff_seconds=crash_backoff_seconds,
                crash_backoff_cap_seconds=crash_backoff_cap_seconds,
                stop_grace_seconds=stop_grace_seconds,
            ),
            record_events=record_events,
            system_nodes=system_nodes,
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
            self.controllers = ClusterControllers(
                self.store,
                self.settings,
                api=ApiAccess(self._pod_kubeconfig, self._ca_pem()),
                token_source=self._pod_token_source(),
            )
            self.api.handler.logs = self.controllers.kubelet.processes
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

    def _pod_kubeconfig(self, path: Path, namespace: str, token: str) -> None:
        if not token:
            raise RuntimeError("no ServiceAccount token for a pod kubeconfig")
        self.api.kubeconfig(path, namespace=namespace, token=token)

    def _ca_pem(self) -> bytes:
        certificate = getattr(self.api, "certificate", None)
        return b"" if certificate is None else bytes(certificate.pem)

    def _pod_token_source(self) -> PodTokenSource | None:
        """Tokens for pods' ServiceAccounts from the API stand-in, when it issues them."""
        tokens = getattr(self.api, "tokens", None)
        if tokens is None:
            return None

        async def issue(pod: Mapping[str, Any], seconds: int, audiences: tuple[str, ...]) -> str:
            md = pod.get("metadata") or {}
            token: str = tokens.issue(
                md.get("namespace", "default"),
                service_account(pod),
                expiration_seconds=seconds,
                audiences=audiences,
                bound_pod=str(md.get("name", "")),
            )
            return token

        return issue

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

    def pod_logs(
        self, namespace: str, pod: str, container: str | None = None, *, previous: bool = False
    ) -> str:
        """What ``kubectl logs POD [-c C] [--previous]`` shows: a process container's output
        ("" for in-process containers); ApiError (400) as the API would refuse."""
        obj = self.store.peek(PODS, namespace, pod)
        if obj is None:
            raise NotFoundError("pods", "", pod)
        names = [c.get("name", "") for c in (obj.get("spec") or {}).get("containers") or []]
        target = self._running().kubelet.processes.log_target(
            obj, container or (names[0] if names else ""), previous
        )
        if target.path is None or not target.path.exists():
            return ""
        return target.path.read_text(errors="replace")

    async def settle(self, seconds: float = 5.0) -> bool:
        return await self._running().settle(seconds)

    def set_kv_cache_bias(self, bias: float) -> None:
        """Stand-in vLLMs started from now on allocate ``bias`` more (+) or less (-) KV cache
        than their own accounting (the operator's plan check reports it)."""
        kubelet = self._running().kubelet
        kubelet.settings = dataclasses.replace(kubelet.settings, kv_cache_bias=bias)


class BackgroundCluster(Background[SimCluster]):
    """A :class:`SimCluster` running in its own event-loop thread, for synchronous callers.

    ``call(fn)`` runs ``fn(cluster)`` on the cluster's loop (the store is single-threaded);
    ``run(coro_fn)`` awaits ``coro_fn(cluster)`` there.
    """

    def __init__(self, **options: Any) -> None:
        super().__init__(lambda: SimCluster(**options), name="sim-cluster")
