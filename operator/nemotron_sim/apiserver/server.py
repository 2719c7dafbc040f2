"""``SimApiServer``: the store, its REST front and the fault injector on a loopback port."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import yaml
from aiohttp import web

from nemotron_sim.apiserver import tls as tls_module
from nemotron_sim.apiserver.admission import crd_admission
from nemotron_sim.apiserver.authn import Gate
from nemotron_sim.apiserver.authz import RbacAuthorizer
from nemotron_sim.apiserver.bootstrap_rbac import (
    CLUSTER_ROLE_BINDING_OBJECTS,
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLE_OBJECTS,
    CLUSTER_ROLES,
)
from nemotron_sim.apiserver.discovery import SIM_VERSION
from nemotron_sim.apiserver.faults import FaultInjector
from nemotron_sim.apiserver.http import ApiHandler
from nemotron_sim.apiserver.preinstalled import PREINSTALLED_CRDS
from nemotron_sim.apiserver.resources import CRD_KEY
from nemotron_sim.apiserver.reviews import Reviews
from nemotron_sim.apiserver.store import Store
from nemotron_sim.apiserver.tokens import TokenAuthority
from nemotron_sim.apiserver.watch import Watches

log = logging.getLogger(__name__)
T = TypeVar("T")
_MAX_BODY = 32 * 1024 * 1024  # a real API server accepts up to 3 MiB per object; lists more


class SimApiServer:
    """A Kubernetes API stand-in (a simulation) for kubectl, kopf and the Python client.

    ``async with SimApiServer() as api:`` serves on ``api.url``; ``api.store`` is the same world
    in-process; ``api.faults`` injects failures; ``api.tokens`` issues ServiceAccount tokens
    (:mod:`.tokens`); ``api.kubeconfig(path)`` writes a kubeconfig.

    It listens twice: ``url`` (plain HTTP, as before) and ``secure_url`` (HTTPS with a
    self-signed certificate, :mod:`.tls`), since kubectl sends tokens only over HTTPS. Both serve
    the same API with the same rules; the kubeconfigs point at ``secure_url``. ``tls=False`` (or
    no ``openssl`` command on the machine) serves HTTP only.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        validate_crs: bool = True,
        preinstall_crds: bool = True,
        bootstrap_rbac: bool = True,
        bookmark_interval: float = 10.0,
        history_size: int = 20_000,
        tls: bool = True,
        secure_port: int = 0,
    ) -> None:
        self.host, self.port, self.secure_port = host, port, secure_port
        self.certificate = tls_module.certificate(host) if tls and tls_module.available() else None
        self.store = Store(history_size=history_size)
        if validate_crs:
            self.store.admission = crd_admission(self.store)
        if preinstall_crds:
            for crd in PREINSTALLED_CRDS:
                self.store.create(CRD_KEY, crd)
        if bootstrap_rbac:
            for role in CLUSTER_ROLE_OBJECTS:
                self.store.create(CLUSTER_ROLES, role)
            for binding in CLUSTER_ROLE_BINDING_OBJECTS:
                self.store.create(CLUSTER_ROLE_BINDINGS, binding)
        self.faults = FaultInjector()
        self.watches = Watches(self.store, bookmark_interval)
        self.faults.on_outage = lambda: self.watches.stop_all(abort=True)
        self.tokens = TokenAuthority(self.store)
        self.authorizer = RbacAuthorizer(self.store)
        self.handler = ApiHandler(
            self.store,
            self.faults,
            self.watches,
            Reviews(self.store, self.tokens, self.authorizer),
            Gate(self.tokens, self.authorizer),
        )
        self.url = ""
        self.secure_url = ""
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        app = web.Application(client_max_size=_MAX_BODY)
        app.router.add_route("*", "/{tail:.*}", self.handler.handle)
        # Handlers are cancelled when a client goes away, so abandoned watches end at once.
        runner = web.AppRunner(
            app, access_log=None, handler_cancellation=True, shutdown_timeout=1.0
        )
        await runner.setup()
        self._runner = runner
        self.port = await _listen(web.TCPSite(runner, self.host, self.port))
        self.url = f"http://{self.host}:{self.port}"
        if self.certificate is not None:
            context = self.certificate.server_context()
            secure = web.TCPSite(runner, self.host, self.secure_port, ssl_context=context)
            self.secure_port = await _listen(secure)
            self.secure_url = f"https://{self.host}:{self.secure_port}"
        log.warning(
            "SIMULATED Kubernetes API server %s listening on %s (a simulation, not a cluster)",
            SIM_VERSION,
            " and ".join(u for u in (self.url, self.secure_url) if u),
        )

    async def stop(self) -> None:
        self.watches.stop_all(abort=False)
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()

    async def __aenter__(self) -> SimApiServer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    def kubeconfig(
        self, path: str | Path, *, namespace: str = "default", token: str | None = None
    ) -> Path:
        """Write a kubeconfig: without ``token`` it is the all-powerful admin's; with a token from
        :attr:`tokens` it authenticates as that ServiceAccount."""
        if not self.url:
            raise RuntimeError("start the server before writing its kubeconfig")
        token = token or self.tokens.admin_token
        if self.certificate is None:
            return write_kubeconfig(path, self.url, namespace=namespace, token=token)
        return write_kubeconfig(
            path,
            self.secure_url,
            namespace=namespace,
            token=token,
            certificate_authority_data=self.certificate.authority_data,
        )


async def _listen(site: web.TCPSite) -> int:
    await site.start()
    sockets = getattr(site._server, "sockets", None) or []
    return int(sockets[0].getsockname()[1]) if sockets else 0


def write_kubeconfig(
    path: str | Path,
    url: str,
    *,
    namespace: str = "default",
    token: str | None = None,
    certificate_authority_data: str | None = None,
) -> Path:
    """A kubeconfig for ``url``; over HTTP kubectl would not send ``token`` (client-go sends
    credentials over HTTPS only)."""
    name = "nemotron-sim"
    cluster: dict[str, Any] = {"server": url}
    if certificate_authority_data:
        cluster["certificate-authority-data"] = certificate_authority_data
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": name, "user": {} if token is None else {"token": token}}],
        "contexts": [
            {"name": name, "context": {"cluster": name, "user": name, "namespace": namespace}}
        ],
        "current-context": name,
        "preferences": {},
    }
    target = Path(path)
    target.write_text(yaml.safe_dump(config, sort_keys=False))
    return target


class ServerThread:
    """A :class:`SimApiServer` on its own event loop in a background thread.

    For synchronous tests and tools: HTTP clients use ``url``; ``call(fn, ...)`` runs a function
    on the server's loop (the store is not thread-safe) and returns its result.
    """

    def __init__(self, **kwargs: Any) -> None:
        self._kwargs = kwargs
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True, name="sim-api")
        self.server: SimApiServer | None = None

    @property
    def url(self) -> str:
        return self._require().url

    def start(self) -> SimApiServer:
        self._thread.start()

        async def create() -> SimApiServer:
            server = SimApiServer(**self._kwargs)
            await server.start()
            return server

        self.server = asyncio.run_coroutine_threadsafe(create(), self._loop).result(timeout=30)
        return self.server

    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        async def run() -> T:
            return fn(*args, **kwargs)

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout=30)

    def stop(self) -> None:
        if self.server is not None:
            asyncio.run_coroutine_threadsafe(self.server.stop(), self._loop).result(timeout=30)
            self.server = None
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=30)
        self._loop.close()

    def _require(self) -> SimApiServer:
        if self.server is None:
            raise RuntimeError("the server thread is not running")
        return self.server


@contextmanager
def serve_in_thread(**kwargs: Any) -> Iterator[ServerThread]:
    thread = ServerThread(**kwargs)
    thread.start()
    try:
        yield thread
    finally:
        thread.stop()
