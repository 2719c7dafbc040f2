"""The container root a real engine's container runs in (sim_cluster.container_root): its mounts,
its network namespace reached at the pod IP, and what it sent delivered after it exited. Real
processes and namespaces (root, as CI runs)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from sim_cluster.container_root import forward


@pytest.mark.skipif(os.geteuid() != 0, reason="a mount namespace needs root (CI runs as root)")
def test_volumes_appear_at_their_mount_paths_and_nothing_leaks_out(tmp_path: Path) -> None:
    volume, scratch = tmp_path / "claim", tmp_path / "scratch"
    volume.mkdir()
    scratch.mkdir()
    (volume / "config.json").write_text("{}")
    mounts = {"/models": str(volume), "/tmp": str(scratch)}
    env = {
        "PATH": os.environ["PATH"],
        "NEMOTRON_SIM_MOUNTS": json.dumps(mounts),
        "NEMOTRON_SIM_POD_IP": "10.1.0.2",
    }
    script = (
        "import os; print(sorted(os.listdir('/models')), os.listdir('/tmp'), "
        "sorted(k for k in os.environ if k.startswith('NEMOTRON_SIM'))); "
        "open('/tmp/written', 'w').write('x')"
    )
    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "sim_cluster.container_root", sys.executable, "-c",
         script],
        env=env, cwd=work, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['config.json'] [] []"
    assert (scratch / "written").read_text() == "x"  # /tmp was the emptyDir
    assert not Path("/models").exists()  # the mount point exists only inside


@pytest.mark.skipif(os.geteuid() != 0, reason="a network namespace needs root (CI runs as root)")
def test_the_container_binds_every_address_in_its_own_namespace_reached_at_the_pod_ip(
    tmp_path: Path,
) -> None:
    """Two "pods" both serve on every address of port 18777 (as vLLM without --host does);
    each is reached at its own pod IP through the forwarder, and exits with its own code."""
    server = (
        "import socket, sys; s = socket.socket(); s.bind(('0.0.0.0', 18777)); s.listen(); "
        "c, _ = s.accept(); c.sendall(sys.argv[1].encode()); c.close(); sys.exit(3)"
    )
    pods = []
    for name, ip in (("a", "10.1.0.7"), ("b", "10.1.0.8")):
        work = tmp_path / name
        work.mkdir()
        env = {
            "PATH": os.environ["PATH"],
            "NEMOTRON_SIM_POD_IP": ip,
            "NEMOTRON_SIM_PORTS": "[18777]",
            "NEMOTRON_SIM_MOUNTS": "{}",
        }
        argv = [sys.executable, "-m", "sim_cluster.container_root",
                sys.executable, "-c", server, name]  # fmt: skip
        pods.append((ip, subprocess.Popen(argv, env=env, cwd=work, stderr=subprocess.PIPE)))
    try:
        for (ip, _), name in zip(pods, "ab", strict=True):
            answer = b""
            for _ in range(200):
                try:
                    with socket.create_connection((ip, 18777), timeout=5) as conn:
                        answer = conn.recv(16)
                except OSError:
                    answer = b""
                if answer:
                    break
                time.sleep(0.05)
            assert answer == name.encode()
        for _, process in pods:
            assert process.wait(timeout=30) == 3, process.stderr
    finally:
        for _, process in pods:
            process.kill()


def test_what_the_container_sent_reaches_its_client_after_it_exited() -> None:
    """The forwarder does not end with the container: a connection in flight when the child
    exits still delivers what the inside sent (it was cut off, and the client read nothing)."""
    outside, inside = socket.socket(), socket.socket()
    outside.bind(("127.0.0.2", 0))
    port = outside.getsockname()[1]
    inside.bind(("127.0.0.3", port))
    for sock in (outside, inside):
        sock.listen()

    def late_server() -> None:  # the inside answers after the child has exited
        conn, _ = inside.accept()
        time.sleep(0.6)
        conn.sendall(b"late")
        conn.close()

    threading.Thread(target=late_server, daemon=True).start()
    child = os.fork()
    if child == 0:  # the container's process: gone after 0.2 s
        time.sleep(0.2)
        os._exit(0)
    statuses: list[int] = []
    forwarder = threading.Thread(
        target=lambda: statuses.append(asyncio.run(forward([outside], "127.0.0.3", child)))
    )
    forwarder.start()
    received = b""
    with socket.create_connection(("127.0.0.2", port), timeout=5) as conn:
        while chunk := conn.recv(16):
            received += chunk
    forwarder.join(timeout=10)
    inside.close()
    assert received == b"late"
    assert statuses == [0]
