"""The GPU catalog: GFD names, reported memory, lookups."""

from __future__ import annotations

import pytest

from nemotron_operator.catalog import GPUS, lookup_gpu

MIB = 1024**2


def test_the_issue_s_products_are_present_with_gfd_names() -> None:
    names = {g.name for g in GPUS}
    assert names == {
        "NVIDIA-H100-80GB-HBM3",
        "NVIDIA-H200",
        "NVIDIA-B200",
        "NVIDIA-B300-SXM6-AC",
        "NVIDIA-GB200",
        "NVIDIA-GB300",
        "NVIDIA-GB10",
        "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition",
        "NVIDIA-L40S",
        "NVIDIA-A100-SXM4-80GB",
    }


@pytest.mark.parametrize(
    ("name", "mib"),
    [  # nvidia-smi memory.total (model-facts.md §5)
        ("NVIDIA-H100-80GB-HBM3", 81559),
        ("NVIDIA-H200", 143771),
        ("NVIDIA-B200", 183359),
        ("NVIDIA-A100-SXM4-80GB", 81920),
    ],
)
def test_memory_is_what_the_device_reports(name: str, mib: int) -> None:
    gpu = lookup_gpu(name)
    assert gpu is not None
    assert gpu.memory_bytes == mib * MIB
    assert gpu.memory_mib == mib


def test_fp4_only_on_blackwell_and_fp8_not_on_ampere() -> None:
    for gpu in GPUS:
        assert gpu.fp4 == (gpu.family == "blackwell"), gpu.name
        assert gpu.fp8 == (gpu.compute_capability >= (8, 9)), gpu.name


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("nvidia-h200", "NVIDIA-H200"),
        ("h200", "NVIDIA-H200"),
        ("H100", "NVIDIA-H100-80GB-HBM3"),
        ("gb10", "NVIDIA-GB10"),
    ],
)
def test_lookup_accepts_gfd_names_and_aliases(query: str, expected: str) -> None:
    gpu = lookup_gpu(query)
    assert gpu is not None
    assert gpu.name == expected


def test_time_sliced_products_resolve_to_their_silicon() -> None:
    gpu = lookup_gpu("NVIDIA-H200-SHARED")
    assert gpu is not None
    assert gpu.name == "NVIDIA-H200-SHARED"
    assert gpu.memory_bytes == 143771 * MIB


def test_unknown_product_is_none() -> None:
    assert lookup_gpu("NVIDIA-V100") is None


def test_gb10_has_no_memory_label() -> None:
    gpu = lookup_gpu("NVIDIA-GB10")
    assert gpu is not None
    assert not gpu.memory_reported
    assert gpu.gpus_per_node == 1
