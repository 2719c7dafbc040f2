"""The command lines of etcd, kube-apiserver, kube-controller-manager and kube-scheduler.

Pure: (address plan, file layout, settings) → argv. The choices, with their reasons, are in
docs/simulated-cluster.md ("The control plane").
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sim_cluster.controlplane.network import (
    API_PORT,
    CONTROLLER_MANAGER_PORT,
    DNS_DOMAIN,
    ETCD_CLIENT_PORT,
    ETCD_PEER_PORT,
    SCHEDULER_PORT,
    AddressPlan,
)

SERVICE_ACCOUNT_ISSUER = f"https://kubernetes.default.svc.{DNS_DOMAIN}"
AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
# One JSON line per request when its response is complete (and when a watch starts): who, verb,
# resource, namespace, name, the response code and the authorizer's decision. No bodies.
omitStages: ["RequestReceived"]
rules:
- level: Metadata
"""


@dataclass(frozen=True)
class Layout:
    """Where a control plane's files are, under one directory."""

    root: Path

    @property
    def pki(self) -> Path:
        return self.root / "pki"

    def cert(self, name: str) -> Path:
        return self.pki / f"{name}.crt"

    def key(self, name: str) -> Path:
        return self.pki / f"{name}.key"

    @property
    def front_proxy_pki(self) -> Path:
        """The front proxy's CA and client certificate (a CA of its own, as kubeadm makes)."""
        return self.pki / "front-proxy"

    @property
    def service_account_key(self) -> Path:
        return self.pki / "service-account.key"

    @property
    def service_account_public_key(self) -> Path:
        return self.pki / "service-account.pub"

    @property
    def static_tokens(self) -> Path:
        return self.pki / "static-tokens.csv"

    @property
    def etcd_data(self) -> Path:
        return self.root / "etcd"

    @property
    def audit_policy(self) -> Path:
        return self.root / "audit-policy.yaml"

    @property
    def audit_log(self) -> Path:
        return self.root / "logs" / "audit.jsonl"

    def log(self, component: str) -> Path:
        return self.root / "logs" / f"{component}.log"

    def kubeconfig(self, user: str) -> Path:
        return self.root / "kubeconfigs" / f"{user}.kubeconfig"


@dataclass(frozen=True)
class Settings:
    """What a test may tune. The defaults suit a 2-core machine running tests."""

    # How long kube-controller-manager waits for a node's Lease before it marks the node
    # NotReady (Unknown) and taints it; Kubernetes' default is 50 s.
    node_monitor_grace_seconds: int = 20
    node_monitor_period_seconds: int = 2
    # kube-apiserver compacts etcd this often (its default: 5 m); a watch that asks for an
    # older resourceVersion is answered 410 Gone.
    etcd_compaction_seconds: int = 300
    # Built-in resources (``configmaps``, ``leases.coordination.k8s.io``) kube-apiserver serves
    # without its watch cache, from etcd: only their watches see an etcd compaction at once (a
    # cached resource's watch gets 410 Gone only when it falls out of the cache's window).
    uncached_resources: tuple[str, ...] = ()
    # kube-controller-manager's client rate (``--kube-api-qps``, burst 1.5x; its defaults 20 and
    # 30): at 20, the StatefulSet controller alone needs ~5 minutes for 1,000 StatefulSets.
    controller_qps: int = 20
    # A /24 of pod addresses per node from the /16 cluster range (``network.node_cidr_mask_size``
    # narrows it for clusters of more than 256 nodes).
    node_cidr_mask_size: int = 24
    # How often kube-controller-manager's HPA controller syncs each HorizontalPodAutoscaler
    # (``--horizontal-pod-autoscaler-sync-period``; Kubernetes' default 15 s): a test that waits
    # for an HPA to act sets it to 1.
    hpa_sync_seconds: int = 15
    # kube-apiserver's ``--profiling``: off (a test cluster needs no /debug/pprof); the operator
    # benchmark turns it on to take CPU profiles of the API server (docs/benchmarks.md).
    apiserver_profiling: bool = False
    verbosity: int = 1


def etcd(plan: AddressPlan, layout: Layout) -> list[str]:
    ip = plan.control_plane_ip
    peer = f"http://{ip}:{ETCD_PEER_PORT}"
    return [
        "--name=nemotron-sim",
        f"--data-dir={layout.etcd_data}",
        f"--listen-client-urls={plan.etcd_url}",
        f"--advertise-client-urls={plan.etcd_url}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=nemotron-sim={peer}",
        "--unsafe-no-fsync",  # a test cluster: what envtest does; no durability is needed
        "--log-level=warn",
        "--quota-backend-bytes=4294967296",
    ]


def kube_apiserver(plan: AddressPlan, layout: Layout, settings: Settings) -> list[str]:
    ip = plan.control_plane_ip
    return [
        f"--advertise-address={ip}",
        f"--bind-address={ip}",
        f"--secure-port={API_PORT}",
        f"--etcd-servers={plan.etcd_url}",
        f"--etcd-compaction-interval={settings.etcd_compaction_seconds}s",
        *(
            [f"--watch-cache-sizes={','.join(f'{r}#0' for r in settings.uncached_resources)}"]
            if settings.uncached_resources
            else []
        ),
        f"--tls-cert-file={layout.cert('apiserver')}",
        f"--tls-private-key-file={layout.key('apiserver')}",
        f"--client-ca-file={layout.cert('ca')}",
        # The admin's kubeconfig carries a bearer token, not a client certificate: kubectl's
        # --token then replaces it (a certificate would be presented as well and win).
        f"--token-auth-file={layout.static_tokens}",
        f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
        f"--service-account-key-file={layout.service_account_public_key}",
        f"--service-account-signing-key-file={layout.service_account_key}",
        f"--service-cluster-ip-range={plan.service_cidr}",
        "--authorization-mode=Node,RBAC",
        # On top of the default plugins: what kubeadm adds, and the check hardened clusters
        # (OpenShift) make that setting blockOwnerDeletion needs update on the owner's finalizers.
        "--enable-admission-plugins=NodeRestriction,OwnerReferencesPermissionEnforcement",
        "--allow-privileged=true",
        f"--audit-policy-file={layout.audit_policy}",
        f"--audit-log-path={layout.audit_log}",
        "--audit-log-format=json",
        # The front proxy (aggregated APIs) has a CA of its own, as in a kubeadm cluster; the
        # controller-manager and scheduler read it to authenticate requests to their ports.
        f"--requestheader-client-ca-file={layout.front_proxy_pki / 'ca.crt'}",
        "--requestheader-allowed-names=front-proxy-client",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
        "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-username-headers=X-Remote-User",
        f"--proxy-client-cert-file={layout.front_proxy_pki / 'front-proxy-client.crt'}",
        f"--proxy-client-key-file={layout.front_proxy_pki / 'front-proxy-client.key'}",
        f"--kubelet-client-certificate={layout.cert('apiserver-kubelet-client')}",
        f"--kubelet-client-key={layout.key('apiserver-kubelet-client')}",
        "--kubelet-preferred-address-types=InternalIP",
        f"--profiling={'true' if settings.apiserver_profiling else 'false'}",
        f"--v={settings.verbosity}",
    ]


def kube_controller_manager(plan: AddressPlan, layout: Layout, settings: Settings) -> list[str]:
    kubeconfig = layout.kubeconfig("kube-controller-manager")
    return [
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        f"--bind-address={plan.control_plane_ip}",
        f"--secure-port={CONTROLLER_MANAGER_PORT}",
        f"--tls-cert-file={layout.cert('kube-controller-manager-serving')}",
        f"--tls-private-key-file={layout.key('kube-controller-manager-serving')}",
        "--leader-elect=false",
        # Each controller acts as its own ServiceAccount (as kubeadm runs it), so what it may do
        # is the bootstrap RBAC's system:controller:* roles.
        "--use-service-account-credentials=true",
        f"--service-account-private-key-file={layout.service_account_key}",
        f"--root-ca-file={layout.cert('ca')}",
        f"--cluster-signing-cert-file={layout.cert('ca')}",
        f"--cluster-signing-key-file={layout.key('ca')}",
        "--allocate-node-cidrs=true",
        f"--cluster-cidr={plan.cluster_cidr}",
        f"--node-cidr-mask-size={settings.node_cidr_mask_size}",
        f"--service-cluster-ip-range={plan.service_cidr}",
        f"--node-monitor-period={settings.node_monitor_period_seconds}s",
        f"--node-monitor-grace-period={settings.node_monitor_grace_seconds}s",
        "--controllers=*",
        f"--horizontal-pod-autoscaler-sync-period={settings.hpa_sync_seconds}s",
        f"--kube-api-qps={settings.controller_qps}",
        f"--kube-api-burst={settings.controller_qps * 3 // 2}",
        "--profiling=false",
        f"--v={settings.verbosity}",
    ]


def kube_scheduler(plan: AddressPlan, layout: Layout, settings: Settings) -> list[str]:
    kubeconfig = layout.kubeconfig("kube-scheduler")
    return [
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        f"--bind-address={plan.control_plane_ip}",
        f"--secure-port={SCHEDULER_PORT}",
        f"--tls-cert-file={layout.cert('kube-scheduler-serving')}",
        f"--tls-private-key-file={layout.key('kube-scheduler-serving')}",
        "--leader-elect=false",
        "--profiling=false",
        f"--v={settings.verbosity}",
    ]


# The port each component answers /healthz (/readyz for the API server) on, and over what.
HEALTH = {
    "etcd": ("http", ETCD_CLIENT_PORT, "/health"),
    "kube-apiserver": ("https", API_PORT, "/readyz"),
    "kube-controller-manager": ("https", CONTROLLER_MANAGER_PORT, "/healthz"),
    "kube-scheduler": ("https", SCHEDULER_PORT, "/healthz"),
}
