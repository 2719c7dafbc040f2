"""The network namespace the simulated cluster lives in (nemotron_sim.netns)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

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
        [sys.executable, "-m", "nemotron_sim.netns", "--", sys.executable, "-c", PROBE],
        capture_output=True, text=True, env=env, timeout=30, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    interfaces, connected = result.stdout.splitlines()
    assert interfaces == "['lo']"  # nothing it serves is reachable from outside, nor the reverse
    assert connected == "connected 1"


def test_the_test_session_itself_runs_inside_one() -> None:
    assert os.environ.get("NEMOTRON_SIM_NETNS") == "1"
    assert [name for _, name in socket.if_nameindex()] == ["lo"]


def test_joining_a_running_namespace() -> None:
    holder = subprocess.Popen(
        [sys.executable, "-m", "nemotron_sim.netns", "--", "sleep", "30"],
        env={k: v for k, v in os.environ.items() if k != "NEMOTRON_SIM_NETNS"},
    )
    try:
        probe = "import os; print(os.readlink('/proc/self/ns/net'))"
        for _ in range(50):  # until the holder has made its namespace and exec'd sleep
            if os.readlink(f"/proc/{holder.pid}/ns/net") != os.readlink("/proc/self/ns/net"):
                break
            subprocess.run(["sleep", "0.05"], check=True)
        joined = subprocess.run(
            [sys.executable, "-m", "nemotron_sim.netns", "--join", str(holder.pid), "--",
             sys.executable, "-c", probe],
            capture_output=True, text=True, timeout=30, check=False,
        )  # fmt: skip
        assert joined.returncode == 0, joined.stderr
        assert joined.stdout.strip() == os.readlink(f"/proc/{holder.pid}/ns/net")
        assert joined.stdout.strip() != os.readlink("/proc/self/ns/net")
    finally:
        holder.kill()
        holder.wait(5)
