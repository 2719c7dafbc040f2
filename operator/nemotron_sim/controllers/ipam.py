"""Loopback addresses for pods, Services and nodes.

Linux routes all of 127.0.0.0/8 to ``lo``, so any 127.A.B.C can be bound without setup. Each
cluster takes a random second octet per pool, so two simulated clusters on one machine (a test
run next to a demo) rarely meet; when a bind still finds an address taken, the caller marks it
and asks again.
"""

from __future__ import annotations

import errno
import ipaddress
import secrets
import socket
from typing import Protocol

POD_OCTETS = range(100, 200)  # 127.100-199.x.y: pod IPs
SERVICE_OCTETS = range(200, 250)  # 127.200-249.x.y: Service ClusterIPs
NODE_OCTETS = range(250, 255)  # 127.250-254.x.y: node InternalIPs (never bound)


class PoolExhaustedError(RuntimeError):
    """Every address of a pool is in use."""


class AddressPool(Protocol):
    def allocate(self) -> str: ...

    def release(self, address: str) -> None: ...


class _Pool:
    """Addresses handed out in order and reused late after release (so a just-closed socket has
    time to go), as a CNI's host-local IPAM does; subclasses say which addresses."""

    def __init__(self, size: int, describe: str) -> None:
        self._size, self._describe = size, describe
        self._next = 0
        self._free: list[str] = []
        self._in_use: set[str] = set()

    def _address(self, index: int) -> str:
        raise NotImplementedError

    def allocate(self) -> str:
        while self._free:
            address = self._free.pop()
            if address not in self._in_use:
                self._in_use.add(address)
                return address
        if self._next >= self._size:
            raise PoolExhaustedError(f"no free address left in {self._describe}")
        address = self._address(self._next)
        self._next += 1
        self._in_use.add(address)
        return address

    def release(self, address: str) -> None:
        if address in self._in_use:
            self._in_use.discard(address)
            self._free.insert(0, address)

    def in_use(self) -> int:
        return len(self._in_use)


class CidrPool(_Pool):
    """The addresses of one node's pod CIDR (``spec.podCIDR``, a /24 from
    kube-controller-manager): ``.2`` to the last but one."""

    def __init__(self, cidr: str) -> None:
        self._hosts = [str(a) for a in list(ipaddress.ip_network(cidr).hosts())[1:]]
        super().__init__(len(self._hosts), cidr)

    def _address(self, index: int) -> str:
        return self._hosts[index]


class LoopbackPool(_Pool):
    """Addresses 127.<octet>.x.y, y in 1..254."""

    def __init__(self, octet: int) -> None:
        if not 0 < octet < 256:
            raise ValueError(f"second octet out of range: {octet}")
        self.octet = octet
        super().__init__(256 * 254, f"127.{octet}.0.0/16")

    @classmethod
    def random(cls, octets: range) -> LoopbackPool:
        return cls(octets[secrets.randbelow(len(octets))])

    def _address(self, index: int) -> str:
        return f"127.{self.octet}.{index // 254}.{index % 254 + 1}"


def can_bind(address: str, port: int) -> bool:
    """Whether ``address:port`` is free on this machine (another simulated cluster, a test run
    and a demo at once, may hold the same loopback address)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((address, port))
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                return False
            raise
    return True
