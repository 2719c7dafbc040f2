"""Run a program as a container runtime would: a network namespace and volumes of its own.

``python -m sim_cluster.container_root PROGRAM [ARGS...]`` (the kubelet puts it in front
of a real engine's argv, see sim_cluster/real_engine.py):

- **network**: it listens on ``podIP:port`` for each of the container's ports in the cluster's
  namespace (``NEMOTRON_SIM_POD_IP``, ``NEMOTRON_SIM_PORTS``), then moves into a network namespace
  of its own — ``lo`` only, the pod IP local there — where PROGRAM runs and may bind every
  address as in a real pod (vLLM does: the rendered command has no ``--host``), and forwards
  each connection to the same port inside. Pods of a simulated cluster otherwise share one
  namespace, where two servers on one port, or a server and the Service proxy's ``ClusterIP:port``,
  collide. Nothing in the pod's namespace can reach anything but itself.
- **files**: in a mount namespace of its own it builds a root — a tmpfs holding every top-level
  entry of this machine's ``/`` bound recursively (the "image" is this machine), then each volume
  bound at its ``mountPath`` (``NEMOTRON_SIM_MOUNTS``, nemotron_sim/kubelet/podfiles.py) — and
  PROGRAM runs changed into it: ``vllm serve /models/...`` finds the checkpoint the claim holds.

PROGRAM runs as a child with the simulator's ``NEMOTRON_SIM_*`` variables removed; this process
forwards until it exits and exits with its code (``128 + signal`` if it was killed). The kubelet
signals the whole process group, so PROGRAM gets SIGTERM directly. Needs root (or a user
namespace's root, as in the simulated cluster's own namespace); ``readOnly`` mounts are bound
writable; the container's ``securityContext`` (user, capabilities) is not applied.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import os
import signal
import socket
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from sim_cluster import netns

MOUNTS_ENV = "NEMOTRON_SIM_MOUNTS"
PORTS_ENV = "NEMOTRON_SIM_PORTS"
POD_IP_ENV = "NEMOTRON_SIM_POD_IP"
_SIM_PREFIX = "NEMOTRON_SIM_"
_CLONE_NEWNS, _CLONE_NEWNET = 0x00020000, 0x40000000
_MS_BIND, _MS_REC, _MS_PRIVATE = 4096, 16384, 1 << 18
_CHUNK = 1 << 16
_DRAIN_SECONDS = 1.0  # in-flight connections after the container exited


class ContainerRootError(RuntimeError):
    pass


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _mount(source: str | None, target: str, fstype: str | None, flags: int) -> None:
    enc = [None if s is None else s.encode() for s in (source, target, fstype)]
    if _libc().mount(enc[0], enc[1], enc[2], ctypes.c_ulong(flags), None) != 0:
        errno = ctypes.get_errno()
        raise ContainerRootError(f"mount {source} on {target}: {os.strerror(errno)}")


def unshare(flags: int) -> None:
    if _libc().unshare(flags) != 0:
        errno = ctypes.get_errno()
        raise ContainerRootError(f"unshare({flags:#x}): {os.strerror(errno)} (needs root)")


def build_root(mounts: Mapping[str, str], new_root: Path) -> None:
    """In this process's (already unshared) mount namespace: the root in ``new_root``."""
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE)
    new_root.mkdir(parents=True, exist_ok=True)
    _mount("tmpfs", str(new_root), "tmpfs", 0)
    volumes = {"/" + path.strip("/"): source for path, source in mounts.items()}
    for entry in sorted(os.listdir("/")):
        host, inside = "/" + entry, new_root / entry
        if os.path.islink(host):
            os.symlink(os.readlink(host), inside)
        elif host in volumes:
            inside.mkdir()
        elif os.path.isdir(host):
            inside.mkdir()
            _mount(host, str(inside), None, _MS_BIND | _MS_REC)
    for target in sorted(volumes, key=len):  # parents before children
        source, inside = volumes[target], new_root / target.lstrip("/")
        if os.path.isdir(source):
            inside.mkdir(parents=True, exist_ok=True)
        else:
            inside.parent.mkdir(parents=True, exist_ok=True)
            inside.touch(exist_ok=True)
        _mount(source, str(inside), None, _MS_BIND | _MS_REC)


def listen(pod_ip: str, ports: Sequence[int]) -> list[socket.socket]:
    """Listening sockets on the pod's ports, in the namespace this process is in now."""
    out = []
    for port in ports:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((pod_ip, port))
        sock.listen(128)
        out.append(sock)
    return out


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(_CHUNK):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(OSError, RuntimeError):
            writer.close()


async def forward(listeners: Sequence[socket.socket], target: str, child: int) -> int:
    """Accept on ``listeners`` (outside) and connect to ``target:port`` (inside) until ``child``
    exits; its wait status. What the child sent before it exited still reaches its client: the
    connections in flight are given ``_DRAIN_SECONDS`` to finish (the child's end of each is
    closed, so they end at once unless a client is slow to read)."""
    in_flight: set[asyncio.Future[tuple[None, None]]] = set()

    async def serve(sock: socket.socket) -> asyncio.Server:
        port = sock.getsockname()[1]

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                inner_reader, inner_writer = await asyncio.open_connection(target, port)
            except OSError:
                writer.close()  # not listening yet: the client sees the connection drop
                return
            pipes = asyncio.gather(_pipe(reader, inner_writer), _pipe(inner_reader, writer))
            in_flight.add(pipes)
            pipes.add_done_callback(in_flight.discard)
            await pipes

        return await asyncio.start_server(handle, sock=sock)

    servers = [await serve(sock) for sock in listeners]
    loop = asyncio.get_running_loop()
    _, status = await loop.run_in_executor(None, os.waitpid, child, 0)
    for server in servers:
        server.close()
    if in_flight:
        await asyncio.wait(in_flight, timeout=_DRAIN_SECONDS)
    return status


def main(argv: Sequence[str] | None = None) -> int:
    program = list(sys.argv[1:] if argv is None else argv)
    if not program:
        sys.stderr.write("usage: python -m sim_cluster.container_root PROGRAM ...\n")
        return 2
    mounts = json.loads(os.environ.get(MOUNTS_ENV) or "{}")
    ports = [int(p) for p in json.loads(os.environ.get(PORTS_ENV) or "[]")]
    pod_ip = os.environ.get(POD_IP_ENV) or ""
    for name in [n for n in os.environ if n.startswith(_SIM_PREFIX)]:
        del os.environ[name]
    try:
        listeners = listen(pod_ip, ports) if pod_ip else []
        unshare(_CLONE_NEWNS | _CLONE_NEWNET)
        netns.set_loopback_up()
        if pod_ip:
            netns.add_local_route(pod_ip, 32)
        new_root = Path.cwd() / "rootfs"
        build_root(mounts, new_root)
    except (ContainerRootError, netns.NamespaceError, OSError) as error:
        sys.stderr.write(f"container_root: {error}\n")
        return 128
    child = os.fork()
    if child == 0:  # the container's process
        for sock in listeners:
            sock.close()
        os.chdir(new_root)
        os.chroot(".")
        os.chdir("/")
        try:
            os.execvp(program[0], program)  # noqa: S606 (a container's command, as given)
        except OSError as error:
            sys.stderr.write(f'exec: "{program[0]}": {error.strerror or error}\n')
            os._exit(128)
    # The kubelet signals the whole group: the child ends; this process waits for it.
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, signal.SIG_IGN)
    status = asyncio.run(forward(listeners, pod_ip or "127.0.0.1", child))
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main())
