from __future__ import annotations

import pytest

from nemotron_sim.kubelet.ipam import CidrPool, PoolExhaustedError


def test_a_node_pool_hands_out_its_pod_cidr_from_dot_two() -> None:
    pool = CidrPool("10.244.3.0/24")
    assert (pool.allocate(), pool.allocate()) == ("10.244.3.2", "10.244.3.3")
    pool.release("10.244.3.2")
    assert pool.allocate() == "10.244.3.2"  # freed addresses before new ones
    taken = [pool.allocate() for _ in range(251)]
    assert taken[-1] == "10.244.3.254"  # .2 to .254: the network's hosts but the first
    assert len(set(taken)) == 251
    assert pool.in_use() == 253
    with pytest.raises(PoolExhaustedError, match=r"10\.244\.3\.0/24"):
        pool.allocate()


def test_released_addresses_are_reused_oldest_first() -> None:
    pool = CidrPool("10.244.0.0/29")  # hosts .1-.6; the pool hands out .2-.6
    taken = [pool.allocate() for _ in range(5)]
    pool.release(taken[0])
    pool.release(taken[1])
    assert pool.allocate() == taken[0]  # the earliest released has had the longest to close
    pool.release("10.9.9.9")  # not ours: ignored
    assert pool.in_use() == 4
