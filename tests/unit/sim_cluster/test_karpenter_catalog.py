"""The kwok provider's instance types from the GPU catalog, and what the simulated kubelet and GFD
make of a node Karpenter created."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from nemotron_operator.catalog.gpus import GPUS, lookup_gpu
from sim_cluster.karpenter.adopt import booted_status, discovered_labels, is_karpenter_node
from sim_cluster.karpenter.catalog import gpus_of, instance_types
from sim_cluster.karpenter.process import CACHE, cache_key, node_class, version
from sim_cluster.node_spec import parse_node_spec


def by_name() -> dict[str, dict[str, Any]]:
    return {t["name"]: t for t in instance_types()}


def test_every_catalog_gpu_has_its_full_node_and_the_smaller_ones() -> None:
    types = by_name()
    for gpu in GPUS:
        full = types[f"sim-{gpu.gpus_per_node}x-{gpu.name.lower()}"]
        assert full["resources"]["nvidia.com/gpu"] == str(gpu.gpus_per_node)
        assert f"sim-1x-{gpu.name.lower()}" in types
        assert f"sim-{gpu.gpus_per_node * 2}x-{gpu.name.lower()}" not in types
    h200 = types["sim-8x-nvidia-h200"]
    assert h200["resources"]["cpu"] == "224"
    assert h200["resources"]["memory"] == "2048Gi"
    assert h200["architecture"] == "amd64"
    assert types["sim-4x-nvidia-gb200"]["architecture"] == "arm64"
    assert "sim-8x-nvidia-gb200" not in types  # a GB200 compute tray holds 4


def test_offerings_are_kwok_requirements_without_gpu_labels() -> None:
    for offering in by_name()["sim-2x-nvidia-b200"]["offerings"]:
        keys = {r["key"] for r in offering["Requirements"]}
        assert keys == {"karpenter.sh/capacity-type", "topology.kubernetes.io/zone"}
        assert offering["Available"] is True
    prices = {
        r["values"][0]: o["Price"]
        for o in by_name()["sim-8x-nvidia-h200"]["offerings"]
        for r in o["Requirements"]
        if r["key"] == "karpenter.sh/capacity-type"
    }
    assert prices["spot"] < prices["on-demand"]


def test_instance_type_names_resolve_back_to_their_gpus() -> None:
    for item in instance_types():
        found = gpus_of(item["name"])
        assert found is not None
        assert str(found[1]) == item["resources"]["nvidia.com/gpu"]
    assert gpus_of("p5.48xlarge") is None
    assert gpus_of("sim-8x-nvidia-nonexistent") is None


def karpenter_node(instance_type: str = "sim-8x-nvidia-h200") -> dict[str, Any]:
    return {
        "metadata": {
            "name": "kwok-gpu-abc-1",
            "uid": "u1",
            "labels": {"node.kubernetes.io/instance-type": instance_type},
        },
        "spec": {"providerID": "kwok://kwok-gpu-abc-1", "podCIDR": "10.244.3.0/24"},
        # What the kwok provider writes: capacity = the pods' requests, allocatable its own.
        "status": {
            "capacity": {"cpu": "4", "nvidia.com/gpu": "2"},
            "allocatable": {"cpu": "223900m", "memory": "2097142Mi", "nvidia.com/gpu": "8"},
        },
    }


def test_a_booted_node_reports_the_instance_types_capacity_and_is_ready() -> None:
    status = booted_status(karpenter_node(), "10.1.0.9", "v1.37.2-sim")
    assert status["capacity"]["nvidia.com/gpu"] == "8"
    assert status["capacity"]["cpu"] == "224"
    assert status["allocatable"]["cpu"] == "223900m"  # what Karpenter computed stays
    assert status["addresses"][0] == {"type": "InternalIP", "address": "10.1.0.9"}
    ready = [c for c in status["conditions"] if c["type"] == "Ready"]
    assert ready[0]["status"] == "True"
    assert status["nodeInfo"]["kubeletVersion"] == "v1.37.2-sim"


def test_gfd_labels_come_from_the_instance_type() -> None:
    labels = discovered_labels(karpenter_node("sim-2x-nvidia-b200"))
    b200 = lookup_gpu("NVIDIA-B200")
    assert b200 is not None
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-B200"
    assert labels["nvidia.com/gpu.count"] == "2"
    assert labels["nvidia.com/gpu.memory"] == str(b200.memory_mib)
    assert discovered_labels(karpenter_node("m5.large")) == {}


def test_only_kwok_provider_nodes_are_adopted() -> None:
    assert is_karpenter_node(karpenter_node())
    assert not is_karpenter_node({"metadata": {"name": "x"}, "spec": {"providerID": "sim://x"}})
    assert not is_karpenter_node({"metadata": {"name": "x"}, "spec": {}})


def test_recipe_and_node_class() -> None:
    assert version() == "v1.14.1"
    assert cache_key().startswith("karpenter-v1.14.1_")
    assert node_class("30s")["spec"] == {"nodeRegistrationDelay": "30s"}


def test_the_build_script_and_the_simulator_agree_on_the_directory() -> None:
    script = Path(__file__).resolve().parents[3] / "hack" / "build-karpenter.sh"
    printed = subprocess.run(
        ["bash", str(script), "--print-dir"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert printed == str(CACHE / cache_key())


def test_none_is_a_cluster_without_gpu_nodes() -> None:
    assert parse_node_spec("none") == []
    assert parse_node_spec(" None ") == []
