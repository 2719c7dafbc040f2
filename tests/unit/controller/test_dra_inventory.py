"""The GPU inventory on DRA clusters: ResourceSlices as GPU nodes, allocated ResourceClaims as
GPUs in use (a deployment's own claims not counted against it), kept from watch events."""

from __future__ import annotations

from typing import Any, cast

from nemotron_operator.controller.decide.desired import dra_unavailable
from nemotron_operator.controller.watch.inventory import (
    InventoryReader,
    claim_projection,
    slice_projection,
)
from nemotron_operator.kube import KubeClient
from nemotron_operator.kube.resources import NODES, RESOURCE_CLAIMS, RESOURCE_SLICES
from nemotron_operator.render import names as n
from nemotron_operator.sizing.dra import claim_node_gpus, dra_node_facts, gfd_name
from nemotron_sim.agents.node_objects import build_nodes, gpu_facts
from sim_cluster.node_spec import parse_node_spec
from sim_cluster.simulated_addons.resource_slices import build_resource_slice
from tests.unit.controller.fake_kube import FakeKube

NODE_SPEC = "NVIDIA-H200:8x1,NVIDIA-B200:8x2:dra"
_VERSIONS = iter(range(100, 10_000))


def _nodes() -> list[dict[str, Any]]:
    ips = iter(f"10.1.0.{i}" for i in range(2, 20))
    nodes = build_nodes(parse_node_spec(NODE_SPEC), gpu_facts, lambda: next(ips))
    for node in nodes:
        node["metadata"]["resourceVersion"] = str(next(_VERSIONS))
    return nodes


def _slices() -> list[dict[str, Any]]:
    slices = []
    for group in parse_node_spec(NODE_SPEC):
        if group.dra:
            for index in range(group.nodes):
                obj = build_resource_slice(group, index, f"uid-{index}")
                obj["metadata"]["resourceVersion"] = str(next(_VERSIONS))
                slices.append(obj)
    return slices


def _claim(instance: str, node: str, gpus: int, name: str | None = None) -> dict[str, Any]:
    """A claim as kube-scheduler leaves it: allocated on ``node`` (and made from the operator's
    template: its labels)."""
    results = [
        {"request": "gpus", "driver": "gpu.nvidia.com", "pool": node, "device": f"gpu-{i}"}
        for i in range(gpus)
    ]
    return {
        "metadata": {
            "name": name or f"{instance}-0-gpus-abcde",
            "namespace": "ai",
            "resourceVersion": str(next(_VERSIONS)),
            "labels": {n.INSTANCE: instance, n.MANAGED_BY_LABEL: n.MANAGED_BY},
        },
        "status": {
            "allocation": {
                "devices": {"results": results},
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {"matchFields": [{"key": "metadata.name", "operator": "In",
                                          "values": [node]}]}
                    ]
                },
            }
        },
    }  # fmt: skip


def _free(inventory: Any) -> dict[tuple[str, str], int]:
    return {(x.name, x.allocation): x.free_gpus for x in inventory.nodes}


def test_the_drivers_slices_become_gpu_nodes_named_as_gfd_names_products() -> None:
    facts = dra_node_facts(_slices())
    assert facts["sim-b200-dra-0"] == {
        "product": "NVIDIA-B200",
        "gpus": 8,
        "memory_mib": 183359,
        "capability": (10, 0),
    }
    assert gfd_name("NVIDIA H100 80GB HBM3") == "NVIDIA-H100-80GB-HBM3"
    # Another driver's slice, and a MIG device, are not whole NVIDIA GPUs.
    other = {"spec": {"driver": "gpu.example.com", "nodeName": "x", "devices": [{"name": "d"}]}}
    mig = _slices()[0]
    mig["spec"]["devices"][0]["attributes"]["type"] = {"string": "mig"}
    assert dra_node_facts([other]) == {}
    assert dra_node_facts([mig])["sim-b200-dra-0"]["gpus"] == 7


def test_a_claim_counts_its_drivers_devices_on_its_node_once_allocated() -> None:
    assert claim_node_gpus(_claim("x", "sim-b200-dra-1", 4)) == ("sim-b200-dra-1", 4)
    assert claim_node_gpus({"metadata": {}, "status": {}}) is None
    projected = claim_projection(_claim("x", "sim-b200-dra-1", 4))
    assert projected["spec"]["nodeName"] == "sim-b200-dra-1"
    assert projected["gpus"] == 4
    assert projected["metadata"]["labels"][n.INSTANCE] == "x"


def test_a_slice_is_projected_on_what_the_inventory_reads() -> None:
    projected = slice_projection(_slices()[0])
    device = projected["spec"]["devices"][0]
    assert set(device["attributes"]) == {"type", "productName", "cudaComputeCapability"}
    assert set(device["capacity"]) == {"memory"}
    assert dra_node_facts([projected]) == dra_node_facts(_slices()[:1])


def cluster() -> FakeKube:
    """An H200 node of the device plugin, two B200 nodes of the DRA driver with their slices,
    and two allocated claims."""
    kube = FakeKube()
    for resource, objects in (
        (NODES, _nodes()),
        (RESOURCE_SLICES, _slices()),
        (RESOURCE_CLAIMS, [_claim("x", "sim-b200-dra-0", 8), _claim("y", "sim-b200-dra-1", 2)]),
    ):
        for obj in objects:
            kube.put(resource, obj)
    return kube


async def test_listed_inventory_counts_claims_and_leaves_a_deployment_its_own() -> None:
    kube = cluster()
    reader = InventoryReader(cast(KubeClient, kube), ttl=5.0, dra=True)
    theirs = await reader.read("ai", "new")
    assert _free(theirs) == {
        ("sim-h200-0", "DevicePlugin"): 8,
        ("sim-b200-dra-0", "DRA"): 0,
        ("sim-b200-dra-1", "DRA"): 6,
    }
    assert _free(await reader.read("ai", "x"))[("sim-b200-dra-0", "DRA")] == 8
    assert sorted(kube.lists) == ["nodes", "pods", "resourceclaims", "resourceslices"]
    # Each deployment plans on its own kind of node.
    assert [x.name for x in theirs.for_allocation("DevicePlugin").nodes] == ["sim-h200-0"]
    assert theirs.for_allocation("DRA").products() == ("NVIDIA-B200",)
    # Without --dra nothing of DRA is read.
    plain = cluster()
    reader = InventoryReader(cast(KubeClient, plain), ttl=5.0)
    assert [x.allocation for x in (await reader.read("ai", "new")).nodes] == ["DevicePlugin"]
    assert sorted(plain.lists) == ["nodes", "pods"]


async def test_watched_inventory_follows_slices_and_claims_without_a_request() -> None:
    kube = FakeKube()  # the watched inventory must not list
    reader = InventoryReader(cast(KubeClient, kube), ttl=5.0, dra=True)
    nodes, pods, slices, claims = reader.follow()
    for node in _nodes():
        nodes.store(node)
    for obj in _slices():
        slices.store(obj)
    first = _claim("x", "sim-b200-dra-0", 8)
    claims.store(first)
    assert not reader.watched
    for watch in (nodes, pods, slices, claims):
        watch.synced.set()
    assert reader.watched
    assert reader.dra_served
    assert _free(await reader.read("ai", "new"))[("sim-b200-dra-0", "DRA")] == 0
    start = reader.generation

    # kube-scheduler allocates another deployment's claim: a new generation, fewer free GPUs.
    second = _claim("y", "sim-b200-dra-1", 2)
    claims.store(second)
    assert claims.listener is not None
    claims.listener("ADDED", second)
    assert reader.generation > start
    assert _free(await reader.read("ai", "new"))[("sim-b200-dra-1", "DRA")] == 6
    assert _free(await reader.read("ai", "y"))[("sim-b200-dra-1", "DRA")] == 8

    # The claim is deleted with its pod: the GPUs are free again.
    claims.drop("ai", second["metadata"]["name"], str(next(_VERSIONS)))
    claims.listener("DELETED", second)
    assert _free(await reader.read("ai", "new"))[("sim-b200-dra-1", "DRA")] == 8

    # A DRA node's slice goes (the driver stopped): the node leaves the inventory.
    gone = _slices()[1]
    slices.drop(None, gone["metadata"]["name"], str(next(_VERSIONS)))
    assert slices.listener is not None
    slices.listener("DELETED", gone)
    names = [x.name for x in (await reader.read("ai", "new")).nodes]
    assert "sim-b200-dra-1" not in names
    assert kube.lists == []  # the watched inventory never lists


async def test_a_cluster_without_dra_ends_the_watches_and_says_so() -> None:
    reader = InventoryReader(cast(KubeClient, object()), ttl=5.0, dra=True)
    nodes, pods, slices, claims = reader.follow()
    for watch in (nodes, pods):
        watch.synced.set()
    slices.not_served = claims.not_served = True  # their 404
    assert reader.watched
    assert not reader.dra_served


def test_dra_unavailable_names_what_to_change() -> None:
    assert dra_unavailable("DevicePlugin", False, False) is None
    assert dra_unavailable("DRA", True, True) is None
    not_enabled = dra_unavailable("DRA", False, False)
    assert not_enabled is not None
    assert "rbac.dra=true" in not_enabled.message
    assert not_enabled.reason == "DRANotAvailable"
    not_served = dra_unavailable("DRA", True, False)
    assert not_served is not None
    assert "resource.k8s.io/v1" in not_served.message
