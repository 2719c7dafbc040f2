"""DRA nodes of the simulated cluster: their Node objects, ResourceSlices and the kubelet's
claim check."""

from __future__ import annotations

from typing import Any

import pytest

from nemotron_sim.agents.node_objects import (
    NodeGroup,
    NodeSpecError,
    build_nodes,
    gpu_facts,
)
from nemotron_sim.kubeapi.kinds import PODS, RESOURCE_CLAIMS, RESOURCE_SLICES
from nemotron_sim.kubelet.claims import dra_gpu_product, unprepared_claim
from sim_cluster.node_spec import parse_node_spec
from sim_cluster.simulated_addons.resource_slices import build_resource_slice, device_class


def test_dra_suffix_parses_and_a_product_may_appear_once_per_kind() -> None:
    assert parse_node_spec("NVIDIA-H200:8x1,NVIDIA-H200:8x2:dra") == [
        NodeGroup("NVIDIA-H200", 8, 1),
        NodeGroup("NVIDIA-H200", 8, 2, dra=True),
    ]
    with pytest.raises(NodeSpecError, match="appears twice"):
        parse_node_spec("NVIDIA-H200:8x1:dra,NVIDIA-H200:4x1:dra")
    with pytest.raises(NodeSpecError, match=":dra"):
        parse_node_spec("NVIDIA-H200:8x1:mig")


def test_a_dra_node_has_no_device_plugin_resource_nor_gfd_product_labels() -> None:
    (node,) = build_nodes(parse_node_spec("NVIDIA-B200:4x1:dra"), gpu_facts, lambda: "10.1.0.2")
    assert node["metadata"]["name"] == "sim-b200-dra-0"
    labels = node["metadata"]["labels"]
    assert labels["nvidia.com/gpu.present"] == "true"
    assert not [
        k for k in labels if k.startswith("nvidia.com/gpu.") and k != "nvidia.com/gpu.present"
    ]
    assert "nvidia.com/gpu" not in node["status"]["allocatable"]
    assert node["spec"]["taints"][0]["key"] == "nvidia.com/gpu"


def test_resource_slice_has_one_device_per_gpu_with_the_drivers_attributes() -> None:
    group = NodeGroup("NVIDIA-H200", 8, 1, dra=True)
    obj = build_resource_slice(group, 0, "uid-1")
    spec = obj["spec"]
    assert spec["driver"] == "gpu.nvidia.com"
    assert spec["nodeName"] == spec["pool"]["name"] == "sim-h200-dra-0"
    assert spec["pool"]["resourceSliceCount"] == 1
    assert obj["metadata"]["ownerReferences"][0]["uid"] == "uid-1"
    devices = spec["devices"]
    assert [d["name"] for d in devices] == [f"gpu-{i}" for i in range(8)]
    first = devices[0]
    assert first["attributes"]["productName"] == {"string": "NVIDIA H200"}
    assert first["attributes"]["type"] == {"string": "gpu"}
    assert first["attributes"]["architecture"] == {"string": "Hopper"}
    assert first["attributes"]["cudaComputeCapability"] == {"version": "9.0.0"}
    assert first["capacity"]["memory"] == {"value": "143771Mi"}
    assert len({d["attributes"]["uuid"]["string"] for d in devices}) == 8


def test_device_class_selects_whole_gpus_of_the_driver() -> None:
    expression = device_class()["spec"]["selectors"][0]["cel"]["expression"]
    assert expression == (
        "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"
    )


class _Store:
    def __init__(self, objects: dict[Any, list[dict[str, Any]]]) -> None:
        self.objects = objects

    def peek(self, key: Any, namespace: str | None, name: str) -> dict[str, Any] | None:
        return next((o for o in self.objects.get(key, []) if o["metadata"]["name"] == name), None)

    def scan(self, key: Any, namespace: str | None = None) -> list[dict[str, Any]]:
        return self.objects.get(key, [])


def _pod(statuses: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
        "spec": {"resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": "t"}]},
        "status": {"resourceClaimStatuses": statuses},
    }


def _claim(allocated: bool, reserved_uid: str | None) -> dict[str, Any]:
    status: dict[str, Any] = {}
    if allocated:
        status["allocation"] = {"devices": {"results": [{"device": "gpu-0"}]}}
    if reserved_uid:
        status["reservedFor"] = [{"resource": "pods", "name": "p", "uid": reserved_uid}]
    return {"metadata": {"name": "p-gpus-x"}, "status": status}


def test_kubelet_waits_until_each_claim_is_allocated_and_reserved_for_the_pod() -> None:
    named = [{"name": "gpus", "resourceClaimName": "p-gpus-x"}]
    assert "no ResourceClaim" in str(unprepared_claim(_Store({}), _pod([])))
    assert "not found" in str(unprepared_claim(_Store({}), _pod(named)))
    for claim, expected in (
        (_claim(False, None), "not allocated"),
        (_claim(True, None), "not reserved"),
        (_claim(True, "another-pod"), "not reserved"),
    ):
        assert expected in str(unprepared_claim(_Store({RESOURCE_CLAIMS: [claim]}), _pod(named)))
    ready = _Store({RESOURCE_CLAIMS: [_claim(True, "u1")], PODS: []})
    assert unprepared_claim(ready, _pod(named)) is None
    assert unprepared_claim(ready, {"metadata": {}, "spec": {}}) is None  # no claims at all


def test_the_stand_in_vllm_profiles_the_dra_nodes_product() -> None:
    obj = build_resource_slice(NodeGroup("NVIDIA-B200", 8, 1, dra=True), 0, "uid")
    store = _Store({RESOURCE_SLICES: [obj]})
    assert dra_gpu_product(store, "sim-b200-dra-0") == "NVIDIA-B200"  # type: ignore[arg-type]
    assert dra_gpu_product(store, "sim-h200-0") is None  # type: ignore[arg-type]
