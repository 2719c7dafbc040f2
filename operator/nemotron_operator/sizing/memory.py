"""The memory model: one layout of one model on one GPU product → per-GPU breakdown, KV pool,
bytes per full-length sequence, max concurrency and KV capacity, exactly as vLLM would size them.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from nemotron_operator.catalog.gpus import GpuProduct
from nemotron_operator.catalog.models import ModelEntry
from nemotron_operator.sizing import cache
from nemotron_operator.sizing.lora import LoraLimits, lora_buffer_bytes
from nemotron_operator.sizing.reserve import (
    CUDA_GRAPHS_BYTES,
    ReserveInputs,
    extensible_margin,
    reserve_components,
)
from nemotron_operator.sizing.settings import CONV_DTYPE_BYTES, EngineSettings
from nemotron_operator.sizing.weights import stage_weights


@dataclass(frozen=True)
class Layout:
    tensor_parallel: int
    pipeline_parallel: int
    expert_parallel: bool

    @property
    def gpus(self) -> int:
        return self.tensor_parallel * self.pipeline_parallel


@dataclass(frozen=True)
class StageMemory:
    """One GPU of one pipeline stage."""

    stage: int
    usable_bytes: int
    weights_bytes: int
    reserve: tuple[tuple[str, int], ...]
    attention_layers: int
    mamba_layers: int
    layers_per_group: int
    num_blocks: int | None  # None: the stage holds no cache layers

    @property
    def reserve_bytes(self) -> int:
        return sum(b for _, b in self.reserve)

    @property
    def kv_pool_bytes(self) -> int:
        return self.usable_bytes - self.weights_bytes - self.reserve_bytes


@dataclass(frozen=True)
class LayoutMemory:
    model: ModelEntry
    gpu: GpuProduct
    layout: Layout
    settings: EngineSettings
    max_num_seqs: int
    max_num_batched_tokens: int
    stages: tuple[StageMemory, ...]
    attention_page_per_token: int
    mamba_state: cache.MambaState
    block_size: int
    page_bytes: int
    groups: tuple[cache.CacheGroup, ...]
    mamba_slots: int
    blocks_per_request: int

    @property
    def binding(self) -> StageMemory:
        """The stage whose pool runs out first (fewest blocks); its GPU is the one reported."""
        with_cache = [s for s in self.stages if s.num_blocks is not None]
        if not with_cache:
            return self.stages[0]
        return min(with_cache, key=lambda s: (s.num_blocks, -s.weights_bytes))

    @property
    def num_blocks(self) -> int:
        return self.binding.num_blocks or 0

    @property
    def max_concurrency(self) -> float:
        if self.blocks_per_request == 0:
            return 0.0
        return self.num_blocks / self.blocks_per_request

    @property
    def kv_cache_tokens(self) -> int:
        return int(self.max_concurrency * self.settings.max_model_len)

    @property
    def kv_bytes_per_token(self) -> int:
        return self.binding.attention_layers * self.attention_page_per_token

    @property
    def mamba_state_bytes_per_sequence(self) -> int:
        """Raw conv + SSM state of one sequence on the reported GPU: one slot, no padding."""
        return self.binding.mamba_layers * self.mamba_state.bytes

    @property
    def block_bytes(self) -> int:
        """Bytes one block id takes on the reported GPU: a page in each of its group tensors."""
        return self.page_bytes * self.binding.layers_per_group

    @property
    def mamba_bytes_per_sequence(self) -> int:
        mamba_groups = sum(1 for g in self.groups if g.kind == "mamba")
        return mamba_groups * self.mamba_slots * self.block_bytes

    @property
    def bytes_per_sequence(self) -> int:
        return self.blocks_per_request * self.block_bytes

    @property
    def usable_bytes(self) -> int:
        return self.binding.usable_bytes


def usable_bytes(gpu: GpuProduct, utilization: float) -> int:
    """``requested_memory = ceil(total_memory × gpu_memory_utilization)`` (v1/worker/utils.py)."""
    return math.ceil(gpu.memory_bytes * utilization)


def cache_layers(model: ModelEntry, speculative_tokens: int) -> tuple[list[int], list[int]]:
    """Cache-layer indices: attention and Mamba layers of the main model, then the MTP head's
    attention layers when the draft runs (its KV joins the attention group)."""
    attention = [i for i, k in enumerate(model.layer_pattern) if k == "*"]
    mamba = [i for i, k in enumerate(model.layer_pattern) if k == "M"]
    if speculative_tokens and model.mtp_layers:
        start = model.num_hidden_layers
        attention.extend(range(start, start + model.mtp_attention_layers))
    return attention, mamba


def lora_reserve(
    model: ModelEntry,
    layers: Sequence[int],
    layout: Layout,
    limits: LoraLimits,
    *,
    stage: int,
    last: int,
) -> tuple[tuple[str, int], ...]:
    """The LoRA terms of a stage's reserve: the preallocated adapter buffers (sizing.lora) and a
    second set of captured CUDA graphs — vLLM's ``cudagraph_specialize_lora`` (default on)
    captures the graphs once with and once without active adapters ([P]
    ``CompilationConfig.cudagraph_specialize_lora``; its size is the fitted ``cudaGraphs`` [E])."""
    kinds = Counter(model.layer_pattern[i] for i in layers)
    buffers = lora_buffer_bytes(
        model,
        kinds,
        tensor_parallel=layout.tensor_parallel,
        expert_parallel=layout.expert_parallel,
        first_stage=stage == 0,
        last_stage=stage == last,
        limits=limits,
    )
    return (("loraBuffers", buffers), ("loraCudaGraphs", CUDA_GRAPHS_BYTES))


def evaluate(
    model: ModelEntry, gpu: GpuProduct, layout: Layout, settings: EngineSettings
) -> LayoutMemory:
    """The full per-GPU arithmetic of one layout (no feasibility judgement)."""
    t, p = layout.tensor_parallel, layout.pipeline_parallel
    spec_tokens = settings.speculative_tokens
    max_num_seqs, max_batched = settings.scheduler_limits(gpu)
    attn_page = cache.attention_page_per_token(model, t, settings.kv_dtype_bytes)
    state = cache.mamba_state(model, t, spec_tokens, CONV_DTYPE_BYTES, settings.ssm_dtype_bytes)
    attention, mamba = cache_layers(model, spec_tokens)
    if not attention:
        attn_page = 0
    start = settings.block_size or settings.profile.default_block_size
    block = cache.hybrid_block_size(attn_page, state.bytes, start)
    page = block * attn_page if attention else state.bytes
    groups = cache.kv_cache_groups(attention, mamba)
    slots = cache.mamba_slots(spec_tokens, settings.prefix_caching)
    per_request = cache.blocks_per_request(groups, settings.max_model_len, block, slots)
    usable = usable_bytes(gpu, settings.gpu_memory_utilization)
    weights = stage_weights(model, t, p, layout.expert_parallel, include_mtp=spec_tokens > 0)
    last = len(weights) - 1
    stages = []
    for sw in weights:
        members = set(sw.layers)
        if sw.stage == last:
            members.update(i for i in attention if i >= model.num_hidden_layers)
        layer_set = frozenset(members)
        kinds = frozenset(model.layer_pattern[i] for i in sw.layers)
        reserve = reserve_components(
            model,
            ReserveInputs(
                tensor_parallel=t,
                world_size=layout.gpus,
                expert_parallel=layout.expert_parallel,
                max_num_seqs=max_num_seqs,
                max_num_batched_tokens=max_batched,
                speculative_tokens=spec_tokens,
                first_stage=sw.stage == 0,
                last_stage=sw.stage == last,
                stage_kinds=kinds,
            ),
        )
        if settings.lora is not None:
            reserve += lora_reserve(
                model, sw.layers, layout, settings.lora, stage=sw.stage, last=last
            )
        if settings.extensible_kv_cache:
            margin = extensible_margin(gpu.memory_bytes, usable, reserve)
            reserve += (("kvCacheMargin", margin),)
        group_size = cache.layers_per_group(groups, layer_set)
        available = usable - sw.bytes - sum(b for _, b in reserve)
        stages.append(
            StageMemory(
                stage=sw.stage,
                usable_bytes=usable,
                weights_bytes=sw.bytes,
                reserve=reserve,
                attention_layers=sum(1 for i in attention if i in layer_set),
                mamba_layers=sum(1 for i in mamba if i in layer_set),
                layers_per_group=group_size,
                num_blocks=cache.num_blocks(available, page, group_size) if group_size else None,
            )
        )
    return LayoutMemory(
        model=model,
        gpu=gpu,
        layout=layout,
        settings=settings,
        max_num_seqs=max_num_seqs,
        max_num_batched_tokens=max_batched,
        stages=tuple(stages),
        attention_page_per_token=attn_page,
        mamba_state=state,
        block_size=block,
        page_bytes=page,
        groups=groups,
        mamba_slots=slots,
        blocks_per_request=per_request,
    )
