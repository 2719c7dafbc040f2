"""The stand-in's "memory profile": what a vLLM rank would measure before sizing its KV pool.

A second, deliberately separate account of vLLM's startup arithmetic (docs/model-facts.md §2.4):
the weights each rank loads (sharded as vLLM shards them), and the non-KV memory it measures —
the transient peak of a dummy forward of ``max_num_batched_tokens``, the sampler's logits, one
vision-encoder pass, CUDA graphs, non-torch allocations and NCCL buffers. The operator's planner
estimates the same terms; the simulated cluster may not import it, so the two agree only as far as
both follow the facts. docs/observability.md records how far they agree.
"""

from __future__ import annotations

from dataclasses import dataclass

from nemotron_operator.catalog import params
from nemotron_operator.catalog.models import (
    EMBEDDING,
    FINAL_NORM,
    LM_HEAD,
    MTP,
    VISION,
    ModelEntry,
)

MIB = 2**20
# Fitted to vLLM's startup logs (docs/sizing.md §9): the graphs' private pool, and the profile
# run's torch peak beyond activations and logits (allocator rounding, workspaces).
CUDA_GRAPH_BYTES = 512 * MIB
PROFILE_BASE_BYTES = 410 * MIB
NON_TORCH_BYTES = 512 * MIB
NCCL_BYTES = 768 * MIB
LOGITS_BYTES = 8  # fp32 logits and one fp32 working copy per vocab entry
SCAN_CHUNK = 128  # Mamba-2 chunk size of the Nemotron-H configs
VIT_LIVE_TENSORS = 8
UNKNOWN_VISION_BYTES = 1024 * MIB
_REPLICATED = frozenset({params.ROUTER, params.MOE_LATENT, params.NORMS, params.VISION})


def cdiv(a: int, b: int) -> int:
    """Integer division rounded up."""
    return -(-a // b)


@dataclass(frozen=True)
class Rank:
    tp: int
    pp: int
    expert_parallel: bool
    spec_tokens: int
    max_num_seqs: int
    max_num_batched_tokens: int


def stage_layers(layers: int, pp: int) -> list[range]:
    """vLLM's even split of layers over pipeline stages, the remainder before the last stage."""
    sizes = [layers // pp] * pp
    for i in range(2, layers % pp + 2):
        sizes[-i] += 1
    starts = [sum(sizes[:i]) for i in range(pp)]
    return [range(start, start + size) for start, size in zip(starts, sizes, strict=True)]


def _part_on_rank(model: ModelEntry, name: str, rank: Rank) -> int:
    half_bits_total = 0
    for category, count in model.part(name):
        if category in _REPLICATED:
            on_rank = count
        elif category == params.ATTENTION_KV:
            heads = model.num_key_value_heads
            on_rank = count * max(1, heads // rank.tp) // heads
        elif category == params.ROUTED_EXPERTS and rank.expert_parallel and model.n_routed_experts:
            experts = model.n_routed_experts
            on_rank = count * cdiv(experts, rank.tp) // experts
        else:
            on_rank = cdiv(count, rank.tp)
        # The checkpoint's own precision per part (the MTP head and embeddings stay BF16, except
        # where the released sizes show quantized MTP experts).
        half_bits_total += on_rank * model.half_bits(name, category)
    return cdiv(half_bits_total, 16)


def weights(model: ModelEntry, rank: Rank, stage: int) -> int:
    layers = stage_layers(model.num_hidden_layers, rank.pp)
    per_kind = {kind: _part_on_rank(model, kind, rank) for kind in params.LAYER_KINDS}
    total = sum(per_kind[model.layer_pattern[i]] for i in layers[stage])
    if stage == 0:
        total += _part_on_rank(model, EMBEDDING, rank) + _part_on_rank(model, VISION, rank)
    if stage == rank.pp - 1:
        total += _part_on_rank(model, LM_HEAD, rank) + _part_on_rank(model, FINAL_NORM, rank)
        if rank.spec_tokens:
            total += _part_on_rank(model, MTP, rank)
    return total


def _activation_per_token(model: ModelEntry, rank: Rank, kinds: frozenset[str]) -> int:
    d, t, bf16 = model.dims, rank.tp, 2
    widest = 0
    if "M" in kinds:
        in_proj = 2 * d.mamba_d_inner + 2 * d.mamba_n_groups * d.ssm_state_size + d.mamba_num_heads
        chunk_states = d.mamba_num_heads * d.mamba_head_dim * d.ssm_state_size * 4
        widest = max(
            widest,
            in_proj * bf16 // t + d.mamba_d_inner * 4 // t + chunk_states // t // SCAN_CHUNK,
        )
    if "*" in kinds:
        qkv = (d.num_attention_heads + 2 * d.num_key_value_heads) * d.head_dim
        widest = max(widest, (qkv + d.num_attention_heads * d.head_dim) * bf16 // t)
    if "E" in kinds:
        if d.moe_intermediate_size:
            inter = (
                d.moe_intermediate_size if rank.expert_parallel else d.moe_intermediate_size // t
            )
            expert_dim = d.moe_latent_size or d.hidden_size
            shared = d.n_shared_experts * (d.moe_shared_expert_intermediate_size or 0)
            moe = d.num_experts_per_tok * (2 * inter + expert_dim) * bf16
            widest = max(widest, moe + 2 * shared * bf16 // t)
        else:
            widest = max(widest, d.num_experts_per_tok * 3 * d.hidden_size * bf16)
    if "-" in kinds and d.intermediate_size:
        widest = max(widest, 2 * d.intermediate_size * bf16 // t)
    return 3 * d.hidden_size * bf16 + widest


def _vision_pass(model: ModelEntry, batched: int) -> int:
    tower = model.vision_tower
    if tower is None:
        return UNKNOWN_VISION_BYTES
    budget = max(batched, tower.max_tokens_per_image)
    images = max(1, budget // tower.max_tokens_per_image)
    vit = images * tower.max_patches_per_image * tower.width * 2 * VIT_LIVE_TENSORS
    return budget * model.hidden_size * 2 + vit


def non_kv(model: ModelEntry, rank: Rank, stage: int) -> int:
    """Bytes a rank of ``stage`` measures besides weights and the KV pool."""
    total = transient(model, rank, stage) + CUDA_GRAPH_BYTES + NON_TORCH_BYTES
    if rank.tp * rank.pp > 1:
        total += NCCL_BYTES
    return total


def transient(model: ModelEntry, rank: Rank, stage: int) -> int:
    """The transient peak of the profile run (activations, logits, one encoder pass): freed
    before vLLM 0.34's extensible KV cache measures, which keeps it free plus a margin."""
    kinds = frozenset(
        model.layer_pattern[i] for i in stage_layers(model.num_hidden_layers, rank.pp)[stage]
    )
    total = rank.max_num_batched_tokens * _activation_per_token(model, rank, kinds)
    if stage == rank.pp - 1:
        rows = rank.max_num_seqs * (1 + rank.spec_tokens)
        total += rows * model.vocab_size * LOGITS_BYTES
    if stage == 0 and model.vision:
        total += _vision_pass(model, rank.max_num_batched_tokens)
    return total + PROFILE_BASE_BYTES
