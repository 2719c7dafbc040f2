"""The files a real node runs from: containerd's config, the kubelet's, the CNI network, and
the fake machine facts (capacity) its mount namespace shows. Pure: text and dicts only."""

from __future__ import annotations

import hashlib
import json
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PAUSE_IMAGE = "registry.k8s.io/pause:3.10"  # the name the pause archive is imported under
CNI_BIN_DIR = "/usr/lib/cni"  # Debian's containernetworking-plugins
# Values the kubelet writes to VM-wide sysctls unless they already hold them
# (pkg/kubelet/cm/container_manager_linux.go setupKernelTunables): each node's mount namespace
# shows a file with the value instead, so the machine's own settings stay untouched.
KERNEL_TUNABLES = {
    "vm/overcommit_memory": "1",
    "vm/panic_on_oom": "0",
    "kernel/panic": "10",
    "kernel/panic_on_oops": "1",
    "kernel/keys/root_maxkeys": "1000000",
    "kernel/keys/root_maxbytes": "25000000",
}
_KUBELET_SET_LABELS = ("kubernetes.io/hostname", "kubernetes.io/os", "kubernetes.io/arch")


@dataclass(frozen=True)
class RealNodeSpec:
    """One real node: what its Node object should say (from the simulated node it replaces)."""

    name: str
    ip: str
    ordinal: int
    labels: dict[str, str]
    taints: list[dict[str, str]]
    gpus: int
    cpus: int
    memory_gib: int

    @classmethod
    def from_node(cls, node: dict[str, Any], ordinal: int) -> RealNodeSpec:
        capacity = node["status"]["capacity"]
        memory = re.fullmatch(r"(\d+)Gi", str(capacity["memory"]))
        if memory is None:
            raise ValueError(f"node memory {capacity['memory']!r} is not in Gi")
        return cls(
            name=node["metadata"]["name"],
            ip=node["status"]["addresses"][0]["address"],
            ordinal=ordinal,
            labels={
                k: v for k, v in node["metadata"]["labels"].items() if k not in _KUBELET_SET_LABELS
            },
            taints=list((node.get("spec") or {}).get("taints") or []),
            gpus=int(capacity.get("nvidia.com/gpu", 0)),
            cpus=int(capacity["cpu"]),
            memory_gib=int(memory.group(1)),
        )


def socket_dir(state: Path) -> Path:
    """Where a node's containerd listens: a short directory of its own. A unix socket's path
    is limited to 108 bytes (containerd refuses > 104), which a node's state directory under a
    test session's temporary directory exceeds ("unix socket path too long")."""
    digest = hashlib.sha256(str(state).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"sim-node-{digest}"


def containerd_toml(state: Path) -> str:
    """containerd 1.6's config for a node whose files are under ``state``. The machine lacks
    CAP_SYS_RESOURCE for raising OOM scores: ``restrict_oom_score_adj`` keeps sandboxes from
    failing on /proc/self/oom_score_adj."""
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    return f"""version = 2
root = "{state / "containerd"}"
state = "{state / "containerd-state"}"
[grpc]
  address = "{socket_dir(state) / "containerd.sock"}"
[ttrpc]
  address = "{socket_dir(state) / "containerd.sock.ttrpc"}"
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "{state / "opt"}"
[{cri}]
  sandbox_image = "{PAUSE_IMAGE}"
  restrict_oom_score_adj = true
  disable_apparmor = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
[{cri}.cni]
  bin_dir = "{CNI_BIN_DIR}"
  conf_dir = "{state / "cni"}"
[{cri}.containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"
[{cri}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
[{cri}.containerd.runtimes.runc.options]
  SystemdCgroup = false
"""


def cni_conf(spec: RealNodeSpec, pod_cidr: str, state: Path) -> dict[str, Any]:
    """A bridge of the node's own, with the node's pod CIDR."""
    return {
        "cniVersion": "0.4.0",
        "name": f"nemotron-sim-{spec.name}",
        "plugins": [
            {
                "type": "bridge",
                "bridge": bridge_name(spec.ip),
                "isGateway": True,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": pod_cidr}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": str(state / "ipam"),
                },
            }
        ],
    }


def kubelet_config(spec: RealNodeSpec, state: Path, ca: Path, cgroup_root: str) -> dict[str, Any]:
    """The KubeletConfiguration: served on the node's IP (not 0.0.0.0: every node shares the
    namespace), cgroup v1 allowed, OOM scores left alone, eviction only when nearly full."""
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": spec.ip,
        "healthzBindAddress": spec.ip,
        "readOnlyPort": 0,
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(ca)},
        },
        "authorization": {"mode": "Webhook"},
        "tlsCertFile": str(state / "serving.crt"),
        "tlsPrivateKeyFile": str(state / "serving.key"),
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": cgroup_root,
        "failCgroupV1": False,
        "oomScoreAdj": 0,
        "failSwapOn": False,
        "containerRuntimeEndpoint": f"unix://{socket_dir(state) / 'containerd.sock'}",
        "podLogsDir": str(state / "pod-logs"),
        "resolvConf": str(state / "resolv.conf"),
        "clusterDomain": "cluster.local",
        "registerWithTaints": spec.taints,
        "evictionHard": {
            "memory.available": "1Mi",
            "nodefs.available": "1%",
            "imagefs.available": "1%",
            "nodefs.inodesFree": "1%",
        },
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "serializeImagePulls": False,
        "syncFrequency": "10s",
        "fileCheckFrequency": "5s",
    }


def fake_meminfo(real: str, memory_gib: int) -> str:
    """/proc/meminfo with ``MemTotal`` (the node's memory capacity) and ``MemFree``/
    ``MemAvailable`` raised by the same amount."""
    total_kib = memory_gib * 1024 * 1024
    found = re.search(r"^MemTotal:\s+(\d+) kB", real, re.MULTILINE)
    extra = total_kib - int(found.group(1)) if found else 0

    def raise_by(match: re.Match[str]) -> str:
        value = total_kib if match.group(1) == "MemTotal" else int(match.group(2)) + extra
        return (
            f"{match.group(1)}:{' ' * max(1, 15 - len(match.group(1)) - len(str(value)))}{value} kB"
        )

    return re.sub(r"^(MemTotal|MemFree|MemAvailable):\s+(\d+) kB", raise_by, real, flags=re.M)


def fake_cpu_tree(root: Path, cpus: int) -> None:
    """A /sys/devices/system/cpu with ``cpus`` online CPUs: what cAdvisor counts as the node's
    CPU capacity. Without topology files cAdvisor reports no topology, so the kubelet's CPU
    manager (policy none) pins no cpuset: the fake CPUs are never written to a cgroup."""
    root.mkdir(parents=True, exist_ok=True)
    for name in ("online", "possible", "present"):
        (root / name).write_text(f"0-{cpus - 1}\n")
    for cpu in range(cpus):
        (root / f"cpu{cpu}").mkdir(exist_ok=True)
        (root / f"cpu{cpu}" / "online").write_text("1\n")


def bridge_name(ip: str) -> str:
    """A bridge name unique in the namespace (every cluster's node IPs differ), <= 15 bytes."""
    third, fourth = ip.split(".")[2:]
    return f"nsim-{third}-{fourth}"


def node_labels(spec: RealNodeSpec) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(spec.labels.items()))


def dumps(config: dict[str, Any]) -> str:
    return json.dumps(config, indent=1)
