"""sizing/dra.py by behaviour: the driver's ResourceSlices read as GPU nodes and its
ResourceClaims as GPUs in use (docs/dra.md: the driver publishes per node a pool named after the
node, one device per GPU with ``type``, ``productName``, ``cudaComputeCapability`` and the
capacity ``memory``; an allocation holds one result per device and the node selector of its
node)."""

from __future__ import annotations

from typing import Any

import pytest

from nemotron_operator.sizing.dra import DRIVER, claim_node_gpus, dra_node_facts, slice_gpus


def device(
    product: Any = "NVIDIA H200",
    *,
    memory: Any = "141Gi",
    capability: Any = "9.0.0",
    kind: Any = "gpu",
) -> dict[str, Any]:
    attributes: dict[str, Any] = {}
    if product is not None:
        attributes["productName"] = {"string": product}
    if kind is not None:
        attributes["type"] = {"string": kind}
    if capability is not None:
        attributes["cudaComputeCapability"] = {"version": capability}
    out: dict[str, Any] = {"name": "gpu-0", "attributes": attributes}
    if memory is not None:
        out["capacity"] = {"memory": {"value": memory}}
    return out


def resource_slice(*devices: dict[str, Any], node: Any = "node-a", driver: str = DRIVER) -> Any:
    return {"spec": {"driver": driver, "nodeName": node, "devices": list(devices)}}


def only_gpu(**kwargs: Any) -> dict[str, Any]:
    gpus = slice_gpus(resource_slice(device(**kwargs)))
    assert len(gpus) == 1
    return gpus[0]


@pytest.mark.parametrize(
    ("memory", "mib"),
    [
        ("141Gi", 141 * 1024),  # three digits before the suffix
        ("80Gi", 80 * 1024),
        ("8Gi", 8 * 1024),  # one digit before a two-letter suffix
        ("12aGi", None),
        ("150000Mi", 150000),
        (str(80 * 2**30), 80 * 1024),  # plain bytes
        ("80G", 80 * 10**9 // 2**20),  # decimal: not a whole number of MiB
        ("80GB", None),  # not a Kubernetes quantity
        ("lots", None),
        (None, None),  # no memory capacity published
    ],
)
def test_memory_quantity_reads_as_whole_mib(memory: Any, mib: int | None) -> None:
    got = only_gpu(memory=memory)["memory_mib"]
    assert got == mib
    assert got is None or type(got) is int


@pytest.mark.parametrize(
    ("version", "capability"),
    [
        ("9.0.0", (9, 0)),
        ("8.6.0", (8, 6)),  # the minor is the second part, not the patch
        ("10.0", (10, 0)),  # major.minor alone is enough
        ("9", None),
        ("9.x.0", None),
        ("x.0.0", None),
        ("", None),
        (None, None),  # no capability attribute published
    ],
)
def test_compute_capability_is_major_minor(version: Any, capability: Any) -> None:
    assert only_gpu(capability=version)["capability"] == capability


def test_attribute_not_in_the_typed_form_counts_as_absent() -> None:
    odd = device()
    odd["attributes"]["type"] = "gpu"  # a bare string, not {"string": "gpu"}
    assert [g["product"] for g in slice_gpus(resource_slice(odd))] == ["NVIDIA-H200"]


def test_device_without_type_counts_mig_and_nameless_devices_do_not() -> None:
    gpus = slice_gpus(
        resource_slice(device(kind=None), device(kind="mig"), device(product=None), device())
    )
    assert [(g["node"], g["product"]) for g in gpus] == [("node-a", "NVIDIA-H200")] * 2


def test_slices_of_other_drivers_or_without_a_node_give_no_gpus() -> None:
    assert slice_gpus(resource_slice(device(), driver="other.example.com")) == []
    assert slice_gpus(resource_slice(device(), node=None)) == []
    assert slice_gpus(resource_slice(device(), node="")) == []


def test_node_facts_take_the_most_common_product_not_the_last_by_name() -> None:
    a100 = device("NVIDIA A100-SXM4-80GB", memory="80Gi", capability="8.0.0")
    facts = dra_node_facts([resource_slice(a100, a100, a100, device())])
    assert facts == {
        "node-a": {
            "product": "NVIDIA-A100-SXM4-80GB",
            "gpus": 3,
            "memory_mib": 80 * 1024,
            "capability": (8, 0),
        }
    }


def test_node_facts_without_memory_or_capability_are_none() -> None:
    facts = dra_node_facts([resource_slice(device(memory=None, capability=None))])
    assert facts["node-a"]["memory_mib"] is None
    assert facts["node-a"]["capability"] is None
    assert facts["node-a"]["gpus"] == 1


def claim(results: list[dict[str, Any]], selector: Any = None) -> dict[str, Any]:
    allocation: dict[str, Any] = {"devices": {"results": results}}
    if selector is not None:
        allocation["nodeSelector"] = selector
    return {"status": {"allocation": allocation}}


def result(pool: Any = "pool-node", driver: str = DRIVER) -> dict[str, Any]:
    out: dict[str, Any] = {"driver": driver, "device": "gpu-0"}
    if pool is not None:
        out["pool"] = pool
    return out


def name_selector(*names: str, key: str = "metadata.name") -> dict[str, Any]:
    return {"nodeSelectorTerms": [{"matchFields": [{"key": key, "values": list(names)}]}]}


def test_claim_node_is_the_node_selectors_name_over_the_pool() -> None:
    got = claim_node_gpus(claim([result("pool-x"), result("pool-x")], name_selector("node-a")))
    assert got == ("node-a", 2)


def test_claim_selector_that_names_no_single_node_falls_back_to_the_pool() -> None:
    two = claim([result("node-b")], name_selector("node-a", "node-b"))
    assert claim_node_gpus(two) == ("node-b", 1)
    other_key = claim([result("node-b")], name_selector("node-a", key="metadata.uid"))
    assert claim_node_gpus(other_key) == ("node-b", 1)


def test_claim_without_selector_is_on_its_first_results_pool() -> None:
    assert claim_node_gpus(claim([result("node-b")])) == ("node-b", 1)
    mixed = claim([result("node-b"), result("node-c", driver="other.example.com")])
    assert claim_node_gpus(mixed) == ("node-b", 1)


def test_claim_with_no_node_anywhere_or_no_driver_devices_is_none() -> None:
    assert claim_node_gpus(claim([result(pool=None)])) is None
    assert claim_node_gpus(claim([result(driver="other.example.com")])) is None
    assert claim_node_gpus({"status": {}}) is None
