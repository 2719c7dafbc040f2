"""The network namespace the simulated cluster lives in (sim_cluster.netns)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

PROBE = """
import os, socket
print(sorted(name for _, name in socket.if_nameindex()))
with socket.socket() as s:
    s.bind(('10.244.3.7', 0))
    s.listen()
    with socket.create_connection(s.getsockname(), timeout=2):
        print('connected', os.environ.get('NEMOTRON_SIM_NETNS'))
"""


def test_a_new_namespace_has_only_loopback_and_the_local_range() -> None:
    env = {k: v for k, v in os.environ.items() if k != "NEMOTRON_SIM_NETNS"}
    result = subprocess.run(
        [sys.executable, "-m", "sim_cluster.netns", "--", sys.executable, "-c", PROBE],
        capture_output=True, text=True, env=env, timeout=30, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    interfaces, connected = result.stdout.splitlines()
    assert interfaces == "['lo']"  # nothing it serves is reachable from outside, nor the reverse
    assert connected == "connected 1"


def test_the_test_session_itself_runs_inside_one() -> None:
    """None of the machine's interfaces (PID 1's) but loopback here. The
    session's own real nodes add bridges and veth ends while their clusters run (the pool keeps
    clusters between modules), so the list is compared with the machine's, not with ``['lo']``."""
    assert os.environ.get("NEMOTRON_SIM_NETNS") == "1"
    machine = {
        line.split(":")[0].strip() for line in Path("/proc/1/net/dev").read_text().splitlines()[2:]
    }
    here = {name for _, name in socket.if_nameindex()}
    assert "lo" in here
    assert here & machine == {"lo"}, here & machine


def test_joining_a_running_namespace() -> None:
    holder = subprocess.Popen(
        [sys.executable, "-m", "sim_cluster.netns", "--", "sleep", "30"],
        env={k: v for k, v in os.environ.items() if k != "NEMOTRON_SIM_NETNS"},
    )
    try:
        probe = "import os; print(os.readlink('/proc/self/ns/net'))"
        for _ in range(50):  # until the holder has made its namespace and exec'd sleep
            if os.readlink(f"/proc/{holder.pid}/ns/net") != os.readlink("/proc/self/ns/net"):
                break
            subprocess.run(["sleep", "0.05"], check=True)
        joined = subprocess.run(
            [sys.executable, "-m", "sim_cluster.netns", "--join", str(holder.pid), "--",
             sys.executable, "-c", probe],
            capture_output=True, text=True, timeout=30, check=False,
        )  # fmt: skip
        assert joined.returncode == 0, joined.stderr
        assert joined.stdout.strip() == os.readlink(f"/proc/{holder.pid}/ns/net")
        assert joined.stdout.strip() != os.readlink("/proc/self/ns/net")
    finally:
        holder.kill()
        holder.wait(5)


# One probe test per module, so that --dist loadfile gives each worker one of them.
WORKER_PROBE = """
import os, socket

def test_probe():
    with socket.socket() as s:
        s.bind(("10.244.3.7", 0))  # the local range works in this worker's namespace
    with open(os.environ["PROBE_OUT"], "a") as out:
        worker = os.environ["PYTEST_XDIST_WORKER"]
        out.write(worker + " " + os.readlink("/proc/self/ns/net") + "\\n")
"""


def test_each_parallel_worker_runs_in_a_namespace_of_its_own(tmp_path: Path) -> None:
    """hack/test.sh runs two pytest-xdist workers; two workers' clusters have the same addresses
    and ports (each session numbers its clusters from one), so each worker needs its own
    namespace, not the one it inherits from the controlling process."""
    for name in ("test_probe_a.py", "test_probe_b.py"):
        (tmp_path / name).write_text(WORKER_PROBE)
    out = tmp_path / "namespaces.txt"
    root = Path(__file__).resolve().parents[3]
    env = {**os.environ, "PROBE_OUT": str(out), "PYTHONPATH": f"{root}:{root / 'operator'}"}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadfile", "-p", "tests.conftest",
         "-p", "no:cacheprovider", "--rootdir", str(tmp_path), "-c", "/dev/null", str(tmp_path)],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    seen = dict(line.split() for line in out.read_text().splitlines())
    assert sorted(seen) == ["gw0", "gw1"], seen
    assert seen["gw0"] != seen["gw1"]
    assert os.readlink("/proc/self/ns/net") not in seen.values()
