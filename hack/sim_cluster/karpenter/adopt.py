"""The simulated kubelet and GPU Feature Discovery of the nodes Karpenter's kwok provider creates.

The kwok provider creates a Node per NodeClaim: ``providerID`` ``kwok://<name>``, the NodeClaim's
labels, the ``karpenter.sh/unregistered:NoExecute`` taint, ``capacity`` = the pods' requests it
was launched for, and no conditions, addresses or Lease (kwok's own controller would fake those).
Here it becomes a node of the simulated cluster, as a booting instance's kubelet and GFD would
make it one: once kube-controller-manager's node IPAM gives it a pod CIDR, it gets an InternalIP,
the instance type's full capacity (``nvidia.com/gpu`` included), GFD's labels, a Ready status
and Lease heartbeats, and the shared kubelet runs the pods bound to it. Karpenter itself then
registers it: it syncs the NodePool's taints and labels and removes the ``unregistered`` taint
(nodeclaim/lifecycle/registration.go), as with a real node.

A node Karpenter deletes (after draining it) goes with any pod still bound to it, as the pod
garbage collector would remove them (here at once, not after its 40 s quarantine).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from nemotron_sim.agents.kubelet_api import KUBELET_PORT
from nemotron_sim.agents.node_objects import gfd_labels, gpu_facts, ready_conditions
from nemotron_sim.agents.nodes import NODES, NodeAgent
from nemotron_sim.kubeapi.kinds import PODS
from nemotron_sim.kubeapi.mirror import Mirror
from nemotron_sim.kubeapi.resources import WatchEvent
from nemotron_sim.kubelet.events import now_rfc3339
from sim_cluster.karpenter.catalog import gpus_of, instance_type

log = logging.getLogger("sim_cluster.karpenter")
PROVIDER_PREFIX = "kwok://"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"

Attach = Callable[[str, str, str], None]  # (node, InternalIP, pod CIDR): the kubelet takes it


def is_karpenter_node(node: dict[str, Any]) -> bool:
    return str((node.get("spec") or {}).get("providerID") or "").startswith(PROVIDER_PREFIX)


def booted_status(node: dict[str, Any], internal_ip: str, kubelet_version: str) -> dict[str, Any]:
    """The status a kubelet posts for Karpenter's ``node`` once its instance has booted."""
    name = str(node["metadata"]["name"])
    status: dict[str, Any] = {
        "conditions": ready_conditions(now_rfc3339()),
        "addresses": [
            {"type": "InternalIP", "address": internal_ip},
            {"type": "Hostname", "address": name},
        ],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": KUBELET_PORT}},
        "nodeInfo": {
            "kubeletVersion": kubelet_version,
            "kubeProxyVersion": kubelet_version,
            "containerRuntimeVersion": "sim://1.0",
            "osImage": "Simulated GPU node launched by Karpenter (kwok provider)",
            "operatingSystem": "linux",
            "architecture": (node["metadata"].get("labels") or {}).get(
                "kubernetes.io/arch", "amd64"
            ),
            "kernelVersion": "sim",
            "machineID": name,
            "systemUUID": name,
            "bootID": name,
        },
    }
    found = gpus_of(_instance_type(node))
    if found is not None:
        # The kubelet reports the machine's capacity, not the requests Karpenter launched it for.
        capacity = dict(instance_type(*found)["resources"])
        allocatable = dict((node.get("status") or {}).get("allocatable") or {})
        status["capacity"] = capacity
        status["allocatable"] = {**capacity, **allocatable}
    return status


def discovered_labels(node: dict[str, Any]) -> dict[str, str]:
    """What GPU Feature Discovery labels the node with (nothing for an instance type without
    catalog GPUs)."""
    found = gpus_of(_instance_type(node))
    if found is None:
        return {}
    gpu, gpus = found
    return gfd_labels(gpu.name, gpus, gpu_facts(gpu.name))


def _instance_type(node: dict[str, Any]) -> str:
    return str(((node.get("metadata") or {}).get("labels") or {}).get(INSTANCE_TYPE_LABEL, ""))


class NodeAdopter:
    def __init__(
        self,
        mirror: Mirror,
        agent: NodeAgent,
        *,
        next_ip: Callable[[], str],
        attach: Attach,
        detach: Callable[[str], None],
        kubelet_version: str,
    ) -> None:
        self.mirror, self.agent = mirror, agent
        self._next_ip, self._attach, self._detach = next_ip, attach, detach
        self.kubelet_version = kubelet_version
        self.adopted: dict[str, str] = {}  # node → its InternalIP

    def start(self) -> None:
        self.mirror.on_event([NODES], self._observe)
        for node in list(self.mirror.scan(NODES)):
            self._observe(WatchEvent("ADDED", NODES, node))

    def _observe(self, event: WatchEvent) -> None:
        node = event.obj
        if not is_karpenter_node(node):
            return
        name = str(node["metadata"]["name"])
        if event.type == "DELETED":
            if name in self.adopted:
                self._forget(name)
            return
        cidr = (node.get("spec") or {}).get("podCIDR")
        if name in self.adopted or not cidr or node["metadata"].get("deletionTimestamp"):
            return
        self._adopt(node, str(cidr))

    def _adopt(self, node: dict[str, Any], cidr: str) -> None:
        name = str(node["metadata"]["name"])
        ip = self._next_ip()
        self.adopted[name] = ip
        log.info("adopting Karpenter's node %s (%s): InternalIP %s", name, _instance_type(node), ip)
        self._attach(name, ip, cidr)
        labels = discovered_labels(node)
        if labels:
            self.mirror.merge_patch(NODES, None, name, {"metadata": {"labels": labels}})
        status = booted_status(node, ip, self.kubelet_version)
        self.mirror.merge_patch(NODES, None, name, {"status": status}, subresource="status")
        self.agent.nodes[name] = {"metadata": {"name": name, "uid": node["metadata"]["uid"]}}

    def _forget(self, name: str) -> None:
        log.info("Karpenter's node %s is gone: its pods go with it", name)
        self.adopted.pop(name, None)
        self.agent.nodes.pop(name, None)
        self.agent.stopped.discard(name)
        for pod in list(self.mirror.scan(PODS)):
            if (pod.get("spec") or {}).get("nodeName") == name:
                md = pod["metadata"]
                self.mirror.delete(
                    PODS, md.get("namespace"), md["name"], grace_period=0,
                    preconditions={"uid": md.get("uid")},
                )  # fmt: skip
        self._detach(name)
