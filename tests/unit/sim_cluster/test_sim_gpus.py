"""The simulated GPUs are the simulator's own table (nemotron_sim/data/gpus.json), not the
operator's catalog; the two are transcriptions of the same sources (docs/model-facts.md §5) and
must agree, so a typo in either shows here instead of being copied into the witness."""

from __future__ import annotations

import pytest

from nemotron_operator.catalog.gpus import GPUS
from nemotron_operator.catalog.gpus import lookup_gpu as catalog_lookup
from nemotron_sim.gpus import MIB, gpus, lookup_gpu


def test_every_simulated_gpu_is_the_catalogs_product() -> None:
    assert [g.name for g in gpus()] == [g.name for g in GPUS]
    for gpu in gpus():
        product = catalog_lookup(gpu.name)
        assert product is not None, gpu.name
        assert (gpu.memory_bytes, gpu.memory_reported) == (
            product.memory_bytes,
            product.memory_reported,
        ), gpu.name
        assert gpu.compute_capability == product.compute_capability, gpu.name
        assert (gpu.family, gpu.gpus_per_node) == (product.family, product.gpus_per_node)
        assert gpu.aliases == product.aliases, gpu.name


def test_reported_memory_is_whole_mib_and_gb10_reports_none() -> None:
    assert all(g.memory_bytes % MIB == 0 for g in gpus() if g.memory_reported)
    gb10 = lookup_gpu("gb10")
    assert gb10 is not None
    assert not gb10.memory_reported


@pytest.mark.parametrize(
    ("name", "found"),
    [
        ("NVIDIA-H200", "NVIDIA-H200"),
        ("nvidia-h200", "NVIDIA-H200"),
        ("h100-sxm", "NVIDIA-H100-80GB-HBM3"),
        ("NVIDIA-H200-SHARED", "NVIDIA-H200-SHARED"),
        ("NVIDIA-H300", None),
    ],
)
def test_lookup_by_name_alias_and_shared_suffix(name: str, found: str | None) -> None:
    gpu = lookup_gpu(name)
    assert (gpu.name if gpu else None) == found
