"""How ``KubeCluster`` wires the simulator's parts to the real control plane: the Node objects
it registers, how a pod reaches kube-apiserver (its kubeconfig and its ServiceAccount tokens),
the fault proxy in front of kube-apiserver with its controls, the serving certificates, and
which nodes are real."""

from __future__ import annotations

import ssl
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from nemotron_operator.kube.transport import Transport
from nemotron_sim.agents.kubelet_api import KUBELET_PORT
from nemotron_sim.agents.node_objects import (
    NodeGroup,
    build_nodes,
    build_system_node,
    gpu_facts,
    ready_conditions,
)
from nemotron_sim.agents.nodes import NodeAgent
from nemotron_sim.faultproxy.server import Controls, FaultProxy
from nemotron_sim.kubeapi.kinds import SERVICEACCOUNTS
from nemotron_sim.kubelet.events import now_rfc3339
from nemotron_sim.kubelet.podfiles import ApiAccess, service_account
from nemotron_sim.kubelet.process_pods import PodTokenSource
from sim_cluster.controlplane import ControlPlane
from sim_cluster.controlplane.kubeconfig import kubeconfig, write_kubeconfig
from sim_cluster.controlplane.network import API_PORT, PROXY_HTTP_PORT
from sim_cluster.realnodes import RealNodeSpec


def node_objects_of(
    groups: list[NodeGroup], system_nodes: int, next_ip: Callable[[], str], version: str
) -> list[dict[str, Any]]:
    """The GPU nodes of ``groups`` and ``system_nodes`` GPU-less ones, Ready, with the kubelet
    API's port."""
    nodes = build_nodes(groups, gpu_facts, next_ip, version)
    nodes += [build_system_node(i, next_ip(), version) for i in range(system_nodes)]
    now = now_rfc3339()
    for node in nodes:
        status = node["status"]
        status["conditions"] = ready_conditions(now)
        status["daemonEndpoints"] = {"kubeletEndpoint": {"Port": KUBELET_PORT}}
    return nodes


def pod_access(plane: ControlPlane) -> ApiAccess:
    """In-cluster access through the ``kubernetes`` Service, as KUBERNETES_SERVICE_HOST would
    give it (the stand-in kubelet cannot mount the token at its fixed path)."""
    service_url = f"https://{plane.plan.kubernetes_service_ip}:443"
    ca = plane.ca_pem

    def pod_kubeconfig(path: Path, namespace: str, token: str) -> None:
        config = kubeconfig(service_url, ca, user="pod", token=token, namespace=namespace)
        write_kubeconfig(path, config)

    return ApiAccess(pod_kubeconfig, ca)


def token_source(api: Transport) -> PodTokenSource:
    """A pod's ServiceAccount tokens from kube-apiserver's TokenRequest, bound to the pod."""

    async def token(pod: Mapping[str, Any], seconds: int, audiences: tuple[str, ...]) -> str:
        md = pod.get("metadata") or {}
        body: dict[str, Any] = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {
                "expirationSeconds": seconds,
                "audiences": list(audiences) or None,
                "boundObjectRef": {
                    "apiVersion": "v1", "kind": "Pod", "name": md.get("name"),
                    "uid": md.get("uid"),
                },
            },
        }  # fmt: skip
        path = SERVICEACCOUNTS.path(md.get("namespace"), service_account(pod), "token")
        answer = await api.request("POST", path, body=body)
        return str(answer["status"]["token"])

    return token


async def start_fault_proxy(
    plane: ControlPlane, nodes: NodeAgent, kubeconfig_path: Path
) -> FaultProxy:
    """The fault proxy on the control plane's proxy address, able to stop a node's heartbeat,
    act on a component and compact etcd; the admin's kubeconfig through it at
    ``kubeconfig_path``."""
    assert plane.authority is not None
    ip = plane.plan.proxy_ip
    serving = plane.authority.issue(
        "fault-proxy", "nemotron-sim-fault-proxy", server=True, ips=(ip,)
    )

    def heartbeat(node: str, beating: bool) -> None:
        if node not in nodes.nodes:
            raise KeyError(f"no simulated node {node!r}")
        (nodes.resume_heartbeat if beating else nodes.stop_heartbeat)(node)

    controls = Controls(plane.act, heartbeat, plane.compact_etcd)
    proxy = FaultProxy(plane.api_url, plane.ca_context(), controls)
    await proxy.start(ip, API_PORT, PROXY_HTTP_PORT, server_context(serving.cert, serving.key))
    config = kubeconfig(plane.plan.proxy_url, plane.ca_pem, user="admin", token=plane.admin_token)
    write_kubeconfig(kubeconfig_path, config)
    return proxy


def server_context(cert: Path, key: Path) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(str(cert), str(key))
    return context


def split_real(
    nodes: list[dict[str, Any]], count: int
) -> tuple[list[dict[str, Any]], list[RealNodeSpec]]:
    """(the simulated nodes, the real ones): ``count`` nodes, system nodes first, then GPU nodes,
    never a DRA node (the fake device plugin advertises nvidia.com/gpu only)."""
    order = sorted(nodes, key=lambda n: not n["metadata"]["name"].startswith("sim-system-"))
    eligible = [n for n in order if "-dra-" not in n["metadata"]["name"]]
    if count > len(eligible):
        raise ValueError(f"--real-nodes {count}: only {len(eligible)} nodes "
                         "can be real (system and non-DRA GPU nodes)")  # fmt: skip
    real = eligible[:count]
    names = {n["metadata"]["name"] for n in real}
    specs = [RealNodeSpec.from_node(n, i) for i, n in enumerate(real)]
    return [n for n in nodes if n["metadata"]["name"] not in names], specs
