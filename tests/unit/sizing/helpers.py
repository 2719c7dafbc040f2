"""Small builders shared by the sizing tests."""

from __future__ import annotations

from typing import Any

from nemotron_operator.api import EngineSpec, NemotronDeploymentSpec
from nemotron_operator.catalog import GpuProduct, ModelEntry, lookup_gpu, lookup_model
from nemotron_operator.sizing import Layout, LayoutMemory, evaluate, resolve_settings

SUPER_VL_BF16 = "nvidia/NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-BF16"
SUPER_BF16 = "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16"
SUPER_FP8 = "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8"
SUPER_NVFP4 = "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4"
NANO_BF16 = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
H8B = "nvidia/Nemotron-H-8B-Base-8K"
H100 = "NVIDIA-H100-80GB-HBM3"


def model(hf_id: str) -> ModelEntry:
    entry = lookup_model(hf_id)
    assert entry is not None, hf_id
    return entry


def gpu(name: str) -> GpuProduct:
    product = lookup_gpu(name)
    assert product is not None, name
    return product


def spec(hf_id: str, **sections: Any) -> NemotronDeploymentSpec:
    """A spec from camelCase sections, e.g. ``spec(ID, engine={"maxModelLen": 8192})``."""
    return NemotronDeploymentSpec.model_validate({"model": {"id": hf_id}, **sections})


def layout_memory(
    hf_id: str,
    tensor_parallel: int = 1,
    *,
    gpu_name: str = "NVIDIA-B300-SXM6-AC",
    pipeline_parallel: int = 1,
    draft_tokens: int | None = None,
    **engine: Any,
) -> LayoutMemory:
    """The memory model of one layout; ``draft_tokens`` 0 turns MTP off."""
    entry = model(hf_id)
    if draft_tokens is not None:
        engine["speculative_decoding"] = (
            {"method": "none"}
            if draft_tokens == 0
            else {"method": "mtp", "num_speculative_tokens": draft_tokens}
        )
    settings = resolve_settings(EngineSpec.model_validate(engine), entry)
    layout = Layout(
        tensor_parallel, pipeline_parallel, entry.is_moe and tensor_parallel * pipeline_parallel > 1
    )
    return evaluate(entry, gpu(gpu_name), layout, settings)
