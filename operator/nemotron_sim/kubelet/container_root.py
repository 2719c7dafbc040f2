"""Run a program as a container runtime would: its volumes at their ``mountPath``.

``python -m nemotron_sim.kubelet.container_root PROGRAM [ARGS...]`` (the kubelet puts it in front
of a real engine's argv, see real_engine.py) reads the container's mounts from
``NEMOTRON_SIM_MOUNTS`` (``{mountPath: directory}``, podfiles.py), enters a mount namespace of
its own, builds a root there — a tmpfs holding every top-level entry of this machine's ``/``
bound recursively (the "image" is this machine), then each volume bound at its ``mountPath``
(over what the machine has there) — changes root into it and executes PROGRAM with the
simulator's own ``NEMOTRON_SIM_*`` variables removed. The rendered command and paths then run
unchanged: ``vllm serve /models/...`` finds the checkpoint the claim holds. Nothing outside the
namespace changes, except a missing mount point below an existing directory of this machine
(none of the operator's mount paths needs one: they are top-level, ``/dev/shm`` or ``/tmp``).

Needs root (or a user namespace's root, as in the simulated cluster's own namespace); ``readOnly``
mounts are bound writable; the container's ``securityContext`` (user, capabilities) is not applied.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

MOUNTS_ENV = "NEMOTRON_SIM_MOUNTS"
_SIM_PREFIX = "NEMOTRON_SIM_"
_CLONE_NEWNS = 0x00020000
_MS_BIND, _MS_REC, _MS_PRIVATE = 4096, 16384, 1 << 18


class ContainerRootError(RuntimeError):
    pass


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _mount(source: str | None, target: str, fstype: str | None, flags: int) -> None:
    enc = [None if s is None else s.encode() for s in (source, target, fstype)]
    if _libc().mount(enc[0], enc[1], enc[2], ctypes.c_ulong(flags), None) != 0:
        errno = ctypes.get_errno()
        raise ContainerRootError(f"mount {source} on {target}: {os.strerror(errno)}")


def enter_root(mounts: Mapping[str, str], new_root: Path) -> None:
    """Unshare the mount namespace, build the root in ``new_root`` and change root into it."""
    if _libc().unshare(_CLONE_NEWNS) != 0:
        errno = ctypes.get_errno()
        raise ContainerRootError(f"unshare(CLONE_NEWNS): {os.strerror(errno)} (needs root)")
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
    os.chdir(new_root)
    os.chroot(".")
    os.chdir("/")


def main(argv: Sequence[str] | None = None) -> int:  # returns only on failure
    program = list(sys.argv[1:] if argv is None else argv)
    if not program:
        sys.stderr.write("usage: python -m nemotron_sim.kubelet.container_root PROGRAM ...\n")
        return 2
    mounts = json.loads(os.environ.get(MOUNTS_ENV) or "{}")
    for name in [n for n in os.environ if n.startswith(_SIM_PREFIX)]:
        del os.environ[name]
    try:
        enter_root(mounts, Path.cwd() / "rootfs")
    except (ContainerRootError, OSError) as error:
        sys.stderr.write(f"container_root: {error}\n")
        return 128
    return os.execvp(program[0], program)  # noqa: S606 (a container's command, as given)


if __name__ == "__main__":
    sys.exit(main())
