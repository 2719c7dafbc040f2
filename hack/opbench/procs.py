"""The simulated cluster and the operator as child processes; CPU and memory from /proc.

The cluster is ``python -m sim_cluster``: one Python process (the simulator: GPU nodes,
kubelets, stand-in vLLMs, service proxy, the fault proxy in front of kube-apiserver) and, as its
children, the real control plane (etcd, kube-apiserver, kube-controller-manager,
kube-scheduler). Their CPU is read apart: the control plane is Go on its own threads, the
simulator is one interpreter.
"""

from __future__ import annotations

import base64
import os
import signal
import ssl
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import yaml

_CLK_TCK = os.sysconf("SC_CLK_TCK")
_START_SECONDS = 180.0  # the control plane starts in ~4 s, 150 nodes register in ~11 s
_STOP_SECONDS = 30.0
# argv[0]'s base name of the control plane's processes (``comm`` cuts it to 15 characters).
CONTROL_PLANE = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of ``pid`` (fields 14 and 15 of /proc/<pid>/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _CLK_TCK


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def children(parent: int) -> dict[int, str]:
    """{pid: argv[0]'s base name} of the processes whose parent is ``parent``."""
    out: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            if ppid != parent:
                continue
            argv0 = (entry / "cmdline").read_bytes().split(b"\0", 1)[0].decode()
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
        out[int(entry.name)] = os.path.basename(argv0)
    return out


@dataclass(frozen=True)
class Endpoint:
    """Where a kubeconfig points, and its credentials (a bearer token and the cluster CA)."""

    url: str
    token: str
    ca_pem: bytes

    @classmethod
    def from_kubeconfig(cls, path: Path) -> Endpoint:
        config: dict[str, Any] = yaml.safe_load(path.read_text())
        cluster = config["clusters"][0]["cluster"]
        user = config["users"][0]["user"]
        ca = base64.b64decode(cluster["certificate-authority-data"])
        return cls(cluster["server"].rstrip("/"), user["token"], ca)

    def ssl_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cadata=self.ca_pem.decode())


class Child:
    """A child process whose output is kept (the last lines) for the report and for errors."""

    def __init__(self, argv: list[str], env: dict[str, str], name: str) -> None:
        self.name = name
        self.argv = argv
        self.started = time.perf_counter()
        self.process = subprocess.Popen(
            argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        self.lines: deque[str] = deque(maxlen=200)
        self.line_count = 0
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int:
        return self.process.pid

    def _read(self) -> None:
        stream: IO[str] | None = self.process.stdout
        assert stream is not None
        for line in stream:
            self.lines.append(line.rstrip("\n"))
            self.line_count += 1

    def alive(self) -> bool:
        return self.process.poll() is None

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.pid)

    def rss_mib(self) -> float:
        return rss_mib(self.pid)

    def tail(self, lines: int = 20) -> str:
        return "\n".join(list(self.lines)[-lines:])

    def stop(self, seconds: float = _STOP_SECONDS) -> int | None:
        """SIGTERM, then SIGKILL after a while; the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=seconds)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self._reader.join(timeout=5)
        return self.process.returncode


class SimCluster(Child):
    """``python -m sim_cluster`` with GPU nodes (run from inside a network namespace: the
    cluster stays in this process's one); its kubeconfigs once ready.

    ``cpu_seconds``/``rss_mib`` are the simulator process's own; ``control_plane_*`` are its
    four control-plane children's, summed (``control_plane_cpu`` gives each).
    """

    READY = "SIMULATED cluster ready"

    def __init__(
        self,
        nodes: str,
        workdir: Path,
        env: dict[str, str],
        *,
        events: bool = False,
        controller_qps: int = 20,
        profiling: bool = False,
    ) -> None:
        self.kubeconfig = workdir / "kubeconfig"
        # Written beside the admin's: the same credentials through the fault proxy.
        self.proxy_kubeconfig = workdir / "kubeconfig-via-proxy"
        super().__init__(
            [sys.executable, "-m", "sim_cluster", "--nodes", nodes,
             "--kubeconfig", str(self.kubeconfig), *([] if events else ["--no-events"]),
             "--controller-qps", str(controller_qps),
             *(["--apiserver-profiling"] if profiling else [])],
            env, "simulated cluster",
        )  # fmt: skip
        self.api: Endpoint | None = None
        self.proxy: Endpoint | None = None
        self._control_plane: dict[str, int] = {}

    def wait_ready(self) -> None:
        deadline = time.monotonic() + _START_SECONDS
        while time.monotonic() < deadline and self.alive():
            if any(self.READY in line for line in list(self.lines)):
                self.api = Endpoint.from_kubeconfig(self.kubeconfig)
                self.proxy = Endpoint.from_kubeconfig(self.proxy_kubeconfig)
                self._find_control_plane()
                return
            time.sleep(0.05)
        raise RuntimeError(f"the simulated cluster did not start:\n{self.tail()}")

    def _find_control_plane(self) -> None:
        found = {name: pid for pid, name in children(self.pid).items() if name in CONTROL_PLANE}
        missing = set(CONTROL_PLANE) - set(found)
        if missing:
            raise RuntimeError(f"control-plane processes not found: {sorted(missing)}")
        self._control_plane = found

    def _each(self, read: Any) -> dict[str, float]:
        try:
            return {name: read(pid) for name, pid in self._control_plane.items()}
        except OSError:  # a component was restarted: find the new processes
            self._find_control_plane()
            return {name: read(pid) for name, pid in self._control_plane.items()}

    def control_plane_pids(self) -> dict[str, int]:
        return dict(self._control_plane)

    def control_plane_cpu(self) -> dict[str, float]:
        """CPU seconds of each control-plane process."""
        return self._each(cpu_seconds)

    def control_plane_cpu_seconds(self) -> float:
        return sum(self.control_plane_cpu().values())

    def control_plane_rss(self) -> dict[str, float]:
        """Resident MiB of each control-plane process."""
        return self._each(rss_mib)

    def control_plane_rss_mib(self) -> float:
        return sum(self.control_plane_rss().values())

    def stop(self, seconds: float = 60.0) -> int | None:
        return super().stop(seconds)  # it stops its pods, then the control plane


class CpuMeter:
    """CPU seconds of the simulator, the control plane and this process since ``start``."""

    def __init__(self, sim: SimCluster) -> None:
        self.sim = sim
        self.simulator = sim.cpu_seconds()
        self.control_plane = sim.control_plane_cpu_seconds()
        self.own = time.process_time()

    def spent(self) -> dict[str, float]:
        simulator = self.sim.cpu_seconds() - self.simulator
        control_plane = self.sim.control_plane_cpu_seconds() - self.control_plane
        return {
            "cluster": round(simulator + control_plane, 2),
            "control_plane": round(control_plane, 2),
            "simulator": round(simulator, 2),
            "bench": round(time.process_time() - self.own, 2),
        }
