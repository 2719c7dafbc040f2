"""Small builders shared by the sizing tests."""

from __future__ import annotations

from typing import Any

import pytest

from nemotron_operator.api import (
    ArchitectureSpec,
    EngineSpec,
    NemotronDeploymentSpec,
    ParameterCounts,
)
from nemotron_operator.catalog import GpuProduct, ModelEntry, lookup_gpu, lookup_model
from nemotron_operator.sizing import Layout, LayoutMemory, cache, evaluate, resolve_settings

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


# The facts these tests reproduce (docs/model-facts.md §2-3) were derived from vLLM 0.31's code:
# the helpers plan with the 0.31 profile unless a test names another image. The other releases'
# numbers are tests/unit/sizing/test_engine_profiles.py's.
FACTS_IMAGE = "vllm/vllm-openai:v0.31.0"


def spec(hf_id: str, **sections: Any) -> NemotronDeploymentSpec:
    """A spec from camelCase sections, e.g. ``spec(ID, engine={"maxModelLen": 8192})``, planned
    for ``FACTS_IMAGE`` unless ``engine`` names an image."""
    engine = {"image": FACTS_IMAGE, **sections.pop("engine", {})}
    return NemotronDeploymentSpec.model_validate(
        {"model": {"id": hf_id}, "engine": engine, **sections}
    )


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
    engine.setdefault("image", FACTS_IMAGE)
    settings = resolve_settings(EngineSpec.model_validate(engine), entry)
    layout = Layout(tensor_parallel, pipeline_parallel, entry.is_moe and tensor_parallel > 1)
    return evaluate(entry, gpu(gpu_name), layout, settings)


def super_as_architecture(**changes: object) -> ArchitectureSpec:
    """Nemotron 3 Super BF16 written as an explicit spec.model.architecture."""
    entry = model(SUPER_BF16)
    split = entry.parameter_split()
    fields: dict[str, object] = {
        "layer_pattern": entry.layer_pattern,
        "hidden_size": entry.hidden_size,
        "num_attention_heads": entry.num_attention_heads,
        "num_key_value_heads": entry.num_key_value_heads,
        "head_dim": entry.head_dim,
        "mamba_num_heads": entry.mamba_num_heads,
        "mamba_head_dim": entry.mamba_head_dim,
        "ssm_state_size": entry.ssm_state_size,
        "mamba_n_groups": entry.mamba_n_groups,
        "n_routed_experts": entry.n_routed_experts,
        "num_experts_per_tok": entry.num_experts_per_tok,
        "n_shared_experts": entry.n_shared_experts,
        "vocab_size": entry.vocab_size,
        "max_position_embeddings": entry.max_position_embeddings,
        "mtp_layers": 1,
        "parameters": ParameterCounts(
            routed_experts=split.routed_experts, other=split.other, mtp=split.mtp
        ),
    }
    fields.update(changes)
    return ArchitectureSpec.model_validate(fields)


def assert_plans_as_the_release(
    release: str, case: dict[str, Any], row: dict[str, Any], pool_bytes: int
) -> None:
    """The planner's layout for a recipe case (``case``: its inputs as the reference scripts
    write them) equals what the release computed (``row``), blocks and concurrency for
    ``pool_bytes`` included (tests/unit/sizing/test_*_reference.py)."""
    memory = layout_memory(
        case["model"],
        case["tp"],
        draft_tokens=case["spec_tokens"],
        image=f"vllm/vllm-openai:v{release}",
        kv_cache_dtype=case["kv_dtype"],
        mamba_ssm_cache_dtype=case["ssm_dtype"],
        enable_prefix_caching=case["prefix_caching"],
        max_model_len=case["max_model_len"],
    )
    assert memory.block_size == row["blockSize"]
    assert memory.attention_page_per_token == row["attentionPagePerToken"]
    assert memory.kv_bytes_per_token == row["kvBytesPerToken"]
    assert memory.page_bytes == row["pageBytes"]
    assert len(memory.groups) == row["groups"]
    assert memory.binding.layers_per_group == row["layersPerGroup"]
    assert memory.blocks_per_request == row["blocksPerRequest"]
    blocks = cache.num_blocks(pool_bytes, memory.page_bytes, memory.binding.layers_per_group)
    assert blocks == row["blocksFor64GiB"]
    assert blocks / memory.blocks_per_request == pytest.approx(row["concurrencyFor64GiB"], 1e-12)
