from __future__ import annotations

import pytest

from nemotron_sim.controllers.ipam import POD_OCTETS, CidrPool, LoopbackPool, PoolExhaustedError


def test_addresses_are_loopback_unique_and_reused_after_release() -> None:
    pool = LoopbackPool(100)
    first = [pool.allocate() for _ in range(300)]
    assert len(set(first)) == 300
    assert first[0] == "127.100.0.1"
    assert first[254] == "127.100.1.1"  # .0 and .255 are skipped
    assert all(a.startswith("127.100.") and not a.endswith((".0", ".255")) for a in first)
    pool.release(first[5])
    assert pool.allocate() == first[5]
    assert pool.in_use() == 300


def test_random_pool_stays_in_its_range() -> None:
    assert LoopbackPool.random(POD_OCTETS).octet in POD_OCTETS


def test_exhaustion_is_an_error() -> None:
    pool = LoopbackPool(100)
    pool._size = 2
    pool.allocate()
    pool.allocate()
    with pytest.raises(PoolExhaustedError):
        pool.allocate()


def test_a_node_pool_hands_out_its_pod_cidr_from_dot_two() -> None:
    pool = CidrPool("10.244.3.0/24")
    assert (pool.allocate(), pool.allocate()) == ("10.244.3.2", "10.244.3.3")
    pool.release("10.244.3.2")
    assert pool.allocate() == "10.244.3.2"  # freed addresses before new ones
    taken = [pool.allocate() for _ in range(251)]
    assert taken[-1] == "10.244.3.254"  # .2 to .254: the network's hosts but the first
    assert pool.in_use() == 253
    with pytest.raises(PoolExhaustedError, match=r"10\.244\.3\.0/24"):
        pool.allocate()
