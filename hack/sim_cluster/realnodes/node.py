"""One real node: containerd, the fake GPU device plugin and a kubelet in a mount namespace of
their own, joined to the simulated cluster's control plane from inside its network namespace.

The node's mount namespace (``unshare -m --propagation private``) shows it its own
``/var/lib/kubelet`` (the device-plugin socket directory is fixed there), files holding the
values the kubelet wants for VM-wide sysctls (so it writes none), and its faked capacity
(``/proc/meminfo``, ``/sys/devices/system/cpu``, an empty ``/sys/devices/system/node``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
from pathlib import Path

from sim_cluster.controlplane.kubeconfig import kubeconfig, write_kubeconfig
from sim_cluster.controlplane.pki import Authority
from sim_cluster.realnodes import config
from sim_cluster.realnodes.config import RealNodeSpec

_CGROUP_ROOT = Path("/sys/fs/cgroup")


def _script(spec: RealNodeSpec, state: Path, bin_dir: Path, images: list[Path]) -> str:
    """The shell script run in the node's new mount namespace."""
    mounts = [f"mount --bind {state / 'sysctl' / key.replace('/', '.')} /proc/sys/{key}"
              for key in config.KERNEL_TUNABLES]  # fmt: skip
    mounts += [
        "mkdir -p /var/lib/kubelet",
        f"mount --bind {state / 'kubelet'} /var/lib/kubelet",
        f"mount --bind {state / 'meminfo'} /proc/meminfo",
        f"mount --bind {state / 'cpu'} /sys/devices/system/cpu",
        "mount -t tmpfs -o size=1m none /sys/devices/system/node",
    ]
    sock = config.socket_dir(state) / "containerd.sock"
    imports = "\n".join(
        f"ctr -a {sock} -n k8s.io images import --no-unpack {image} >>{state}/import.log 2>&1"
        for image in images
    )
    plugin = (
        f"{bin_dir / 'gpu-device-plugin'} -count {spec.gpus} >{state}/device-plugin.log 2>&1 &"
        if spec.gpus else ""
    )  # fmt: skip
    return f"""set -e
{chr(10).join(mounts)}
containerd --config {state / "containerd.toml"} >{state}/containerd.log 2>&1 &
for i in $(seq 100); do [ -S {sock} ] && break; sleep 0.1; done
{imports}
{plugin}
exec {bin_dir / "kubelet"} --config {state / "kubelet.json"} \\
  --kubeconfig {state / "kubelet.kubeconfig"} --hostname-override {spec.name} \\
  --node-ip {spec.ip} --node-labels {config.node_labels(spec)} --v=1 >{state}/kubelet.log 2>&1
"""


class RealNode:
    def __init__(self, spec: RealNodeSpec, workdir: Path, bin_dir: Path) -> None:
        self.spec, self.bin_dir = spec, bin_dir
        self.state = workdir / spec.name
        # unique on the machine: clusters in one namespace differ by node IP, test sessions
        # (each a namespace of its own) by the namespace
        netns = os.stat("/proc/self/ns/net").st_ino
        self.cgroup = f"/nemotron-sim/{netns}-{spec.ip}-{spec.name}"
        self.process: subprocess.Popen[bytes] | None = None
        self.pod_cidr: str | None = None

    def prepare(
        self, authority: Authority, api_url: str, ca_pem: bytes, ca_file: Path, images: list[Path]
    ) -> None:
        spec, state = self.spec, self.state
        for sub in ("kubelet", "cni", "pod-logs", "sysctl"):
            (state / sub).mkdir(parents=True, exist_ok=True)
        config.socket_dir(state).mkdir(mode=0o700, exist_ok=True)
        for key, value in config.KERNEL_TUNABLES.items():
            (state / "sysctl" / key.replace("/", ".")).write_text(value + "\n")
        (state / "meminfo").write_text(
            config.fake_meminfo(Path("/proc/meminfo").read_text(), spec.memory_gib)
        )
        config.fake_cpu_tree(state / "cpu", spec.cpus)
        (state / "resolv.conf").write_text("nameserver 127.0.0.1\n")  # no cluster DNS here
        (state / "containerd.toml").write_text(config.containerd_toml(state))
        user = authority.issue(f"node-{spec.name}", f"system:node:{spec.name}",
                               organizations=("system:nodes",), client=True)  # fmt: skip
        serving = authority.issue(f"node-{spec.name}-serving", f"system:node:{spec.name}",
                                  server=True, ips=(spec.ip,), dns=(spec.name,))  # fmt: skip
        os.link(serving.cert, state / "serving.crt")
        os.link(serving.key, state / "serving.key")
        write_kubeconfig(
            state / "kubelet.kubeconfig",
            kubeconfig(api_url, ca_pem, user=f"system:node:{spec.name}", cert=user.cert,
                       key=user.key),
        )  # fmt: skip
        (state / "kubelet.json").write_text(
            config.dumps(config.kubelet_config(spec, state, ca_file, self.cgroup))
        )
        for hierarchy in _CGROUP_ROOT.iterdir():
            if (hierarchy / "cgroup.procs").exists():
                _make_cgroup(hierarchy, self.cgroup)
        (state / "node.sh").write_text(_script(spec, state, self.bin_dir, images))

    def start(self) -> None:
        log = (self.state / "node.log").open("ab")
        self.process = subprocess.Popen(
            ["unshare", "-m", "--propagation", "private", "sh", str(self.state / "node.sh")],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip

    def set_pod_cidr(self, pod_cidr: str) -> None:
        """The node's bridge network, and its pod CIDR routed to it: in this namespace every
        10.x address is local, so the CIDR is thrown out of the local table."""
        conf = config.cni_conf(self.spec, pod_cidr, self.state)
        (self.state / "cni" / "10-nemotron-sim.conflist").write_text(config.dumps(conf))
        _ip("route", "replace", "throw", pod_cidr, "table", "local")
        self.pod_cidr = pod_cidr

    def log_tail(self, lines: int = 15) -> str:
        """The end of the node's logs, for an error message."""
        parts = []
        for name in ("node.log", "containerd.log", "kubelet.log"):
            path = self.state / name
            if path.exists():
                tail = path.read_text(errors="replace").splitlines()[-lines:]
                parts.append(f"--- {name}:\n" + "\n".join(tail))
        return "\n".join(parts)

    def exited(self) -> int | None:
        return None if self.process is None else self.process.poll()

    async def stop(self) -> None:
        """The kubelet, then every container of the node (its cgroups), the shims, containerd."""
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            await asyncio.to_thread(_wait, self.process, 10.0)
        await asyncio.to_thread(self._kill_leftovers)
        shutil.rmtree(config.socket_dir(self.state), ignore_errors=True)
        self.process = None
        await asyncio.to_thread(self._unplug)

    def _unplug(self) -> None:
        """Give the namespace back as it was: the pod CIDR local again (a later cluster with the
        same index has the same pod CIDR, and its pods' addresses must be bindable), the bridge
        gone, the node's IP off ``lo``."""
        if self.pod_cidr is not None:
            _ip_quiet("route", "del", "throw", self.pod_cidr, "table", "local")
            self.pod_cidr = None
        _ip_quiet("link", "del", config.bridge_name(self.spec.ip))
        _ip_quiet("addr", "del", f"{self.spec.ip}/32", "dev", "lo")

    def _kill_leftovers(self) -> None:
        """The node's containers (by its cgroups), then its shims (by containerd's socket)."""
        for hierarchy in (_CGROUP_ROOT / "pids", _CGROUP_ROOT / "memory"):
            _kill_cgroup(hierarchy / self.cgroup.lstrip("/"))
        for hierarchy in _CGROUP_ROOT.iterdir():  # the emptied cgroups, deepest first
            top = hierarchy / self.cgroup.lstrip("/")
            for directory in [*sorted(top.rglob("*/"), key=lambda p: -len(p.parts)), top]:
                with contextlib.suppress(OSError):
                    directory.rmdir()
        sock = str(config.socket_dir(self.state) / "containerd.sock").encode()
        for proc in Path("/proc").iterdir():
            if proc.name.isdigit():
                with contextlib.suppress(OSError):
                    if sock in (proc / "cmdline").read_bytes():
                        os.kill(int(proc.name), signal.SIGKILL)


def prepare_network(specs: list[RealNodeSpec]) -> None:
    """In the cluster's network namespace (never the machine's): forwarding between the nodes'
    bridges, each node's IP on a link (the kubelet checks), and a rule that sends what the
    local table throws (the pod CIDRs) to the main table, where the bridges' routes are."""
    Path("/proc/sys/net/ipv4/ip_forward").write_text("1")
    for spec in specs:
        _ip("addr", "replace", f"{spec.ip}/32", "dev", "lo")
    if "lookup main" not in _ip("rule", "show", "pref", "32000"):
        _ip("rule", "add", "pref", "32000", "lookup", "main")


def _wait(process: subprocess.Popen[bytes], seconds: float) -> None:
    try:
        process.wait(seconds)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def _make_cgroup(hierarchy: Path, path: str) -> None:
    parent = hierarchy
    for part in path.strip("/").split("/"):
        child = parent / part
        child.mkdir(exist_ok=True)
        for name in ("cpuset.cpus", "cpuset.mems"):  # a new cpuset is empty until filled
            if (child / name).exists() and not (child / name).read_text().strip():
                (child / name).write_text((parent / name).read_text())
        parent = child


def _kill_cgroup(directory: Path) -> None:
    if not directory.is_dir():
        return
    for procs in directory.rglob("cgroup.procs"):
        for pid in procs.read_text().split():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)


def _ip_quiet(*args: str) -> None:
    """``ip ARGS`` for something that may already be gone."""
    subprocess.run(["ip", *args], capture_output=True, check=False)


def _ip(*args: str) -> str:
    result = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {result.stderr.strip()}")
    return result.stdout
