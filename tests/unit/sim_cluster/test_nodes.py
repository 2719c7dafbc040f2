from __future__ import annotations

import itertools

import pytest

from nemotron_sim.agents.node_objects import (
    GpuFacts,
    NodeGroup,
    NodeSpecError,
    build_nodes,
)
from sim_cluster.node_spec import parse_node_spec

FACTS = {
    "NVIDIA-H200": GpuFacts(143771, 9, 0, "hopper"),
    "NVIDIA-B200": GpuFacts(183359, 10, 0, "blackwell"),
    "NVIDIA-GB10": GpuFacts(None, 12, 1, "blackwell"),
}


def test_parse_compact_description() -> None:
    assert parse_node_spec("NVIDIA-H200:8x2, NVIDIA-B200:8x1") == [
        NodeGroup("NVIDIA-H200", 8, 2),
        NodeGroup("NVIDIA-B200", 8, 1),
    ]


@pytest.mark.parametrize(
    "text", ["NVIDIA-H200", "NVIDIA-H200:8", "NVIDIA-H200:0x1", "H200:8x0", "A:1x1,A:2x1", ""]
)
def test_parse_rejects_bad_descriptions(text: str) -> None:
    with pytest.raises(NodeSpecError):
        parse_node_spec(text)


def test_nodes_carry_gfd_labels_gpus_and_the_gpu_taint() -> None:
    ips = (f"127.9.0.{i}" for i in itertools.count(1))
    nodes = build_nodes(
        parse_node_spec("NVIDIA-H200:8x2,NVIDIA-B200:4x1"), FACTS.__getitem__, lambda: next(ips)
    )
    assert [n["metadata"]["name"] for n in nodes] == ["sim-h200-0", "sim-h200-1", "sim-b200-0"]
    b200 = nodes[2]
    labels = b200["metadata"]["labels"]
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-B200"
    assert labels["nvidia.com/gpu.memory"] == "183359"
    assert labels["nvidia.com/gpu.count"] == "4"
    assert labels["nvidia.com/gpu.compute.major"] == "10"
    assert labels["nvidia.com/gpu.family"] == "blackwell"
    assert b200["status"]["allocatable"]["nvidia.com/gpu"] == "4"
    assert b200["status"]["capacity"]["nvidia.com/gpu"] == "4"
    assert b200["spec"]["taints"] == [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    ]
    ready = [c for c in b200["status"]["conditions"] if c["type"] == "Ready"]
    assert ready[0]["status"] == "True"
    assert b200["status"]["addresses"][0] == {"type": "InternalIP", "address": "127.9.0.3"}


def test_memory_label_is_omitted_when_nvml_reports_none() -> None:
    (node,) = build_nodes(
        parse_node_spec("NVIDIA-GB10:1x1"), FACTS.__getitem__, lambda: "127.9.0.1"
    )
    assert "nvidia.com/gpu.memory" not in node["metadata"]["labels"]
