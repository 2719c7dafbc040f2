"""Parsing the cluster's GPU nodes from Node objects."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nemotron_operator.sizing import inventory_from_nodes
from nemotron_operator.sizing.inventory import inventory_from_usage, with_usage


def node(
    name: str,
    product: str | None,
    gpus: int,
    *,
    memory_mib: int | None = None,
    capability: tuple[int, int] | None = None,
    ready: bool = True,
    unschedulable: bool = False,
) -> dict[str, Any]:
    """A Node as ``kubectl get nodes -o json`` returns it, with GFD labels."""
    labels: dict[str, str] = {"kubernetes.io/hostname": name}
    if product:
        labels["nvidia.com/gpu.product"] = product
    if memory_mib is not None:
        labels["nvidia.com/gpu.memory"] = str(memory_mib)
    if capability is not None:
        labels["nvidia.com/gpu.compute.major"] = str(capability[0])
        labels["nvidia.com/gpu.compute.minor"] = str(capability[1])
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {"unschedulable": True} if unschedulable else {},
        "status": {
            "allocatable": {"cpu": "96", "nvidia.com/gpu": str(gpus)},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def pod(node_name: str, gpus: int, phase: str = "Running") -> dict[str, Any]:
    return {
        "spec": {
            "nodeName": node_name,
            "containers": [{"resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}],
        },
        "status": {"phase": phase},
    }


def test_gpu_nodes_are_parsed_and_others_skipped() -> None:
    inventory = inventory_from_nodes(
        [
            node("cpu-0", None, 0),
            node("h200-1", "NVIDIA-H200", 8, memory_mib=143771, capability=(9, 0)),
            node("h200-0", "NVIDIA-H200", 8, memory_mib=143771, capability=(9, 0)),
            node("b200-0", "NVIDIA-B200", 8),
            node("labelled-but-empty", "NVIDIA-L40S", 0),
        ]
    )
    assert [n.name for n in inventory.nodes] == ["b200-0", "h200-0", "h200-1"]
    assert inventory.products() == ("NVIDIA-H200", "NVIDIA-B200")
    h200 = inventory.nodes_of("NVIDIA-H200")[0]
    assert (h200.gpus, h200.free_gpus, h200.memory_mib) == (8, 8, 143771)
    assert h200.compute_capability == (9, 0)


def test_free_gpus_subtract_running_pods_only() -> None:
    inventory = inventory_from_nodes(
        [node("h200-0", "NVIDIA-H200", 8), node("h200-1", "NVIDIA-H200", 8)],
        pods=[pod("h200-0", 4), pod("h200-0", 2), pod("h200-1", 8, phase="Succeeded")],
    )
    free = {n.name: n.free_gpus for n in inventory.nodes}
    assert free == {"h200-0": 2, "h200-1": 8}
    assert inventory.free_nodes("NVIDIA-H200", 4) == 1
    assert inventory.free_nodes("NVIDIA-H200", 2) == 2


def test_unready_and_cordoned_nodes_offer_no_free_capacity() -> None:
    inventory = inventory_from_nodes(
        [
            node("a", "NVIDIA-H200", 8, ready=False),
            node("b", "NVIDIA-H200", 8, unschedulable=True),
            node("c", "NVIDIA-H200", 8),
        ]
    )
    assert inventory.free_nodes("NVIDIA-H200", 8) == 1


def test_catalog_products_take_the_cluster_s_gpus_per_node() -> None:
    inventory = inventory_from_nodes([node("h100-0", "NVIDIA-H100-80GB-HBM3", 4)])
    gpu = inventory.gpu_product("NVIDIA-H100-80GB-HBM3")
    assert gpu is not None
    assert gpu.gpus_per_node == 4
    assert gpu.memory_mib == 81559  # from the catalog


def test_unknown_products_are_built_from_the_labels() -> None:
    inventory = inventory_from_nodes(
        [node("x", "NVIDIA-H20", 8, memory_mib=97871, capability=(9, 0))]
    )
    gpu = inventory.gpu_product("NVIDIA-H20")
    assert gpu is not None
    assert gpu.memory_mib == 97871
    assert gpu.fp8
    assert not gpu.fp4


def test_unknown_product_without_memory_label_cannot_be_planned() -> None:
    inventory = inventory_from_nodes([node("x", "NVIDIA-Mystery", 8)])
    assert inventory.gpu_product("NVIDIA-Mystery") is None


def test_a_product_built_from_labels_takes_every_field_from_them() -> None:
    nodes = [
        node("a", "NVIDIA-H20", 4, memory_mib=97871, capability=(9, 0)),
        node("b", "NVIDIA-H20", 8, capability=(9, 0)),  # the memory label on one node is enough
    ]
    gpu = inventory_from_nodes(nodes).gpu_product("NVIDIA-H20")
    assert gpu is not None
    assert (gpu.name, gpu.display_name) == ("NVIDIA-H20", "NVIDIA-H20")
    assert gpu.memory_bytes == 97871 * 2**20
    assert gpu.memory_reported
    assert gpu.compute_capability == (9, 0)
    assert gpu.family == "hopper"
    assert gpu.gpus_per_node == 8  # the largest node
    assert gpu.interconnect == "unknown (from node labels)"
    assert gpu.source == "GFD node labels"
    assert inventory_from_nodes(nodes).gpu_product("NVIDIA-B200") is None  # not in the cluster


@pytest.mark.parametrize(
    ("capability", "family", "fp8", "fp4"),
    [
        ((10, 0), "blackwell", True, True),
        ((12, 0), "blackwell", True, True),
        ((9, 0), "hopper", True, False),
        ((8, 9), "ada-lovelace", True, False),
        ((8, 6), "ampere", False, False),
        ((8, 0), "ampere", False, False),
    ],
)
def test_the_family_and_low_precision_support_follow_the_compute_capability(
    capability: tuple[int, int], family: str, fp8: bool, fp4: bool
) -> None:
    gpu = inventory_from_nodes([node("x", "X", 8, memory_mib=1024, capability=capability)])
    found = gpu.gpu_product("X")
    assert found is not None
    assert (found.family, found.fp8, found.fp4) == (family, fp8, fp4)


def test_a_product_without_capability_labels_counts_as_the_oldest() -> None:
    gpu = inventory_from_nodes([node("x", "X", 8, memory_mib=1024)]).gpu_product("X")
    assert gpu is not None
    assert gpu.compute_capability == (0, 0)
    assert (gpu.fp8, gpu.fp4) == (False, False)


def test_requested_gpus_prefer_requests_then_limits_and_add_up_containers() -> None:
    both = {
        "spec": {
            "nodeName": "h1",
            "containers": [
                {
                    "resources": {
                        "requests": {"nvidia.com/gpu": "2"},
                        "limits": {"nvidia.com/gpu": "3"},
                    }
                },
                {"resources": {"limits": {"nvidia.com/gpu": 1}}},
                {"resources": {}},
                {},
            ],
        },
        "status": {"phase": "Pending"},
    }
    inventory = inventory_from_nodes([node("h1", "NVIDIA-H200", 8)], [both])
    assert inventory.nodes[0].free_gpus == 5  # 8 − (2 + 1): requests win over limits


def test_usage_never_makes_free_gpus_negative_and_only_counts_its_node() -> None:
    nodes = [node("h1", "NVIDIA-H200", 8), node("h2", "NVIDIA-H200", 8)]
    inventory = inventory_from_usage(nodes, {"h1": 12, "elsewhere": 3})
    assert [(n.name, n.free_gpus) for n in inventory.nodes] == [("h1", 0), ("h2", 8)]


def test_nodes_without_conditions_count_as_ready_and_sort_by_product_then_name() -> None:
    bare = node("z", "NVIDIA-B200", 8)
    bare["status"].pop("conditions")
    other = node("a", "NVIDIA-H200", 8)
    same = node("b", "NVIDIA-B200", 8)
    inventory = inventory_from_nodes([other, bare, same])
    assert [(n.product, n.name) for n in inventory.nodes] == [
        ("NVIDIA-B200", "b"), ("NVIDIA-B200", "z"), ("NVIDIA-H200", "a"),
    ]  # fmt: skip
    assert all(n.ready for n in inventory.nodes)
    assert inventory.products() == ("NVIDIA-B200", "NVIDIA-H200")  # most GPUs first
    assert inventory.free_nodes("NVIDIA-B200", 8) == 2
    assert inventory.free_nodes("NVIDIA-B200", 9) == 0


def test_a_catalog_product_keeps_the_clusters_own_label_as_its_name() -> None:
    # "NVIDIA-B300" is an alias of the catalog's NVIDIA-B300-SXM6-AC; the plan's nodeSelector must
    # carry the label the nodes have, not the catalog's spelling.
    gpu = inventory_from_nodes([node("x", "NVIDIA-B300", 8)]).gpu_product("NVIDIA-B300")
    assert gpu is not None
    assert gpu.name == "NVIDIA-B300"
    assert gpu.display_name != "NVIDIA-B300"  # the rest is the catalog's entry


@pytest.mark.parametrize(("phase", "free"), [("Failed", 8), ("Succeeded", 8), ("Pending", 6)])
def test_finished_pods_hold_no_gpus(phase: str, free: int) -> None:
    inventory = inventory_from_nodes([node("h1", "NVIDIA-H200", 8)], [pod("h1", 2, phase)])
    assert inventory.nodes[0].free_gpus == free


def test_a_node_with_a_single_gpu_counts() -> None:
    inventory = inventory_from_nodes(
        [node("one", "NVIDIA-L40S", 1), node("none", "NVIDIA-L40S", 0)]
    )
    assert [(n.name, n.gpus) for n in inventory.nodes] == [("one", 1)]


_NAMES = ("h1", "h2", "h3", "h4")
_usage = st.dictionaries(st.sampled_from((*_NAMES, "elsewhere")), st.integers(0, 12))


@given(sizes=st.lists(st.integers(0, 8), min_size=4, max_size=4), used=_usage, own=_usage)
def test_recounting_free_gpus_equals_parsing_the_nodes_again(
    sizes: list[int], used: dict[str, int], own: dict[str, int]
) -> None:
    """The inventory reader parses the nodes once and recounts usage per read (with_usage); a
    deployment's own GPUs are taken out of the nodes they are on only (``only``). Both must be
    what parsing the Node objects with that usage gives, overcommitted nodes included."""
    nodes = [node(name, "NVIDIA-H200", gpus) for name, gpus in zip(_NAMES, sizes, strict=True)]
    every_gpu_free = inventory_from_usage(nodes, {})
    shared = with_usage(every_gpu_free, used)
    assert shared == inventory_from_usage(nodes, used)
    held = {name: min(gpus, used.get(name, 0)) for name, gpus in own.items()}
    others = {name: used.get(name, 0) - gpus for name, gpus in held.items()}
    without_own = {**used, **others}
    assert with_usage(shared, others, only=held) == inventory_from_usage(nodes, without_own)


def test_recounting_keeps_the_same_inventory_when_no_count_changes() -> None:
    inventory = inventory_from_usage([node("h1", "NVIDIA-H200", 8)], {"h1": 3})
    assert with_usage(inventory, {"h1": 3}) is inventory
    assert with_usage(inventory, {"h1": 8}, only=["h2"]) is inventory
