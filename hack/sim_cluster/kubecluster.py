"""``KubeCluster``: a real control plane with simulated GPU nodes, kubelets and vLLM.

Real: etcd, kube-apiserver, kube-controller-manager and kube-scheduler (built from Kubernetes'
Go modules), so server-side apply, RBAC, admission, the StatefulSet, Deployment, EndpointSlice
and garbage-collector controllers, node lifecycle and scheduling are Kubernetes' own.
Simulated: the GPU nodes (Node objects and their Lease heartbeat), the kubelets (containers
run as local processes or as in-process stand-in vLLMs), the service proxy, the volume
provisioner, and vLLM. Everything lives in the network namespace of ``sim_cluster.netns``.

```python
netns.enter()                                      # before any thread starts
async with KubeCluster("NVIDIA-H200:8x1", system_nodes=1) as cluster:
    cluster.kubeconfig, cluster.control_plane.audit_log
```
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from nemotron_operator.kube.transport import Transport
from nemotron_sim.agents.kubelet_api import KubeletApi
from nemotron_sim.agents.nodes import NODES, NodeAgent
from nemotron_sim.faultproxy.server import FaultProxy
from nemotron_sim.kubeapi.kinds import (
    CONFIGMAPS,
    PODS,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    SECRETS,
    SERVICEACCOUNTS,
)
from nemotron_sim.kubeapi.mirror import Mirror
from nemotron_sim.kubeapi.resources import WatchEvent
from nemotron_sim.kubelet.events import EventRecorder
from nemotron_sim.kubelet.ipam import CidrPool
from nemotron_sim.kubelet.kubelet import Kubelet
from nemotron_sim.kubelet.lost_nodes import LostNodeGate
from nemotron_sim.kubelet.settings import CRASH_BACKOFF_CAP_SECONDS, KubeletSettings
from nemotron_sim.vllm import StubVllm
from nemotron_sim.vllm.parsers import OutputFault
from sim_cluster.addons import COMPONENTS as ADDON_COMPONENTS
from sim_cluster.addons import crds as addon_crds
from sim_cluster.addons import install as install_addons
from sim_cluster.addons import programs as addon_programs
from sim_cluster.controlplane import ControlPlane, flags
from sim_cluster.controlplane.binaries import crd_dir, recipe_versions
from sim_cluster.controlplane.network import (
    MAX_NODES,
    node_cidr_mask_size,
)
from sim_cluster.karpenter.running import Karpenter, KarpenterOptions
from sim_cluster.lws import LeaderWorkerSetAddon
from sim_cluster.node_spec import DEFAULT_NODES, parse_node_spec
from sim_cluster.programs import local_programs
from sim_cluster.realnodes import RealNodes, unavailable
from sim_cluster.simulated_addons.resource_slices import publish
from sim_cluster.simulated_addons.service_proxy import ENDPOINT_SLICES, SERVICES, ServiceProxies
from sim_cluster.simulated_addons.volumes import CLAIMS, VOLUMES, Provisioner, create_storage_class
from sim_cluster.thirdparty import install_crds
from sim_cluster.wiring import (
    node_objects_of,
    pod_access,
    server_context,
    split_real,
    start_fault_proxy,
    token_source,
)

log = logging.getLogger("sim_cluster")
ADDONS = ("lws", *ADDON_COMPONENTS)  # controllers of other projects the cluster can run (real ones)
MIRRORED = (
    NODES, PODS, SECRETS, CONFIGMAPS, SERVICEACCOUNTS, SERVICES, ENDPOINT_SLICES, CLAIMS, VOLUMES,
    RESOURCE_CLAIMS, RESOURCE_SLICES,
)  # fmt: skip


@dataclasses.dataclass(frozen=True)
class NodeOptions:
    nodes: str = DEFAULT_NODES
    system_nodes: int = 0
    renew_seconds: float = 2.0  # the node Leases' renewal period (a kubelet: 10 s)


class KubeCluster:
    def __init__(
        self,
        nodes: str = DEFAULT_NODES,
        *,
        system_nodes: int = 0,
        workdir: Path | None = None,
        kubeconfig_path: Path | None = None,
        load_seconds: float = 0.0,
        init_seconds: float = 0.05,
        probe_period: float = 0.1,
        record_events: bool = True,
        images: Mapping[str, Sequence[str]] | None = None,
        commands: Mapping[str, Sequence[str]] | None = None,
        probe_time_scale: float = 1.0,
        crash_backoff_seconds: float = 10.0,
        crash_backoff_cap_seconds: float = CRASH_BACKOFF_CAP_SECONDS,
        stop_grace_seconds: float = 5.0,
        control_plane: flags.Settings | None = None,
        renew_seconds: float = 2.0,
        crds: Sequence[Path] = (),
        karpenter: KarpenterOptions | None = None,
        addons: Sequence[str] = (),
        real_nodes: int = 0,
    ) -> None:
        """``crds``: CRD files installed before kube-controller-manager starts (its garbage
        collector finds their types at once instead of at its next 30 s discovery).
        ``karpenter``: run Karpenter (kwok provider) too; its nodes become simulated nodes.
        ``addons``: ``lws`` runs the real LeaderWorkerSet controller (``sim_cluster.lws``);
        ``monitoring``, ``keda`` and ``gateway`` real neighbours as pods (``sim_cluster.addons``).
        ``real_nodes``: that many nodes (system nodes first, then GPU nodes) run a real kubelet
        and containerd (sim_cluster.realnodes) when this machine can; ``real_node_note`` says
        why not otherwise, and the simulated kubelet runs them."""
        unknown = sorted(set(addons) - set(ADDONS))
        if unknown:
            raise ValueError(f"unknown add-on(s) {', '.join(unknown)}: {', '.join(ADDONS)}")
        self.addons = addon_programs([a for a in addons if a != "lws"])
        self._tempdir = (
            tempfile.TemporaryDirectory(prefix="nemotron-sim-") if workdir is None else None
        )
        self.workdir = (
            Path(self._tempdir.name) if self._tempdir is not None else Path(workdir or ".")
        )
        self.groups = parse_node_spec(nodes)
        self.node_options = NodeOptions(nodes, system_nodes, renew_seconds)
        self.kubelet_settings = KubeletSettings(
            load_seconds=load_seconds,
            init_seconds=init_seconds,
            probe_period=probe_period,
            programs=local_programs(
                {**self.addons.images, **(images or {})},
                {**self.addons.commands, **(commands or {})},
            ),
            probe_time_scale=probe_time_scale,
            crash_backoff_seconds=crash_backoff_seconds,
            crash_backoff_cap_seconds=crash_backoff_cap_seconds,
            stop_grace_seconds=stop_grace_seconds,
            workdir=self.workdir / "pods",
        )
        self.record_events = record_events
        self.default_load_seconds = load_seconds  # what set_startup_seconds(reset) goes back to
        node_count = sum(g.nodes for g in self.groups) + system_nodes
        self.control_plane = ControlPlane(
            self.workdir / "control-plane",
            settings=dataclasses.replace(
                control_plane or flags.Settings(),
                node_cidr_mask_size=node_cidr_mask_size(node_count),
            ),
        )
        self.kubeconfig = kubeconfig_path or self.workdir / "kubeconfig"
        # The same admin, through the fault proxy (what the operator under test is given).
        self.proxy_kubeconfig = self.kubeconfig.with_name(self.kubeconfig.name + "-via-proxy")
        self.lws = LeaderWorkerSetAddon(self.control_plane) if "lws" in addons else None
        self.extra_crds = [
            *crds,
            *([self.lws.crds] if self.lws else []),
            *addon_crds(self.addons.names),
        ]
        self.karpenter = Karpenter(self.workdir / "karpenter", karpenter) if karpenter else None
        self._ordinals = iter(range(MAX_NODES))  # the nodes' InternalIPs, in order
        self._node_ips: dict[str, str] = {}  # what the kubelet serves (Karpenter's nodes join)
        self._pod_pools: dict[str, CidrPool] = {}
        self.real_node_note = unavailable() if real_nodes else None
        self.real_node_count = 0 if self.real_node_note else real_nodes
        self.real: RealNodes | None = None
        self.proxy: FaultProxy | None = None
        self.api: Transport | None = None
        self.mirror: Mirror | None = None
        self.nodes: NodeAgent | None = None
        self.kubelet: Kubelet | None = None
        self.kubelet_api: KubeletApi | None = None
        self.proxies: ServiceProxies | None = None
        self.started_seconds = 0.0
        self._serving: set[asyncio.Task[None]] = set()
        self.timings: dict[str, float] = {}  # seconds each start-up step took

    # --- lifecycle ----------------------------------------------------------------------------

    async def __aenter__(self) -> KubeCluster:
        try:
            await self.start()
        except BaseException:
            await self.stop()
            raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:  # fmt: skip
        await self.stop()

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        began = mark = loop.time()

        def lap(step: str) -> None:
            nonlocal mark
            self.timings[step] = loop.time() - mark
            mark = loop.time()

        plane = self.control_plane

        async def before_controllers() -> None:
            self.api = Transport(
                plane.api_url, plane.ssl_context(), user_agent="nemotron-sim/nodes", connections=64
            )
            await install_crds(self.api, [crd_dir(), *self.extra_crds])
            await create_storage_class(self.api)
            if self.karpenter is not None:
                await self.karpenter.install(self.api)

        await plane.start(before_controllers)
        lap("control plane, CRDs and StorageClass")
        assert self.api is not None
        if self.lws is not None:
            await self.lws.start(self.api)
            lap("LeaderWorkerSet controller and webhooks")
        self.kubeconfig.parent.mkdir(parents=True, exist_ok=True)
        self.kubeconfig.write_bytes(plane.admin_kubeconfig.read_bytes())
        self.kubeconfig.chmod(0o600)
        self.mirror = Mirror(self.api, MIRRORED)
        await self.mirror.start()
        lap("watch caches synced")
        node_objects, real = split_real(
            node_objects_of(
                self.groups, self.node_options.system_nodes, self.next_node_ip, self.kubelet_version
            ),
            self.real_node_count,
        )
        self.nodes = NodeAgent(
            self.api, self.mirror, node_objects, renew_seconds=self.node_options.renew_seconds
        )
        await self.nodes.register()
        uids = {n["metadata"]["name"]: n["metadata"]["uid"] for n in node_objects}
        await publish(self.api, self.groups, uids)  # DRA nodes' ResourceSlices, if any
        lap("nodes registered with pod CIDRs")
        node_ips = {
            n["metadata"]["name"]: n["status"]["addresses"][0]["address"] for n in node_objects
        }
        await self._start_kubelets(node_ips)
        self.proxies = ServiceProxies(self.mirror)
        self.proxies.start()
        Provisioner(self.mirror, self.workdir / "volumes").start()
        self.nodes.start()
        lap("kubelets, kubelet API, service proxy, provisioner")
        await self._start_fault_proxy()
        lap("fault proxy")
        if self.karpenter is not None:
            await self.karpenter.start(self)
            lap("Karpenter")
        if real:
            self.real = RealNodes(plane, self.api, real)
            await self.real.start()
            lap("real nodes Ready")
        await self._install_addons(lap)
        self.started_seconds = loop.time() - began

    async def _install_addons(self, lap: Callable[[str], None]) -> None:
        """The real neighbours as pods (sim_cluster.addons), once the nodes are up."""
        if self.addons.names and self.api is not None:
            await install_addons(self.api, self.addons.names)
            lap("add-ons applied")

    async def stop(self) -> None:
        if self.karpenter is not None:
            self.karpenter.stop()
        for step in (
            self.real.stop if self.real else None,
            self.proxy.stop if self.proxy else None,
            self.kubelet.stop if self.kubelet else None,
            self.kubelet_api.stop if self.kubelet_api else None,
            self.proxies.stop if self.proxies else None,
            self.nodes.stop if self.nodes else None,
            self.mirror.stop if self.mirror else None,
            self.api.close if self.api else None,
        ):
            if step is not None:
                try:
                    await step()
                except Exception:
                    log.exception("stopping the simulated cluster: %s failed", step)
        self.kubelet = self.kubelet_api = self.proxies = self.nodes = self.mirror = None
        self.proxy = self.real = None
        self.api = None
        if self.lws is not None:
            self.lws.stop()
        self.control_plane.stop()
        if self._tempdir is not None:
            self._tempdir.cleanup()
            self._tempdir = None

    # --- parts --------------------------------------------------------------------------------

    @property
    def kubelet_version(self) -> str:
        return f"{recipe_versions().kubernetes}-sim"  # a simulated kubelet at that version

    def next_node_ip(self) -> str:
        return self.control_plane.plan.node_ip(next(self._ordinals))

    def attach_node(self, name: str, address: str, pod_cidr: str) -> None:
        """A node that joined after the start (Karpenter's): the kubelet runs its pods."""
        assert self.kubelet_api is not None
        self._pod_pools[name] = CidrPool(pod_cidr)
        self._node_ips[name] = address
        task = asyncio.create_task(self.kubelet_api.serve(name, address))
        self._serving.add(task)
        task.add_done_callback(self._serving.discard)
        for listener in self.nodes.on_resume if self.nodes else ():
            listener(name)  # pods already bound to it

    def detach_node(self, name: str) -> None:
        self._node_ips.pop(name, None)

    async def _start_kubelets(self, node_ips: dict[str, str]) -> None:
        assert self.mirror is not None
        assert self.nodes is not None
        assert self.api is not None
        agent, mirror, api = self.nodes, self.mirror, self.api
        self._node_ips.update(node_ips)
        node_ips = self._node_ips
        pools = self._pod_pools
        pools.update({name: CidrPool(agent.pod_cidr(name) or "") for name in node_ips})
        plane = self.control_plane
        recorder = EventRecorder(mirror, enabled=self.record_events)
        self.kubelet = Kubelet(
            mirror, recorder, node_ips, pools.__getitem__, self.kubelet_settings,
            api=pod_access(plane), token_source=token_source(api),
        )  # fmt: skip
        gate = LostNodeGate(mirror, self.kubelet.observe, agent.stopped.__contains__)
        agent.on_resume.append(gate.node_back)
        mirror.on_event([PODS], gate.observe)
        for pod in list(mirror.scan(PODS)):  # pods bound before this kubelet started
            gate.observe(_added(pod))
        authority = plane.authority
        assert authority is not None
        serving = authority.issue(
            "kubelet-serving", "system:node:sim", server=True, ips=tuple(node_ips.values())
        )
        context = server_context(serving.cert, serving.key)
        self.kubelet_api = KubeletApi(mirror, self.kubelet.processes.log_target, context)
        for name, address in node_ips.items():
            await self.kubelet_api.serve(name, address)

    async def _start_fault_proxy(self) -> None:
        assert self.nodes is not None
        self.proxy = await start_fault_proxy(self.control_plane, self.nodes, self.proxy_kubeconfig)

    # --- what tests use -----------------------------------------------------------------------

    def stub(self, namespace: str, pod: str) -> StubVllm | None:
        return None if self.kubelet is None else self.kubelet.stub(namespace, pod)

    def kill_container(self, namespace: str, pod: str, container: str = "vllm") -> bool:
        """SIGKILL one running container; the kubelet restarts it (``Kubelet.kill_container``)."""
        return self.kubelet is not None and self.kubelet.kill_container(namespace, pod, container)

    async def install_crds(self) -> list[str]:
        """(Re)install the CRDs the cluster started with (a test may have deleted one)."""
        assert self.api is not None
        return await install_crds(self.api, [crd_dir(), *self.extra_crds])

    def set_kv_cache_bias(self, bias: float) -> None:
        """Stand-in vLLMs started from now on allocate ``bias`` more (+) or less (-) KV cache
        than their own accounting (the operator's plan check reports it)."""
        self._change_kubelet_settings(kv_cache_bias=bias)

    def set_startup_seconds(
        self,
        *,
        load: float | None = None,
        compile_: float | None = None,
        capture: float | None = None,
        download: float | None = None,
    ) -> None:
        """Stand-in vLLMs started from now on take these seconds to load the weights, torch.compile
        (skipped when their compile cache is warm) and capture CUDA graphs, and a download Job's
        stand-in container this long (kubelet/batch_pods.py); None keeps a phase."""
        phases = {"load_seconds": load, "compile_seconds": compile_,
                  "capture_seconds": capture, "download_seconds": download}  # fmt: skip
        self._change_kubelet_settings(**{k: v for k, v in phases.items() if v is not None})

    def set_output_faults(self, faults: frozenset[OutputFault]) -> None:
        """Stand-in vLLMs started from now on get these output-parser faults (``reasoning-in-
        content``, ...: nemotron_sim.vllm.parsers); an empty set makes them answer correctly."""
        self._change_kubelet_settings(output_faults=faults)

    def _change_kubelet_settings(self, **changes: Any) -> None:
        """The running kubelet's settings and the ones a restarted one would get."""
        if self.kubelet is not None:
            self.kubelet.settings = dataclasses.replace(self.kubelet.settings, **changes)
        self.kubelet_settings = dataclasses.replace(self.kubelet_settings, **changes)

    def gpu_inventory(self) -> str:
        return ",".join(f"{g.product}:{g.gpus_per_node}x{g.nodes}" for g in self.groups)


def _added(pod: dict[str, Any]) -> WatchEvent:
    return WatchEvent("ADDED", PODS, pod)
