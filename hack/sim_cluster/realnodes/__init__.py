"""Real nodes in the simulated cluster: kubelet v1.37 (built from the control plane's Go module by
``hack/build-nodes.sh``) with Debian's containerd, runc and CNI plugins, joined to the real
control plane inside the cluster's network namespace. Pods on them are real containers from
images ``hack/build-images.sh`` built without Docker (imported into each node's containerd);
GPUs stay simulated (a fake device plugin advertises ``nvidia.com/gpu``), and so do the node's
CPU and memory capacity (faked in its mount namespace). :func:`unavailable` says why a machine
cannot run them (the simulated kubelet then runs those nodes)."""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from nemotron_operator.kube.errors import ApiError
from nemotron_operator.kube.transport import Transport
from sim_cluster.controlplane import ControlPlane
from sim_cluster.realnodes.config import RealNodeSpec
from sim_cluster.realnodes.node import RealNode, prepare_network

__all__ = ["RealNodeSpec", "RealNodes", "bin_dir", "unavailable"]
_ROOT = Path(__file__).resolve().parents[3]
RECIPE = _ROOT / "hack" / "nodes"
IMAGES = _ROOT / ".cache" / "images"
TOOLS = ("containerd", "runc", "ctr", "unshare", "ip", "mount")
_READY_SECONDS = 180.0


def bin_dir() -> Path:
    """Where ``hack/build-nodes.sh`` puts the kubelet, the device plugin and pause (the same key:
    the Kubernetes version and a hash of the recipe)."""
    text = (RECIPE / "go.mod").read_text()
    version = next(line.split()[1] for line in text.splitlines()
                   if line.strip().startswith("k8s.io/kubernetes v"))  # fmt: skip
    digest = hashlib.sha256()
    for path in [RECIPE / "go.mod", RECIPE / "go.sum", *sorted(RECIPE.glob("*/*.go"))]:
        digest.update(path.read_bytes())
    return _ROOT / ".cache" / "nodes" / f"kubelet-{version}_{digest.hexdigest()[:12]}" / "bin"


IMAGE_ARCHIVES = ("pause", "operator", "vllm-stub")  # what hack/build-images.py writes


def images() -> list[Path]:
    return [IMAGES / f"{name}.tar" for name in IMAGE_ARCHIVES if (IMAGES / f"{name}.tar").exists()]


def unavailable() -> str | None:
    """Why real nodes cannot run here (None: they can)."""
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    missing += [] if Path("/usr/lib/cni/bridge").exists() else ["/usr/lib/cni/bridge"]
    built = bin_dir()
    reasons = [
        (os.geteuid() != 0, "real nodes need root (containerd, mounts, cgroups); run as root"),
        (bool(missing), f"missing {', '.join(missing)}: install them with "
                        "hack/build-nodes.sh --install-packages"),
        (not all(os.access(built / name, os.X_OK) for name in ("kubelet", "gpu-device-plugin")),
         f"no kubelet in {built}: build it with hack/build-nodes.sh"),
        (not (IMAGES / "pause.tar").exists(),
         f"no images in {IMAGES}: build them with hack/build-images.sh"),
        (not os.access("/sys/fs/cgroup/memory", os.W_OK),
         "no writable cgroup v1 memory hierarchy at /sys/fs/cgroup/memory"),
    ]  # fmt: skip
    for failed, reason in reasons:
        if failed:
            return reason
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        return f"cannot make a mount namespace (CAP_SYS_ADMIN): {probe.stderr.strip()}"
    return None


class RealNodes:
    def __init__(self, plane: ControlPlane, api: Transport, specs: list[RealNodeSpec]) -> None:
        self.plane, self.api = plane, api
        self.nodes = [RealNode(s, plane.layout.root / "real-nodes", bin_dir()) for s in specs]

    async def start(self) -> None:
        plane = self.plane
        assert plane.authority is not None
        await self._allow_apiserver_to_kubelets()
        await asyncio.to_thread(prepare_network, [node.spec for node in self.nodes])
        ca_file = plane.layout.cert("ca")
        for node in self.nodes:
            node.prepare(plane.authority, plane.api_url, plane.ca_pem, ca_file, images())
            node.start()
        async with asyncio.timeout(_READY_SECONDS):
            await asyncio.gather(*(self._until_ready(node) for node in self.nodes))

    async def stop(self) -> None:
        await asyncio.gather(*(node.stop() for node in self.nodes))

    async def _until_ready(self, node: RealNode) -> None:
        cidr_set = False
        while True:
            code = node.exited()
            if code is not None:
                raise RuntimeError(
                    f"real node {node.spec.name} exited ({code}):\n{node.log_tail()}"
                )
            obj = await self._node(node.spec.name)
            cidr = ((obj or {}).get("spec") or {}).get("podCIDR")
            if cidr and not cidr_set:
                node.set_pod_cidr(str(cidr))
                cidr_set = True
            conditions = ((obj or {}).get("status") or {}).get("conditions") or []
            ready = any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)
            gpus = ((obj or {}).get("status") or {}).get("allocatable", {}).get("nvidia.com/gpu")
            if cidr_set and ready and (not node.spec.gpus or gpus == str(node.spec.gpus)):
                return
            await asyncio.sleep(0.5)

    async def _node(self, name: str) -> dict[str, Any] | None:
        try:
            node: dict[str, Any] = await self.api.request("GET", f"/api/v1/nodes/{name}")
        except ApiError as error:
            if error.status == 404:
                return None
            raise
        return node

    async def _allow_apiserver_to_kubelets(self) -> None:
        """What kubeadm creates: kube-apiserver's kubelet client may use the kubelet API
        (``logs``, ``exec``, ``port-forward``)."""
        body = {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "kube-apiserver-kubelet-api-admin"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "system:kubelet-api-admin"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                          "name": "kube-apiserver-kubelet-client"}],
        }  # fmt: skip
        try:
            await self.api.request(
                "POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", body=body
            )
        except ApiError as error:
            if error.status != 409:
                raise
