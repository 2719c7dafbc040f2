"""A network namespace of the simulated cluster's own, where every 10.x.y.z address is local.

The control plane, the simulated nodes and pods, and everything that talks to them (tests,
kubectl, helm, the demo) run inside a network namespace that this module creates: it holds only
``lo``, so nothing served in it is reachable from outside and nothing in it can reach out. A
``local`` route for ``10.0.0.0/8`` on ``lo`` (what ``ip route add local 10.0.0.0/8 dev lo``
does, sent here through netlink) makes every address of that range local, so nodes, pods and
Services get private addresses as on a real cluster — loopback addresses would not do:
EndpointSlice validation and the API server's proxy refuse them.

As root the namespace is a plain ``unshare(CLONE_NEWNET)``; otherwise a user namespace comes
with it (root inside it only). Network namespaces belong to threads: :func:`enter` must run
before the process starts threads, and everything started afterwards (threads, child
processes) is inside.

``python -m sim_cluster.netns [--join PID] -- COMMAND...`` runs a command in a new namespace, or
in the namespace of process PID (a running simulated cluster: ``hack/sim-exec.sh``).
"""

from __future__ import annotations

import argparse
import ctypes
import fcntl
import os
import socket
import struct
import sys
from collections.abc import Sequence
from pathlib import Path

# Set in the environment of everything started inside a namespace this module made.
MARKER_ENV = "NEMOTRON_SIM_NETNS"
LOCAL_RANGE = ("10.0.0.0", 8)
PROBE_ADDRESS = "10.255.255.254"

_CLONE_NEWNET = 0x40000000
_CLONE_NEWUSER = 0x10000000
_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1
# netlink: RTM_NEWROUTE with NLM_F_REQUEST | NLM_F_ACK | NLM_F_EXCL | NLM_F_CREATE
_RTM_NEWROUTE = 24
_NLMSG_ERROR = 2
_NLM_FLAGS = 0x1 | 0x4 | 0x200 | 0x400
_RT_TABLE_LOCAL = 255
_RTPROT_BOOT = 3
_RT_SCOPE_HOST = 254
_RTN_LOCAL = 2
_RTA_DST = 1
_RTA_OIF = 4


class NamespaceError(RuntimeError):
    """The namespace could not be made or configured; the message says what failed."""


def inside() -> bool:
    """True when this process runs in a namespace made by this module (or an equivalent)."""
    return os.environ.get(MARKER_ENV) == "1" and local_range_works()


def local_range_works() -> bool:
    """Whether an address of the local range can be bound here (the route is in place)."""
    with socket.socket() as sock:
        try:
            sock.bind((PROBE_ADDRESS, 0))
        except OSError:
            return False
    return True


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise NamespaceError(f"{what} failed: {os.strerror(errno)} (errno {errno})")


def enter(*, fresh: bool = False) -> None:
    """Move this process (it must not have started threads yet) into a new network namespace
    with ``lo`` up and the local range routed to it. Idempotent: inside one already, it does
    nothing — unless ``fresh``, which makes a new one even there (a parallel test worker, whose
    parent already entered one, gets a namespace of its own: its clusters' addresses and ports
    then cannot meet another worker's). Threads started before a fresh namespace keep the old
    one (a network namespace belongs to a thread); everything started afterwards is inside."""
    if inside() and not fresh:
        return
    uid, gid = os.getuid(), os.getgid()
    flags = _CLONE_NEWNET if uid == 0 else _CLONE_NEWNET | _CLONE_NEWUSER
    _check(_libc().unshare(flags), "unshare(CLONE_NEWNET)")
    if uid != 0:
        Path("/proc/self/setgroups").write_text("deny")
        Path("/proc/self/uid_map").write_text(f"0 {uid} 1")
        Path("/proc/self/gid_map").write_text(f"0 {gid} 1")
    _set_loopback_up()
    _add_local_route(*LOCAL_RANGE)
    if not local_range_works():
        raise NamespaceError(f"the local route for {LOCAL_RANGE[0]}/{LOCAL_RANGE[1]} has no effect")
    os.environ[MARKER_ENV] = "1"


def join(pid: int) -> None:
    """Move this process into the network namespace of ``pid`` (and its user namespace when
    that differs, as for a cluster started by a non-root user)."""
    libc = _libc()
    own_user = os.stat("/proc/self/ns/user").st_ino
    their_user = os.stat(f"/proc/{pid}/ns/user").st_ino
    if own_user != their_user:
        with open(f"/proc/{pid}/ns/user", "rb") as handle:
            _check(libc.setns(handle.fileno(), _CLONE_NEWUSER), f"setns(user of {pid})")
    with open(f"/proc/{pid}/ns/net", "rb") as handle:
        _check(libc.setns(handle.fileno(), _CLONE_NEWNET), f"setns(net of {pid})")
    os.environ[MARKER_ENV] = "1"


def set_loopback_up() -> None:
    """``ip link set lo up`` in this process's namespace."""
    _set_loopback_up()


def add_local_route(network: str, prefix: int) -> None:
    """``ip route add local NETWORK/PREFIX dev lo`` in this process's namespace."""
    _add_local_route(network, prefix)


def _set_loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(sock, _SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, _SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | _IFF_UP))


def _attribute(kind: int, payload: bytes) -> bytes:
    length = 4 + len(payload)
    return struct.pack("HH", length, kind) + payload + b"\0" * (-length % 4)


def _add_local_route(network: str, prefix: int) -> None:
    """``ip route add local NETWORK/PREFIX dev lo`` (table local, scope host) via netlink."""
    body = struct.pack(
        "BBBBBBBBI",
        socket.AF_INET, prefix, 0, 0, _RT_TABLE_LOCAL, _RTPROT_BOOT, _RT_SCOPE_HOST, _RTN_LOCAL, 0,
    )  # fmt: skip
    body += _attribute(_RTA_DST, socket.inet_aton(network))
    body += _attribute(_RTA_OIF, struct.pack("I", socket.if_nametoindex("lo")))
    message = struct.pack("IHHII", 16 + len(body), _RTM_NEWROUTE, _NLM_FLAGS, 1, 0) + body
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE) as sock:
        sock.bind((0, 0))
        sock.send(message)
        reply = sock.recv(4096)
    kind = struct.unpack_from("IHHII", reply)[1]
    error = struct.unpack_from("i", reply, 16)[0] if kind == _NLMSG_ERROR else 0
    if error != 0:
        raise NamespaceError(f"adding the local route failed: {os.strerror(-error)}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m sim_cluster.netns",
        description="Run COMMAND in a new network namespace where 10.0.0.0/8 is local (or in "
        "the namespace of a running simulated cluster with --join).",
    )
    parser.add_argument("--join", type=int, metavar="PID", help="join this process's namespace")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARGS...]")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given")
    try:
        if args.join is not None:
            join(args.join)
        else:
            enter()
    except (NamespaceError, OSError) as error:
        sys.stderr.write(f"sim_cluster.netns: {error}\n")
        return 3
    try:
        os.execvp(command[0], command)  # noqa: S606 (the user's command, as given)
    except OSError as error:
        sys.stderr.write(f"sim_cluster.netns: cannot run {command[0]}: {error}\n")
        return 127


if __name__ == "__main__":
    sys.exit(main())
