"""``python -m sim_cluster`` with ``--image``: its pods' processes (and theirs) die with it."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from tests.kubectl import run_kubectl

# Writes its pid and a grandchild's, then sleeps: both must be gone once the cluster stops.
SLEEPER = (
    "import os, subprocess, sys, time; child = subprocess.Popen(['sleep', '600']); "
    "open(sys.argv[1], 'w').write(f'{os.getpid()} {child.pid}'); time.sleep(600)"
)
DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: sleeper}
spec:
  selector: {matchLabels: {app: sleeper}}
  template:
    metadata: {labels: {app: sleeper}}
    spec:
      containers: [{name: s, image: "sim.local/sleeper@sha256:00", args: ["%s"]}]
"""


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat").read_text() if Path(f"/proc/{pid}/stat").exists() else ""
    return " Z " not in stat  # a zombie has exited


def wait_for(check: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def test_stopping_the_cluster_stops_pod_processes_and_their_children(tmp_path: Path) -> None:
    kubeconfig, pids = tmp_path / "kubeconfig", tmp_path / "pids"
    program = f"{sys.executable} -c {shlex.quote(SLEEPER)}"
    cluster = subprocess.Popen(
        [sys.executable, "-m", "sim_cluster", "--kubeconfig", str(kubeconfig),
         "--system-nodes", "1", "--image", f"sim.local/sleeper={program}"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        assert cluster.stdout is not None
        for line in cluster.stdout:
            if "SIMULATED cluster ready" in line:
                break
        env = {**os.environ, "KUBECONFIG": str(kubeconfig), "KUBECACHEDIR": str(tmp_path / "c")}
        run_kubectl(env, "apply", "-f", "-", input=DEPLOYMENT % pids)
        wait_for(lambda: pids.exists() and " " in pids.read_text(), 20, "the pod's process")
        parent, child = (int(p) for p in pids.read_text().split())
        assert alive(parent)
        assert alive(child)
        cluster.send_signal(signal.SIGTERM)
        assert cluster.wait(20) == 0
        wait_for(lambda: not alive(parent) and not alive(child), 5, "the processes to die")
    finally:
        if cluster.poll() is None:
            cluster.kill()
            cluster.wait(5)
