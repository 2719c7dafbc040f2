"""``status.plan``: the sizing result, exactly as ``nemotron-operator plan -o json`` prints it.

Bytes are integers. Per-GPU figures are for the GPU whose KV pool fills first (with pipeline
parallelism, the most constrained stage; otherwise every GPU of the replica is alike).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints

from nemotron_operator.api.base import ApiModel
from nemotron_operator.api.capacity import GpuProduct
from nemotron_operator.api.model import ModelId, Precision

Reason = Annotated[str, StringConstraints(max_length=512)]
ComponentName = Annotated[str, StringConstraints(max_length=64)]
# Status must stay far below the 1.5 MiB object limit: the planner keeps at most this many
# rejected layouts (the most relevant first) and says how many it left out.
MAX_REJECTED = 64


class ReserveComponent(ApiModel):
    """One named part of the per-GPU reserve."""

    name: ComponentName = Field(description="Component, e.g. activations, cudaGraphs.")
    bytes: int = Field(ge=0, description="Bytes per GPU.")


class PerGpuMemory(ApiModel):
    """Per-GPU memory breakdown of the chosen layout."""

    weights_bytes: int = Field(ge=0, description="Weights resident on the GPU.")
    reserve_bytes: int = Field(ge=0, description="Non-KV reserve (sum of reserveComponents).")
    kv_pool_bytes: int = Field(
        description="What remains for the KV cache and Mamba state: usable memory minus weights "
        "and reserve. Negative when the layout does not fit."
    )
    usable_bytes: int = Field(
        default=0,
        ge=0,
        description="GPU memory × gpuMemoryUtilization (1.0 with vLLM 0.34's extensible KV cache "
        "when unset).",
    )
    reserve_components: Annotated[list[ReserveComponent], Field(max_length=16)] = Field(
        default_factory=list, description="The reserve, component by component."
    )


class RejectedLayout(ApiModel):
    """A layout the planner considered and rejected."""

    gpu_product: GpuProduct = Field(description="GPU product.")
    tensor_parallel: int = Field(ge=0, description="Tensor-parallel size.")
    pipeline_parallel: int = Field(ge=0, description="Pipeline-parallel size.")
    reason: Reason = Field(description="Why, in one line a user can act on.")


class Plan(ApiModel):
    """The chosen layout and its arithmetic."""

    model_id: ModelId = Field(description="Model planned.")
    engine_version: str = Field(
        default="0.31",
        max_length=16,
        description="The vLLM engine profile the plan was computed with (0.31 to 0.34): the "
        "image's release, or the newest profile for a newer or unknown one (see notes).",
    )
    precision: Precision = Field(description="Checkpoint precision.")
    gpu_product: GpuProduct = Field(description="GPU product (GPU Feature Discovery name).")
    gpu_memory_bytes: int = Field(ge=0, description="Memory per GPU as the device reports it.")
    gpus_per_node: int = Field(ge=1, description="GPUs per node of that product.")
    tensor_parallel: int = Field(ge=1, description="Tensor-parallel size.")
    pipeline_parallel: int = Field(ge=1, description="Pipeline-parallel size.")
    expert_parallel: bool = Field(description="Whether MoE experts are sharded across ranks.")
    gpus_per_replica: int = Field(ge=1, description="GPUs per replica (TP × PP).")
    nodes_per_replica: int = Field(ge=1, description="Nodes per replica.")
    replicas: int = Field(ge=0, description="Replicas planned.")
    total_gpus: int = Field(ge=0, alias="totalGPUs", description="GPUs for all replicas.")
    nodes: int = Field(ge=0, description="Nodes of gpuProduct needed for all replicas.")
    weights_total_bytes: int = Field(ge=0, description="Checkpoint bytes across all GPUs.")
    per_gpu: PerGpuMemory = Field(alias="perGPU", description="Per-GPU memory breakdown.")
    kv_bytes_per_token: int = Field(ge=0, description="KV cache bytes per token per GPU.")
    mamba_bytes_per_sequence: int = Field(
        ge=0,
        description="Mamba state bytes per sequence per GPU, with vLLM's state slots and "
        "padding to the hybrid block.",
    )
    bytes_per_sequence: int = Field(
        ge=0, description="Bytes per GPU of one sequence at maxModelLen (KV + Mamba state)."
    )
    block_size_tokens: int = Field(ge=1, description="KV block size (hybrid-aligned), tokens.")
    prefix_caching: bool = Field(
        default=True,
        description="Whether vLLM caches prefixes (--enable-prefix-caching); the endpoint "
        "picker's prefix scorer follows it and blockSizeTokens.",
    )
    max_concurrency: float = Field(
        ge=0, description="Full-length sequences a replica holds at once (vLLM's figure)."
    )
    kv_cache_tokens: int = Field(ge=0, description="KV cache capacity in tokens per replica.")
    max_model_len: int = Field(ge=1, description="Context per request, tokens.")
    speculative_tokens: int = Field(ge=0, description="MTP draft tokens (0 = off).")
    mamba_state_bytes_per_sequence: int = Field(
        default=0,
        ge=0,
        description="Raw Mamba conv + SSM state of one sequence per GPU (one slot, no padding).",
    )
    kv_cache_blocks: int = Field(
        default=0, ge=0, description="Blocks in the shared KV/Mamba pool (vLLM num_gpu_blocks)."
    )
    blocks_per_sequence: int = Field(
        default=0,
        ge=0,
        description="Blocks one full-length sequence holds: cdiv(maxModelLen, blockSizeTokens) "
        "per attention group plus the state slots per Mamba group.",
    )
    kv_cache_groups: int = Field(
        default=0, ge=0, description="KV cache groups (attention and Mamba) sharing the pool."
    )
    layers_per_group: int = Field(
        default=0, ge=0, description="Layers per KV cache group on the reported GPU."
    )
    max_num_seqs: int = Field(
        default=0, ge=0, description="max_num_seqs the reserve assumes (spec or vLLM default)."
    )
    max_num_batched_tokens: int = Field(
        default=0,
        ge=0,
        description="max_num_batched_tokens the reserve assumes (spec or vLLM default).",
    )
    notes: Annotated[list[Reason], Field(max_length=16)] = Field(
        default_factory=list,
        description="Things the user should know about the plan, e.g. NVFP4 on Hopper runs "
        "weight-only.",
    )
    rejected: Annotated[list[RejectedLayout], Field(max_length=MAX_REJECTED)] = Field(
        default_factory=list, description="Layouts considered and rejected, with reasons."
    )
    rejected_omitted: int = Field(
        default=0, ge=0, description="Rejected layouts left out of the list for size."
    )
