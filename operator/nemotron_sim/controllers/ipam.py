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


class CidrPool:
    """The addresses of one node's pod CIDR (``spec.podCIDR``, a /24 from
    kube-controller-manager): ``.2`` to the last but one, handed out in order and reused late,
    as a CNI's host-local IPAM does."""

    def __init__(self, cidr: str) -> None:
        network = ipaddress.ip_network(cidr)
        self.cidr = cidr
        self._addresses = [str(a) for a in list(network.hosts())[1:]]
        self._next = 0
        self._free: list[str] = []
        self._in_use: set[str] = set()

    def allocate(self) -> str:
        while self._free:
            address = self._free.pop()
            if address not in self._in_use:
                self._in_use.add(address)
                return address
        if self._next >= len(self._addresses):
            raise PoolExhaustedError(f"no free pod address left in {self.cidr}")
        address = self._addresses[self._next]
        self._next += 1
        self._in_use.add(address)
        return address

    def release(self, address: str) -> None:
        if address in self._in_use:
            self._in_use.discard(address)
            self._free.insert(0, address)


class LoopbackPool:
    """Addresses 127.<octet>.x.y, y in 1..254, handed out in order and reused after release."""

    def __init__(self, octet: int) -> None:
        if not 0 < octet < 256:
            raise ValueError(f"second octet out of range: {octet}")
        self.octet = octet
        self._next = 0
        self._free: list[str] = []
        self._in_use: set[str] = set()
        self._size = 256 * 254

    @classmethod
    def random(cls, octets: range) -> LoopbackPool:
        return cls(octets[secrets.randbelow(len(octets))])

    def _address(self, index: int) -> str:
        return f"127.{self.octet}.{index // 254}.{index % 254 + 1}"

    def allocate(self) -> str:
        while self._free:
            address = self._free.pop()
            if address not in self._in_use:
                self._in_use.add(address)
                return address
        if self._next >= self._size:
            raise PoolExhaustedError(f"no free address left in 127.{self.octet}.0.0/16")
        address = self._address(self._next)
        self._next += 1
        self._in_use.add(address)
        return address

    def release(self, address: str) -> None:
        if address in self._in_use:
            self._in_use.discard(address)
            self._free.insert(0, address)  # reuse late, so a just-closed socket has time to go

    def in_use(self) -> int:
        return len(self._in_use)


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
