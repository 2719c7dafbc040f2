"""The address plan of one control plane inside the network namespace (see ``netns``).

Several control planes can share one namespace (a test session's shared one and the fresh ones
some tests start): each takes an index ``k`` and its own ranges, so none of their addresses
meet. Index 0 has the ranges a kubeadm cluster uses by default.

| what | addresses |
|---|---|
| kube-apiserver (6443), etcd (2379/2380), controller-manager (10257), scheduler | ``10.0.k.1`` |
| the fault proxy in front of kube-apiserver (HTTPS 6443, HTTP 8080) | ``10.0.k.2`` |
| nodes' InternalIPs (their kubelet API on 10250) | ``10.1.(16k+b).2`` … ``.254``, b = 0…15 |
| Services (``--service-cluster-ip-range``; ``kubernetes`` is the first) | ``10.(96+k).0.0/16`` |
| pods (``--cluster-cidr``; a /24 per node, smaller above 256 nodes) | ``10.(244+k).0.0/16`` |

(kube-scheduler's port is 10259.)
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

MAX_CLUSTERS = 12  # 10.(244+k) must stay a valid octet
NODE_BLOCKS = 16  # /24s of node addresses per control plane: 16 x 12 clusters fit in 10.1.0.0/16
NODES_PER_BLOCK = 253  # .2 to .254
MAX_NODES = NODE_BLOCKS * NODES_PER_BLOCK
API_PORT = 6443
ETCD_CLIENT_PORT = 2379
ETCD_PEER_PORT = 2380
CONTROLLER_MANAGER_PORT = 10257
SCHEDULER_PORT = 10259
PROXY_HTTP_PORT = 8080
DNS_DOMAIN = "cluster.local"


@dataclass(frozen=True)
class AddressPlan:
    index: int

    def __post_init__(self) -> None:
        if not 0 <= self.index < MAX_CLUSTERS:
            raise ValueError(f"control plane index {self.index} outside 0..{MAX_CLUSTERS - 1}")

    @property
    def control_plane_ip(self) -> str:
        return f"10.0.{self.index}.1"

    @property
    def api_url(self) -> str:
        return f"https://{self.control_plane_ip}:{API_PORT}"

    @property
    def proxy_ip(self) -> str:
        return f"10.0.{self.index}.2"

    @property
    def proxy_url(self) -> str:
        """The fault proxy's HTTPS address (the API, through the proxy)."""
        return f"https://{self.proxy_ip}:{API_PORT}"

    @property
    def proxy_http_url(self) -> str:
        """The fault proxy's plain HTTP address (the API and ``/_sim/``, inside the namespace)."""
        return f"http://{self.proxy_ip}:{PROXY_HTTP_PORT}"

    @property
    def etcd_url(self) -> str:
        return f"http://{self.control_plane_ip}:{ETCD_CLIENT_PORT}"

    @property
    def service_cidr(self) -> str:
        return f"10.{96 + self.index}.0.0/16"

    @property
    def cluster_cidr(self) -> str:
        return f"10.{244 + self.index}.0.0/16"

    @property
    def kubernetes_service_ip(self) -> str:
        """The ``default/kubernetes`` Service's ClusterIP: the first address of the range."""
        return str(ipaddress.ip_network(self.service_cidr)[1])

    def node_ip(self, ordinal: int) -> str:
        """The InternalIP of the ``ordinal``-th node (0-based)."""
        if not 0 <= ordinal < MAX_NODES:
            raise ValueError(f"at most {MAX_NODES} nodes per control plane, asked for {ordinal}")
        block, host = divmod(ordinal, NODES_PER_BLOCK)
        return f"10.1.{NODE_BLOCKS * self.index + block}.{host + 2}"

    def api_server_names(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(IP SANs, DNS SANs) of the API server's serving certificate."""
        ips = (self.control_plane_ip, self.kubernetes_service_ip, "127.0.0.1")
        dns = (
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            f"kubernetes.default.svc.{DNS_DOMAIN}",
            "localhost",
        )
        return ips, dns


def node_cidr_mask_size(nodes: int) -> int:
    """kube-controller-manager's ``--node-cidr-mask-size`` for ``nodes`` nodes in the /16 pod
    range: a /24 per node (254 pods) up to 256 nodes, as kubeadm's default; beyond, the largest
    per-node range that still gives every node one (a /25 up to 512 nodes, a /26 up to 1,024…),
    since its node IPAM leaves a node without a range, and its pods without addresses, once the
    range is spent."""
    mask = 24
    while 2 ** (mask - 16) < nodes:
        mask += 1
    if mask > 28:  # 14 pod addresses per node: below that, a GPU node's pods may not fit
        raise ValueError(f"{nodes} nodes do not fit one /16 pod range with a /28 per node")
    return mask
