"""Nemotron 3 Ultra 550B-A55B and the other entries issue 13 added, held to published figures.

Every expected number names its source (docs/model-facts.md §1.4 and §3.1).
"""

from __future__ import annotations

import pytest

from nemotron_operator.catalog import ModelEntry, lookup_model

GIB = 1024**3
ULTRA_BF16 = "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16"
ULTRA_BASE = "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-Base-BF16"
ULTRA_NVFP4 = "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-NVFP4"
SUPER_VL_BASE = "nvidia/NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-Base-BF16"


def entry_of(hf_id: str = ULTRA_BF16) -> ModelEntry:
    entry = lookup_model(hf_id)
    assert entry is not None, hf_id
    return entry


def test_ultra_dimensions_are_table_1_of_the_tech_report() -> None:
    # NVIDIA Nemotron 3 Ultra tech report, Table 1 [P].
    d = entry_of().dims
    assert (d.hidden_size, d.num_attention_heads, d.num_key_value_heads, d.head_dim) == (
        8192,
        64,
        2,
        128,
    )
    assert (d.mamba_num_heads, d.mamba_head_dim, d.ssm_state_size, d.mamba_n_groups) == (
        256,
        64,
        128,
        8,
    )
    assert (d.n_routed_experts, d.num_experts_per_tok, d.moe_latent_size) == (512, 22, 2048)
    assert (d.moe_intermediate_size, d.moe_shared_expert_intermediate_size) == (5120, 10240)


def test_ultra_layer_pattern_has_108_layers_and_the_published_attention_positions() -> None:
    entry = entry_of()
    assert entry.num_hidden_layers == 108  # Table 1 [P]
    assert tuple(entry.layer_count(k) for k in "ME*-") == (48, 48, 12, 0)  # released config [S]
    attention = [i for i, k in enumerate(entry.layer_pattern) if k == "*"]
    assert attention == [7, 14, 23, 32, 39, 48, 57, 64, 73, 82, 89, 98]  # [S]
    assert entry.mtp_layers == 1
    assert entry.mtp_pattern == "*E"


def test_ultra_parameter_count_reproduces_nvidia_s_550b() -> None:
    split = entry_of().parameter_split()
    assert split.routed_experts + split.other == pytest.approx(550e9, rel=0.002)  # 550 B [P]
    assert split.total == pytest.approx(561e9, rel=0.002)  # "561B" with MTP, GGUF table [S]


@pytest.mark.parametrize(
    ("hf_id", "published_bytes", "rel"),
    [
        (ULTRA_BF16, 1121e9, 0.001),  # released BF16 repo 1121 GB [S]; "~1.1 TB" [P]
        (ULTRA_NVFP4, 352e9, 0.002),  # released NVFP4 repo 352 GB [S]
        (ULTRA_NVFP4, 330 * GIB, 0.01),  # tech report "NVFP4 checkpoint ~330 GiB" [P]
    ],
)
def test_ultra_checkpoint_sizes_match_the_releases(
    hf_id: str, published_bytes: float, rel: float
) -> None:
    assert entry_of(hf_id).weights_bytes() == pytest.approx(published_bytes, rel=rel)


def test_ultra_serving_facts() -> None:
    instruct, base = entry_of(), entry_of(ULTRA_BASE)
    assert instruct.max_position_embeddings == 262144  # released config [S]
    assert instruct.trained_context == 1048576  # model card "up to 1M" [P]
    assert instruct.default_reasoning_parser == "nemotron_v3"  # NVIDIA's Ultra guides [P]
    assert base.default_reasoning_parser is None
    assert not instruct.trust_remote_code  # NemotronHForCausalLM is built into vLLM


def test_facts_without_a_primary_source_are_marked_unverified() -> None:
    assert entry_of().unverified
    assert entry_of(SUPER_VL_BASE).unverified
    assert entry_of("nvidia/NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-NVFP4").unverified
    # Lightning's ids are in vLLM's recipes [S]: only the inferred MTP storage stays unverified.
    lightning = entry_of("nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4").unverified
    assert not any("Hugging Face id" in fact for fact in lightning)
    assert any("MTP routed experts" in fact for fact in lightning)


def test_super_vl_base_weighs_the_same_as_the_post_trained_checkpoint() -> None:
    base = entry_of(SUPER_VL_BASE)
    post = entry_of("nvidia/NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-BF16")
    assert base.weights_bytes() == post.weights_bytes()
    assert round(base.weights_bytes() / GIB, 1) == 231.8  # the seed's "231.8 GB" (GiB)
    assert base.vision
