"""A real Kubernetes control plane — etcd, kube-apiserver, kube-controller-manager and
kube-scheduler built from their Go modules (``hack/build-controlplane.sh``) — started as local
processes inside the simulated cluster's network namespace.

```python
async with ControlPlane(workdir) as plane:   # must run inside the namespace (netns.enter())
    plane.admin_kubeconfig, plane.api_url, plane.audit_log
```
"""

from __future__ import annotations

import datetime
import logging
import secrets
import shutil
import socket
import ssl
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import TracebackType

import aiohttp

from sim_cluster import netns
from sim_cluster.controlplane import flags
from sim_cluster.controlplane.binaries import bin_dir
from sim_cluster.controlplane.kubeconfig import kubeconfig, write_kubeconfig
from sim_cluster.controlplane.network import API_PORT, MAX_CLUSTERS, AddressPlan
from sim_cluster.controlplane.pki import Authority, KeyPair
from sim_cluster.controlplane.processes import (
    Component,
    ControlPlaneError,
    stop_all,
    wait_healthy,
)

__all__ = ["ControlPlane", "ControlPlaneError"]
log = logging.getLogger("sim_cluster.controlplane")
_START_TIMEOUT = 120.0  # kube-apiserver took 31-35 s on contended CI runners upstream
ADMIN_USER = "nemotron-sim-admin"  # in system:masters: the cluster's administrator


def _free_plan() -> AddressPlan:
    """The first address plan whose API address is free in this namespace."""
    for index in range(MAX_CLUSTERS):
        plan = AddressPlan(index)
        with socket.socket() as sock:
            try:
                sock.bind((plan.control_plane_ip, API_PORT))
            except OSError:
                continue
        return plan
    raise ControlPlaneError(f"all {MAX_CLUSTERS} control plane address ranges are in use")


class ControlPlane:
    """etcd, kube-apiserver, kube-controller-manager and kube-scheduler, started and stopped
    together; ``workdir`` holds certificates, kubeconfigs, etcd's data and the logs."""

    def __init__(
        self,
        workdir: Path | None = None,
        *,
        settings: flags.Settings | None = None,
        binaries: Path | None = None,
    ) -> None:
        if not netns.local_range_works():
            raise ControlPlaneError(
                "the control plane needs the simulated cluster's network namespace (10.0.0.0/8 "
                "local): run inside `python -m sim_cluster.netns -- ...` or call "
                "sim_cluster.netns.enter() first"
            )
        self._tempdir = None if workdir is not None else tempfile.mkdtemp(prefix="nemotron-cp-")
        self.layout = flags.Layout(Path(workdir or self._tempdir or "."))
        self.settings = settings or flags.Settings()
        self.binaries = binaries or bin_dir()
        self.plan = _free_plan()
        self.components: dict[str, Component] = {}
        self.authority: Authority | None = None
        self.admin: KeyPair | None = None
        self.admin_token = ""  # the admin kubeconfig's bearer token
        self.started_seconds = 0.0  # from the first process started to all four healthy

    # --- what clients use ---------------------------------------------------------------------

    @property
    def api_url(self) -> str:
        return self.plan.api_url

    @property
    def admin_kubeconfig(self) -> Path:
        return self.layout.kubeconfig("admin")

    @property
    def audit_log(self) -> Path:
        return self.layout.audit_log

    @property
    def ca_pem(self) -> bytes:
        return self.layout.cert("ca").read_bytes()

    def ca_context(self) -> ssl.SSLContext:
        """A client context that trusts the cluster CA and presents no certificate."""
        return ssl.create_default_context(cafile=str(self.layout.cert("ca")))

    def ssl_context(self) -> ssl.SSLContext:
        """A client context that trusts the cluster CA and presents the admin certificate."""
        context = ssl.create_default_context(cafile=str(self.layout.cert("ca")))
        if self.admin is not None:
            context.load_cert_chain(str(self.admin.cert), str(self.admin.key))
        return context

    # --- lifecycle ----------------------------------------------------------------------------

    async def __aenter__(self) -> ControlPlane:
        try:
            await self.start()
        except BaseException:
            self.stop()
            raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:  # fmt: skip
        self.stop()

    async def start(self, before_controllers: Callable[[], Awaitable[None]] | None = None) -> None:
        """Start the four; ``before_controllers`` runs once kube-apiserver is ready and before
        kube-controller-manager starts (objects its controllers should find at their start,
        such as CRDs the garbage collector would otherwise discover only 30 s later)."""
        began = time.monotonic()
        self._write_files()
        for name in ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"):
            self.components[name] = self._component(name)
        context = self.ssl_context()
        for group in (
            ("etcd",),
            ("kube-apiserver",),
            ("kube-controller-manager", "kube-scheduler"),
        ):
            if group[0] == "kube-controller-manager" and before_controllers is not None:
                await before_controllers()
            for name in group:
                self.components[name].start()
            for name in group:
                await wait_healthy(self.components[name], context, _START_TIMEOUT)
        self.started_seconds = time.monotonic() - began
        log.info(
            "control plane %s up in %.1f s (%s)", self.api_url, self.started_seconds,
            ", ".join(f"{c.name} {c.ready_seconds:.1f} s" for c in self.components.values()),
        )  # fmt: skip

    def stop(self) -> None:
        stop_all(list(self.components.values()))
        if self._tempdir is not None:
            shutil.rmtree(self._tempdir, ignore_errors=True)
            self._tempdir = None

    async def restart(self, name: str, *, kill: bool = False) -> None:
        """Stop one component (SIGTERM, or SIGKILL with ``kill``) and start it again."""
        component = self.components[name]
        if kill:
            component.kill()
        else:
            component.stop()
        component.start()
        await wait_healthy(component, self.ssl_context(), _START_TIMEOUT)

    async def act(self, name: str, action: str) -> None:
        """``stop``, ``start``, ``restart`` or ``kill`` (SIGKILL, then start) one component."""
        if name not in self.components:
            raise KeyError(f"no component {name!r}: {', '.join(self.components)}")
        if action == "stop":
            self.pause(name)
        elif action == "start":
            await self.resume(name)
        elif action in ("restart", "kill"):
            await self.restart(name, kill=action == "kill")
        else:
            raise ValueError(f"unknown action {action!r}: stop, start, restart or kill")

    async def compact_etcd(self) -> int:
        """Compact etcd's history up to its current revision (what kube-apiserver does every
        ``--etcd-compaction-interval``): a watch resuming from before gets 410 Gone."""
        async with aiohttp.ClientSession() as session:
            async with session.post(f"{self.plan.etcd_url}/v3/maintenance/status", json={}) as r:
                revision = int((await r.json())["header"]["revision"])
            async with session.post(
                f"{self.plan.etcd_url}/v3/kv/compaction",
                json={"revision": str(revision), "physical": True},
            ) as r:
                r.raise_for_status()
        return revision

    def pause(self, name: str) -> None:
        """Stop one component until :meth:`resume` (an outage)."""
        self.components[name].stop()

    async def resume(self, name: str) -> None:
        component = self.components[name]
        component.start()
        await wait_healthy(component, self.ssl_context(), _START_TIMEOUT)

    # --- files --------------------------------------------------------------------------------

    def _write_files(self) -> None:
        layout, plan = self.layout, self.plan
        now = datetime.datetime.now(datetime.UTC)
        authority = Authority(layout.pki, now)
        self.authority = authority
        ips, dns = plan.api_server_names()
        authority.issue("apiserver", "kube-apiserver", server=True, ips=ips, dns=dns)
        authority.issue(
            "apiserver-kubelet-client", "kube-apiserver-kubelet-client",
            organizations=("kubeadm:cluster-admins",), client=True,
        )  # fmt: skip
        authority.signing_key("service-account")
        for component in ("kube-controller-manager", "kube-scheduler"):
            authority.issue(
                f"{component}-serving", component, server=True, ips=(plan.control_plane_ip,)
            )
        front_proxy = Authority(layout.front_proxy_pki, now)
        front_proxy.issue("front-proxy-client", "front-proxy-client", client=True)
        self.admin = authority.issue(
            "admin", ADMIN_USER, organizations=("system:masters",), client=True
        )
        ca = self.ca_pem
        for user, common_name in (
            ("kube-controller-manager", "system:kube-controller-manager"),
            ("kube-scheduler", "system:kube-scheduler"),
        ):
            pair = authority.issue(user, common_name, client=True)
            write_kubeconfig(
                layout.kubeconfig(user),
                kubeconfig(plan.api_url, ca, user=user, cert=pair.cert, key=pair.key),
            )
        token = self.admin_token = secrets.token_urlsafe(32)
        layout.static_tokens.write_text(f'{token},{ADMIN_USER},{ADMIN_USER},"system:masters"\n')
        layout.static_tokens.chmod(0o600)
        write_kubeconfig(
            self.admin_kubeconfig, kubeconfig(plan.api_url, ca, user="admin", token=token)
        )
        layout.audit_policy.write_text(flags.AUDIT_POLICY)
        layout.audit_log.parent.mkdir(parents=True, exist_ok=True)
        layout.etcd_data.mkdir(parents=True, exist_ok=True, mode=0o700)

    def _component(self, name: str) -> Component:
        plan, layout, settings = self.plan, self.layout, self.settings
        argv = {
            "etcd": lambda: flags.etcd(plan, layout),
            "kube-apiserver": lambda: flags.kube_apiserver(plan, layout, settings),
            "kube-controller-manager": lambda: flags.kube_controller_manager(
                plan, layout, settings
            ),
            "kube-scheduler": lambda: flags.kube_scheduler(plan, layout, settings),
        }[name]()
        scheme, port, path = flags.HEALTH[name]
        return Component(
            name,
            [str(self.binaries / name), *argv],
            layout.log(name),
            f"{scheme}://{plan.control_plane_ip}:{port}{path}",
        )
