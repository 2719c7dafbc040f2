from __future__ import annotations

import ipaddress

import pytest

from sim_cluster.controlplane.network import MAX_NODES, AddressPlan, node_cidr_mask_size


def test_node_addresses_stay_distinct_and_apart_from_other_control_planes_past_one_block() -> None:
    first, second = AddressPlan(0), AddressPlan(1)
    ours = [first.node_ip(i) for i in range(MAX_NODES)]
    theirs = {second.node_ip(i) for i in range(MAX_NODES)}
    assert len(set(ours)) == MAX_NODES
    assert not theirs & set(ours)
    assert ours[:2] == ["10.1.0.2", "10.1.0.3"]
    assert ours[252:254] == ["10.1.0.254", "10.1.1.2"]  # the 254th node opens the next /24
    for address in ours:  # never a network or broadcast address, never the control plane's
        host = int(address.rsplit(".", 1)[1])
        assert 2 <= host <= 254
        assert ipaddress.ip_address(address) in ipaddress.ip_network("10.1.0.0/16")
    with pytest.raises(ValueError, match=f"at most {MAX_NODES} nodes"):
        first.node_ip(MAX_NODES)


def test_the_last_control_plane_still_fits_its_node_blocks() -> None:
    assert AddressPlan(11).node_ip(MAX_NODES - 1) == "10.1.191.254"


@pytest.mark.parametrize(
    ("nodes", "mask"), [(1, 24), (256, 24), (257, 25), (418, 25), (512, 25), (513, 26), (4096, 28)]
)
def test_every_node_gets_a_pod_range_of_the_slash_16(nodes: int, mask: int) -> None:
    assert node_cidr_mask_size(nodes) == mask
    assert 2 ** (mask - 16) >= nodes  # kube-controller-manager has a range for each node


def test_more_nodes_than_the_pod_range_can_serve_are_refused() -> None:
    with pytest.raises(ValueError, match="4097 nodes"):
        node_cidr_mask_size(4097)
