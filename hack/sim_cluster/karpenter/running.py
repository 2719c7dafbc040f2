"""Karpenter beside a ``KubeCluster``: its CRDs and node class before the controllers start, then
the node adopter and the Karpenter process once the simulated kubelet runs."""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from nemotron_operator.kube.transport import Transport
from sim_cluster.controlplane.processes import Component, wait_healthy
from sim_cluster.karpenter.adopt import NodeAdopter
from sim_cluster.karpenter.process import apply_node_class, build, component
from sim_cluster.thirdparty import install_crds

if TYPE_CHECKING:
    from sim_cluster.kubecluster import KubeCluster

_START_SECONDS = 60.0


@dataclass(frozen=True)
class KarpenterOptions:
    # The KWOKNodeClass's nodeRegistrationDelay: how long an "instance" takes to appear as a Node
    # after Karpenter launched it (a cloud GPU instance: minutes).
    registration_delay: str = "0s"


class Karpenter:
    def __init__(self, workdir: Path, options: KarpenterOptions) -> None:
        self.workdir, self.options = workdir, options
        self.build = build()  # MissingKarpenterError at once, before a control plane starts
        self.process: Component | None = None
        self.adopter: NodeAdopter | None = None

    async def install(self, api: Transport) -> None:
        await install_crds(api, [self.build.crds])
        await apply_node_class(api, self.options.registration_delay)

    async def start(self, cluster: KubeCluster) -> None:
        assert cluster.mirror is not None
        assert cluster.nodes is not None
        self.adopter = NodeAdopter(
            cluster.mirror, cluster.nodes, next_ip=cluster.next_node_ip,
            attach=cluster.attach_node, detach=cluster.detach_node,
            kubelet_version=cluster.kubelet_version,
        )  # fmt: skip
        self.adopter.start()
        self.process = component(
            self.build, self.workdir, cluster.kubeconfig, cluster.control_plane.plan.index
        )
        self.process.start()
        await wait_healthy(self.process, ssl.create_default_context(), _START_SECONDS)

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
            self.process = None
