"""The KV cache and Mamba state as vLLM 0.31–0.34 lay them out (model-facts.md §2.1–2.3 [P]).
What differs between these releases is the default block size (``catalog.vllm_releases``); the
functions mirrored below were read in each release's source (docs/sizing.md §10).

Mirrors, function by function:
- ``AttentionSpec.page_size_bytes`` and ``get_num_kv_heads`` (KV heads replicated when TP exceeds
  them): ``attention_page_per_token``;
- ``MambaStateShapeCalculator.mamba2_state_shape`` and the NemotronH state dtypes:
  ``mamba_state``;
- ``Platform._align_hybrid_block_size`` (block size and the padded Mamba page):
  ``hybrid_block_size``;
- ``_get_kv_cache_groups_uniform_page_size`` (one block pool shared by equal-sized groups):
  ``kv_cache_groups``;
- ``get_kv_cache_configs`` / ``get_num_blocks`` (per pipeline stage, then the minimum):
  ``num_blocks``;
- ``max_memory_usage_bytes`` and ``get_max_concurrency_for_kv_cache_config``:
  ``blocks_per_request`` and ``C = num_blocks / Σ_groups cdiv(max_memory_usage_bytes, page)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from nemotron_operator.catalog.models import ModelEntry

# FlashAttention/Triton report MultipleOf(16) as their kernel block size (v1/attention/backends)
# in every release 0.31-0.34 [P]; the default --block-size is the release's
# (CacheConfig.DEFAULT_BLOCK_SIZE: 16 up to 0.33, 64 from 0.34).
KERNEL_BLOCK_ALIGNMENT = 16
DEFAULT_BLOCK_SIZE = 16

GroupKind = Literal["attention", "mamba"]


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class MambaState:
    """One Mamba layer's state for one sequence on one rank."""

    conv_bytes: int
    ssm_bytes: int

    @property
    def bytes(self) -> int:
        return self.conv_bytes + self.ssm_bytes


def kv_heads_per_rank(model: ModelEntry, tensor_parallel: int) -> int:
    return max(1, model.num_key_value_heads // tensor_parallel)


def attention_page_per_token(model: ModelEntry, tensor_parallel: int, kv_dtype_bytes: int) -> int:
    """KV bytes of one token in one attention layer on one rank (K and V)."""
    return 2 * kv_heads_per_rank(model, tensor_parallel) * model.head_dim * kv_dtype_bytes


def mamba_state(
    model: ModelEntry,
    tensor_parallel: int,
    speculative_tokens: int,
    conv_dtype_bytes: int,
    ssm_dtype_bytes: int,
) -> MambaState:
    """Conv state ``(conv_kernel − 1 + S) × conv_dim / TP`` and SSM state
    ``(mamba_heads / TP) × head_dim × state_size``; groups padded up to TP when TP does not
    divide them (they are replicated)."""
    if model.mamba_num_heads == 0:
        return MambaState(0, 0)
    t = tensor_parallel
    groups = model.mamba_n_groups
    if groups % t:
        groups += t - groups
    conv_dim = model.mamba_num_heads * model.mamba_head_dim + 2 * groups * model.ssm_state_size
    conv = (model.conv_kernel - 1 + speculative_tokens) * (conv_dim // t)
    ssm = (model.mamba_num_heads // t) * model.mamba_head_dim * model.ssm_state_size
    return MambaState(conv * conv_dtype_bytes, ssm * ssm_dtype_bytes)


def hybrid_block_size(
    attention_page_1tok: int, mamba_page: int, default_block_size: int = DEFAULT_BLOCK_SIZE
) -> int:
    """The attention block size that makes one attention page hold one Mamba state.

    ``block = align × cdiv(mamba_page, align × attn_page_1tok)`` with align = max(kernel block
    16, the release's default block size); a model without Mamba layers keeps the default block
    size. (0.32+ also rounds to the lcm of every attention backend's smallest kernel block, 16
    for FlashAttention/FlashInfer/Triton, and 0.33+ to the Mamba layers' prefill-checkpoint
    alignment, which Mamba-2 layers do not declare: neither moves the result.)
    """
    if mamba_page == 0 or attention_page_1tok == 0:
        return default_block_size
    align = max(KERNEL_BLOCK_ALIGNMENT, default_block_size)
    return max(default_block_size, align * cdiv(mamba_page, align * attention_page_1tok))


@dataclass(frozen=True)
class CacheGroup:
    kind: GroupKind
    layers: tuple[int, ...]  # global cache-layer indices (main layers, then the MTP head's)


def kv_cache_groups(
    attention_layers: Sequence[int], mamba_layers: Sequence[int]
) -> tuple[CacheGroup, ...]:
    """Split same-spec layers into equally sized groups sharing one block pool.

    group_size is the smallest bucket, or the largest when it is less than 1.5× the smallest;
    bucket i of n is ``layers[i::n]`` (so pipeline stages stay balanced), the last padded.
    """
    named: tuple[tuple[GroupKind, Sequence[int]], ...] = (
        ("attention", attention_layers),
        ("mamba", mamba_layers),
    )
    buckets = [(kind, layers) for kind, layers in named if layers]
    if not buckets:
        return ()
    smallest = min(len(layers) for _, layers in buckets)
    largest = max(len(layers) for _, layers in buckets)
    group_size = largest if largest < smallest * 1.5 else smallest
    groups: list[CacheGroup] = []
    for kind, layers in buckets:
        n = cdiv(len(layers), group_size)
        groups.extend(CacheGroup(kind, tuple(layers[i::n])) for i in range(n))
    return tuple(groups)


def layers_per_group(groups: Sequence[CacheGroup], stage_layers: frozenset[int]) -> int:
    """Tensors a stage allocates: the most layers any group has on that stage."""
    return max((sum(1 for i in g.layers if i in stage_layers) for g in groups), default=0)


def num_blocks(available_bytes: int, page_bytes: int, group_size: int) -> int:
    """``available // page // group_size``, never negative."""
    if group_size == 0 or page_bytes == 0:
        return 0
    return max(0, available_bytes // page_bytes // group_size)


def blocks_per_request(
    groups: Sequence[CacheGroup],
    max_model_len: int,
    block_size: int,
    mamba_slots: int,
) -> int:
    """Blocks one full-length request holds: ``cdiv(max_model_len, block)`` per attention group
    and ``mamba_slots`` (2 + S with prefix caching, 1 + S without) per Mamba group."""
    total = 0
    for group in groups:
        total += cdiv(max_model_len, block_size) if group.kind == "attention" else mamba_slots
    return total


def mamba_slots(speculative_tokens: int, prefix_caching: bool) -> int:
    return (2 if prefix_caching else 1) + speculative_tokens
