"""The stand-in's own KV cache allocation, published as ``vllm:cache_config_info``.

A real vLLM profiles the GPU and then divides what is left into blocks. The stand-in has no GPU,
so it "profiles" with an account of its own (``profile``: the simulated cluster may not import
the operator's planner), then applies vLLM's block arithmetic
(``vllm/v1/core/kv_cache_utils.py``: hybrid block size, uniform-page groups, blocks per request,
``get_max_concurrency_for_kv_cache_config``). A ``bias`` (``--sim-kv-cache-bias``,
``NEMOTRON_SIM_VLLM_KV_CACHE_BIAS``; -0.10 = 10 % fewer blocks) lets tests drive the operator's
plan check both ways. docs/observability.md records how far this agrees with the planner.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nemotron_operator.catalog.models import ModelEntry
from nemotron_sim.gpus import GIB, MIB, Gpu, lookup_gpu
from nemotron_sim.vllm import hf_config, profile
from nemotron_sim.vllm.args import StubVllmArgumentError

BLOCK_ALIGN = 16  # CUDA attention backends' kernel block multiple and default --block-size
# vLLM 0.34: --block-size defaults to 64 (CacheConfig.DEFAULT_BLOCK_SIZE), and the extensible KV
# cache sizes the pool after warm-up: min(requested − non-KV, free − margin) − transient peak,
# margin = max(1 GiB, 0.75 × transient peak) (v1/worker/extensible_kv_cache.py). The CUDA context
# is outside the free memory it measures.
BLOCK_SIZE_FROM_0_34 = 64
MARGIN_FLOOR = 1 * GIB
MARGIN_FRACTION = 0.75
CUDA_CONTEXT = 512 * MIB
KV_DTYPE_BYTES = {"auto": 2, "bfloat16": 2, "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1}
STATE_DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "auto": 2}
# Without a config.json or a known GPU the stand-in keeps this many full-length sequences.
FALLBACK_SEQUENCES = 4


@dataclass(frozen=True)
class CacheAllocation:
    """What the stand-in "allocated": the figures vLLM publishes after profiling."""

    num_gpu_blocks: int
    block_size: int
    blocks_per_request: int
    max_model_len: int

    @property
    def max_concurrency(self) -> float:
        return self.num_gpu_blocks / self.blocks_per_request if self.blocks_per_request else 0.0

    @property
    def kv_cache_size_tokens(self) -> int:
        return int(self.max_concurrency * self.max_model_len)


def parse_bias(source: str, text: str) -> float:
    """A bias from a flag or an environment variable: a float above -1 (-0.1 = 10 % less)."""
    try:
        bias = float(text)
    except ValueError:
        bias = float("nan")
    if not -1.0 < bias < 10.0:
        raise StubVllmArgumentError(
            f"argument {source}: expected a fraction above -1 such as -0.1, got {text!r}"
        )
    return bias


def _int(options: Mapping[str, Any], name: str, default: int) -> int:
    value = options.get(name)
    return default if value is None else int(value)


def allocate(
    model_id: str,
    options: Mapping[str, Any],
    *,
    max_model_len: int,
    max_num_seqs: int | None,
    spec_tokens: int,
    gpu_product: str | None,
    bias: float = 0.0,
    release: tuple[int, int] = (0, 34),
) -> CacheAllocation:
    """The stand-in's allocation for a ``vllm serve`` command line on ``gpu_product``, as the
    vLLM ``release`` (major, minor) it stands in for would make it."""
    # The architecture of ``vllm serve``'s model argument (a Hugging Face id, or a local path
    # ending in one: the operator serves ``/models/<org>/<name>``), from its config.json as vLLM
    # reads it (``hf_config``), never from the operator's catalog.
    model = hf_config.load_model(model_id)
    gpu = lookup_gpu(gpu_product) if gpu_product else None
    if model is None or gpu is None:
        blocks = profile.cdiv(FALLBACK_SEQUENCES * max_model_len, BLOCK_ALIGN)
        blocks = max(0, math.floor(blocks * (1.0 + bias)))
        return CacheAllocation(
            blocks, BLOCK_ALIGN, profile.cdiv(max_model_len, BLOCK_ALIGN), max_model_len
        )
    return _allocate(
        model,
        gpu,
        options,
        max_model_len=max_model_len,
        max_num_seqs=max_num_seqs,
        spec_tokens=spec_tokens,
        bias=bias,
        release=release,
    )


def _allocate(
    model: ModelEntry,
    gpu: Gpu,
    options: Mapping[str, Any],
    *,
    max_model_len: int,
    max_num_seqs: int | None,
    spec_tokens: int,
    bias: float,
    release: tuple[int, int] = (0, 34),
) -> CacheAllocation:
    tp = _int(options, "--tensor-parallel-size", 1)
    pp = _int(options, "--pipeline-parallel-size", 1)
    planned = options.get("--kv-cache-memory-bytes")
    planned = None if planned is None else int(planned)  # the operator renders plain bytes
    extensible = release >= (0, 34) and planned is None
    utilization = float(options.get("--gpu-memory-utilization") or (1.0 if extensible else 0.9))
    prefix_caching = options.get("--enable-prefix-caching", True) is not False
    kv_bytes = KV_DTYPE_BYTES.get(str(options.get("--kv-cache-dtype") or "auto"), 2)
    ssm_bytes = STATE_DTYPE_BYTES.get(str(options.get("--mamba-ssm-cache-dtype") or "auto"), 2)
    seqs, batched = _scheduler_defaults(gpu)
    seqs = max_num_seqs or seqs
    batched = _int(options, "--max-num-batched-tokens", batched)

    pattern = model.layer_pattern
    attention = [i for i, kind in enumerate(pattern) if kind == "*"]
    if spec_tokens and model.mtp_layers:
        attention += [len(pattern) + i for i in range(model.mtp_attention_layers)]
    mamba = [i for i, kind in enumerate(pattern) if kind == "M"]

    # Pages: one attention token on one rank (K and V, KV heads replicated past TP), and one
    # sequence's Mamba state (conv state grows by the draft tokens).
    kv_heads = max(1, model.num_key_value_heads // tp)
    attention_token = 2 * kv_heads * model.head_dim * kv_bytes if attention else 0
    mamba_page = _mamba_state_bytes(model, tp, spec_tokens, ssm_bytes) if mamba else 0
    default_block = BLOCK_SIZE_FROM_0_34 if release >= (0, 34) else BLOCK_ALIGN
    default_block = _int(options, "--block-size", default_block)  # user_specified_block_size
    align = max(BLOCK_ALIGN, default_block)
    block = default_block
    if attention_token and mamba_page:
        block = max(default_block, align * profile.cdiv(mamba_page, align * attention_token))
    page = block * attention_token if attention else mamba_page

    groups = _groups(attention, mamba)
    slots = (2 if prefix_caching else 1) + spec_tokens
    per_request = sum(
        profile.cdiv(max_model_len, block) if kind == "attention" else slots for kind, _ in groups
    )

    # "Profile" each pipeline stage; the pool is the same number of blocks on every rank, so the
    # stage with the least room decides (vLLM takes the minimum over workers).
    rank = profile.Rank(
        tp=tp,
        pp=pp,
        expert_parallel=options.get("--enable-expert-parallel") is True,
        spec_tokens=spec_tokens,
        max_num_seqs=seqs,
        max_num_batched_tokens=batched,
    )
    usable = math.ceil(gpu.memory_bytes * utilization)
    stages = profile.stage_layers(model.num_hidden_layers, pp)
    counts = []
    for stage, layers in enumerate(stages):
        members = set(layers)
        if stage == pp - 1:
            members.update(i for i in attention if i >= model.num_hidden_layers)
        per_group = max((sum(1 for i in g if i in members) for _, g in groups), default=0)
        if not per_group or not page:
            continue
        available = _available(model, gpu, rank, stage, usable=usable, extensible=extensible)
        if planned is not None:
            available = planned  # --kv-cache-memory-bytes: every worker gets exactly this
        counts.append(max(0, available // page // per_group))
    blocks = min(counts, default=0)
    if planned is None:  # a planned pool is allocated as given: nothing measured to be off
        blocks = max(0, math.floor(blocks * (1.0 + bias)))
    return CacheAllocation(blocks, block, per_request, max_model_len)


def _available(
    model: ModelEntry,
    gpu: Gpu,
    rank: profile.Rank,
    stage: int,
    *,
    usable: int,
    extensible: bool,
) -> int:
    """The pool a rank of ``stage`` gets: the requested budget less what it measured, and with
    0.34's extensible cache at most the free memory after the CUDA context less the margin."""
    used = profile.weights(model, rank, stage) + profile.non_kv(model, rank, stage)
    if not extensible:
        return usable - used
    peak = profile.transient(model, rank, stage)
    margin = max(MARGIN_FLOOR, int(peak * MARGIN_FRACTION))
    return min(usable - used, gpu.memory_bytes - CUDA_CONTEXT - margin - used)


def _groups(attention: list[int], mamba: list[int]) -> list[tuple[str, list[int]]]:
    """vLLM's uniform-page grouping: groups of ``size`` layers (``layers[i::n]``, so pipeline
    stages stay balanced), size the smallest kind's count unless the largest is under 1.5× it."""
    kinds = [(kind, layers) for kind, layers in (("attention", attention), ("mamba", mamba))]
    present = [(kind, layers) for kind, layers in kinds if layers]
    if not present:
        return []
    smallest = min(len(layers) for _, layers in present)
    largest = max(len(layers) for _, layers in present)
    size = largest if largest < 1.5 * smallest else smallest
    groups: list[tuple[str, list[int]]] = []
    for kind, layers in present:
        n = profile.cdiv(len(layers), size)
        groups.extend((kind, layers[i::n]) for i in range(n))
    return groups


def _mamba_state_bytes(model: ModelEntry, tp: int, spec_tokens: int, ssm_bytes: int) -> int:
    groups = model.mamba_n_groups
    if groups % tp:
        groups = tp  # replicated up to TP when TP does not divide them
    conv_dim = model.mamba_num_heads * model.mamba_head_dim + 2 * groups * model.ssm_state_size
    conv = (model.conv_kernel - 1 + spec_tokens) * (conv_dim // tp) * 2  # conv state: bf16
    ssm = (model.mamba_num_heads // tp) * model.mamba_head_dim * model.ssm_state_size * ssm_bytes
    return conv + ssm


def _scheduler_defaults(gpu: Gpu) -> tuple[int, int]:
    """vLLM's server defaults for max_num_seqs / max_num_batched_tokens by GPU memory."""
    gib = gpu.memory_bytes / 2**30
    if gib >= 160:
        return 1024, 16384
    if gib >= 70 and "a100" not in gpu.name.lower():
        return 1024, 8192
    return 256, 2048


def info_labels(allocation: CacheAllocation, options: Mapping[str, Any]) -> dict[str, str]:
    """The labels vLLM 0.31 puts on ``vllm:cache_config_info``: CacheConfig's fields as strings
    (a representative subset), "None" for the unset ones."""
    prefix = options.get("--enable-prefix-caching", True) is not False
    return {
        "block_size": str(allocation.block_size),
        "cache_dtype": str(options.get("--kv-cache-dtype") or "auto"),
        "enable_prefix_caching": str(prefix),
        "gpu_memory_utilization": str(options.get("--gpu-memory-utilization") or 0.9),
        "is_attention_free": "False",
        "kv_cache_max_concurrency": str(allocation.max_concurrency),
        "kv_cache_memory_bytes": str(options.get("--kv-cache-memory-bytes")),
        "kv_cache_size_tokens": str(allocation.kv_cache_size_tokens),
        "mamba_cache_dtype": "auto",
        "mamba_ssm_cache_dtype": str(options.get("--mamba-ssm-cache-dtype") or "auto"),
        "num_cpu_blocks": "None",
        "num_gpu_blocks": str(allocation.num_gpu_blocks),
        "num_gpu_blocks_override": "None",
        "prefix_caching_hash_algo": "sha256",
        "sliding_window": "None",
    }
