"""The GPU memory vLLM preallocates for LoRA adapters (docs/sizing.md §11).

With ``--enable-lora`` vLLM wraps every LoRA-capable layer at start and allocates, per layer and
rank, zero-filled A and B buffers for ``max_loras`` adapters at ``max_lora_rank`` — whether any
adapter is loaded or not — so the KV pool shrinks by the same bytes. Read from vLLM's source
([P], the files and functions cited beside each term; docs/sizing.md §11 names the commits):

- linear layers (``vllm/lora/layers/base_linear.py`` ``BaseLinearLayerWithLoRA.
  create_lora_weights``): per slice, ``lora_a`` (max_loras, 1, rank, input_size) and ``lora_b``
  (max_loras, 1, output_size, rank), with the rank-local sizes (column-parallel: output ÷ TP;
  row-parallel: input ÷ TP; replicated: whole). A packed ``qkv_proj`` has three slices (q, k, v;
  ``packed_modules_mapping`` of ``nemotron_h.py``), each with its own A over the hidden size.
- routed experts (``vllm/lora/layers/fused_moe.py`` ``FusedMoEWithLoRA._create_lora_a_weights``,
  ``_create_lora_b_weights``): per local expert, w13 A (rank × moe hidden) and B (intermediate per
  partition × rank), w2 A (rank × intermediate per partition) and B (moe hidden × rank);
  Nemotron-H's MoE is non-gated (``is_non_gated_moe``), so w13 has one slice. The MoE hidden size
  is ``moe_latent_size`` when the model routes in a latent space (``NemotronHMoE``).
- embeddings (first stage) and LM head (last stage), Nemotron-H's ``embedding_modules``:
  A (vocab × rank) and B (hidden × rank) for the embedding, A (rank × hidden) and B (vocab ÷ TP ×
  rank) for the head.
- ``lora_dtype`` auto is the model dtype: bfloat16 for every Nemotron checkpoint (quantized
  checkpoints keep a bfloat16 model dtype).

Which Nemotron-H layers are wrapped (``nemotron_h.py``): attention ``qkv_proj`` (column) and
``o_proj`` (row); Mamba ``in_proj`` (column) and ``out_proj`` (row); MLP and shared-expert
``up_proj`` (column) and ``down_proj`` (row); the latent projections ``fc1_latent_proj`` and
``fc2_latent_proj`` (replicated); the routed experts. Not counted: the Mamba ``conv1d`` (a
column-parallel layer of input ``conv_kernel``, under 1 MiB per layer at rank 64), the router
(vLLM skips the gate of non-gated MoE), the MTP head (``lora_skip_prefixes``) and the vision tower
(tower LoRA is off by default). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from nemotron_operator.catalog.models import ModelEntry

LORA_DTYPE_BYTES = 2  # lora_dtype auto → the model dtype, bfloat16


@dataclass(frozen=True)
class LoraLimits:
    """``--max-loras`` and ``--max-lora-rank``."""

    max_loras: int
    max_lora_rank: int


def _linear(rank: int, in_size: int, out_size: int, slices: int = 1) -> int:
    """Elements of one wrapped linear layer's A and B for one adapter slot: each slice has an A of
    rank × in_size; the B of all slices together spans the output."""
    return rank * (slices * in_size + out_size)


def layer_elements(model: ModelEntry, kind: str, t: int, expert_parallel: bool, rank: int) -> int:
    """Buffer elements of one layer of ``kind`` on one rank, for one adapter slot."""
    d = model.dims
    h = d.hidden_size
    if kind == "*":
        q = d.num_attention_heads * d.head_dim // t
        kv = max(1, d.num_key_value_heads // t) * d.head_dim
        qkv = _linear(rank, h, q + 2 * kv, slices=3)
        return qkv + _linear(rank, d.num_attention_heads * d.head_dim // t, h)
    if kind == "M":
        in_out = 2 * d.mamba_d_inner + 2 * d.mamba_n_groups * d.ssm_state_size + d.mamba_num_heads
        return _linear(rank, h, in_out // t) + _linear(rank, d.mamba_d_inner // t, h)
    if kind == "-":
        inter = (d.intermediate_size or 0) // t
        return _linear(rank, h, inter) + _linear(rank, inter, h)
    if kind == "E":
        return _moe_elements(model, t, expert_parallel, rank)
    return 0


def _moe_elements(model: ModelEntry, t: int, expert_parallel: bool, rank: int) -> int:
    d = model.dims
    h = d.hidden_size
    moe_hidden = d.moe_latent_size or h
    inter = d.moe_intermediate_size or h
    # Under EP whole experts are spread over the ranks; otherwise every rank holds every expert's
    # slice of the intermediate dimension.
    local_experts = d.n_routed_experts // t if expert_parallel else d.n_routed_experts
    inter_partition = inter if expert_parallel else inter // t
    routed = local_experts * rank * 2 * (moe_hidden + inter_partition)
    elements = routed
    shared = d.n_shared_experts * (d.moe_shared_expert_intermediate_size or 0) // t
    if shared:
        elements += _linear(rank, h, shared) + _linear(rank, shared, h)
    if d.moe_latent_size:
        elements += _linear(rank, h, moe_hidden) + _linear(rank, moe_hidden, h)
    return elements


def lora_buffer_bytes(
    model: ModelEntry,
    layer_kinds: Mapping[str, int],
    *,
    tensor_parallel: int,
    expert_parallel: bool,
    first_stage: bool,
    last_stage: bool,
    limits: LoraLimits,
) -> int:
    """Bytes of LoRA buffers on one GPU of a stage holding ``layer_kinds`` (kind → count)."""
    rank = limits.max_lora_rank
    t = tensor_parallel
    elements = sum(
        count * layer_elements(model, kind, t, expert_parallel, rank)
        for kind, count in layer_kinds.items()
    )
    vocab, hidden = model.dims.vocab_size, model.dims.hidden_size
    if first_stage:
        elements += rank * (vocab + hidden)
    if last_stage:
        elements += rank * (hidden + vocab // t)
    return limits.max_loras * elements * LORA_DTYPE_BYTES
