"""Weights resident on one GPU of a layout: each part sharded the way vLLM shards it.

- Routed experts: split across the expert-parallel group (``--enable-expert-parallel``: whole
  experts, ``cdiv(n_experts, TP)`` per rank) or inside every expert across the TP ranks; either
  way about 1/TP per rank.
- Attention q/o, Mamba projections and conv, shared experts, dense MLPs: TP-sharded.
- Attention k/v: sharded by KV head, replicated when TP exceeds the KV heads
  (``get_num_kv_heads``, model-facts.md §2.1).
- Embedding and LM head: vocab-parallel; the embedding on the first pipeline stage, the LM head,
  the final norm and the MTP head on the last.
- Router, latent projections, norms: replicated (small). The vision tower: replicated on the
  first stage's ranks (it runs before the language model) — an upper bound.
- Layers split across pipeline stages as vLLM's ``get_pp_indices`` splits them: evenly, the
  remainder going to the stages before the last (which holds the LM head).
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
from nemotron_operator.sizing.cache import cdiv, kv_heads_per_rank

_REPLICATED = frozenset({params.ROUTER, params.MOE_LATENT, params.NORMS, params.VISION})


def pipeline_stages(num_layers: int, pipeline_parallel: int) -> tuple[range, ...]:
    """Layer index ranges of each stage (vLLM ``distributed/utils.py get_pp_indices``)."""
    sizes = [num_layers // pipeline_parallel] * pipeline_parallel
    for i in range(2, num_layers % pipeline_parallel + 2):
        sizes[-i] += 1
    stages = []
    start = 0
    for size in sizes:
        stages.append(range(start, start + size))
        start += size
    return tuple(stages)


def _rank_count(
    model: ModelEntry, category: str, count: int, tensor_parallel: int, expert_parallel: bool
) -> int:
    t = tensor_parallel
    if category in _REPLICATED:
        return count
    if category == params.ATTENTION_KV:
        return count * kv_heads_per_rank(model, t) // model.num_key_value_heads
    if category == params.ROUTED_EXPERTS and expert_parallel and model.n_routed_experts:
        experts = model.n_routed_experts
        return count * cdiv(experts, t) // experts
    return cdiv(count, t)


def rank_part_bytes(
    model: ModelEntry, part_name: str, tensor_parallel: int, expert_parallel: bool
) -> int:
    """Bytes of one part (one layer of a kind, or a non-layer part) on one TP rank."""
    total_half_bits = 0
    for category, count in model.part(part_name):
        on_rank = _rank_count(model, category, count, tensor_parallel, expert_parallel)
        total_half_bits += on_rank * model.half_bits(part_name, category)
    return cdiv(total_half_bits, 16)


@dataclass(frozen=True)
class StageWeights:
    stage: int
    layers: range
    bytes: int


def stage_weights(
    model: ModelEntry,
    tensor_parallel: int,
    pipeline_parallel: int,
    expert_parallel: bool,
    *,
    include_mtp: bool = True,
) -> tuple[StageWeights, ...]:
    """Weights on one GPU of each pipeline stage. vLLM loads the MTP head only when
    speculative decoding uses it (``include_mtp``)."""
    per_kind = {
        kind: rank_part_bytes(model, kind, tensor_parallel, expert_parallel)
        for kind in params.LAYER_KINDS
    }

    def extra(name: str) -> int:
        return rank_part_bytes(model, name, tensor_parallel, expert_parallel)

    stages = pipeline_stages(model.num_hidden_layers, pipeline_parallel)
    out = []
    for index, layers in enumerate(stages):
        total = sum(per_kind[model.layer_pattern[i]] for i in layers)
        if index == 0:
            total += extra(EMBEDDING) + extra(VISION)
        if index == len(stages) - 1:
            total += extra(LM_HEAD) + extra(FINAL_NORM)
            if include_mtp:
                total += extra(MTP)
        out.append(StageWeights(index, layers, total))
    return tuple(out)
