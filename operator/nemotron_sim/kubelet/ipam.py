"""Pod IPs from a node's pod CIDR, as a CNI's host-local IPAM hands them out.

The cluster's network namespace routes all of 10.0.0.0/8 to ``lo`` (:mod:`sim_cluster.netns`),
so any address of a node's ``spec.podCIDR`` can be bound without setup. When a bind still finds
an address taken, the caller asks again.
"""

from __future__ import annotations

import errno
import ipaddress
import logging
import socket
from typing import Protocol

log = logging.getLogger("nemotron_sim")
_BIND_ATTEMPTS = 20


class PoolExhaustedError(RuntimeError):
    """Every address of a pool is in use."""


class AddressPool(Protocol):
    def allocate(self) -> str: ...

    def release(self, address: str) -> None: ...


class CidrPool:
    """The addresses of one node's pod CIDR (``spec.podCIDR``, a /24 from
    kube-controller-manager): ``.2`` to the last but one, handed out in order and reused late
    after release (so a just-closed socket has time to go)."""

    def __init__(self, cidr: str) -> None:
        self._hosts = [str(a) for a in list(ipaddress.ip_network(cidr).hosts())[1:]]
        self._size, self._describe = len(self._hosts), cidr
        self._next = 0
        self._free: list[str] = []
        self._in_use: set[str] = set()

    def allocate(self) -> str:
        while self._free:
            address = self._free.pop()
            if address not in self._in_use:
                self._in_use.add(address)
                return address
        if self._next >= self._size:
            raise PoolExhaustedError(f"no free address left in {self._describe}")
        address = self._hosts[self._next]
        self._next += 1
        self._in_use.add(address)
        return address

    def release(self, address: str) -> None:
        if address in self._in_use:
            self._in_use.discard(address)
            self._free.insert(0, address)

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


def allocate_bindable(pool: AddressPool, ports: list[int]) -> str:
    """A pod IP from ``pool`` whose serving ports are free (another simulated cluster may hold
    some)."""
    for _ in range(_BIND_ATTEMPTS):
        address = pool.allocate()
        if all(can_bind(address, port) for port in ports):
            return address
        log.info("kubelet: %s is taken on this machine, trying another pod IP", address)
    raise RuntimeError("kubelet: no free loopback pod IP after several attempts")
