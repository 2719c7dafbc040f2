"""The engine settings the memory model needs, resolved from the spec and the model.

Defaults are vLLM's (model-facts.md §2) unless the project sets its own
(``gpuMemoryUtilization`` 0.90, ``mambaSsmCacheDtype`` float32, MTP with one draft token).
"""

from __future__ import annotations

from dataclasses import dataclass

from nemotron_operator.api.adapters import DEFAULT_MAX_LORA_RANK, DEFAULT_MAX_LORAS
from nemotron_operator.api.engine import EngineSpec
from nemotron_operator.catalog.gpus import GIB, GpuProduct
from nemotron_operator.catalog.models import ModelEntry
from nemotron_operator.catalog.vllm_releases import (
    DEFAULT_PROFILE,
    EngineProfile,
    EngineRelease,
    EngineVersionError,
    resolve_release,
)
from nemotron_operator.sizing import errors
from nemotron_operator.sizing.errors import PlanningError
from nemotron_operator.sizing.lora import LoraLimits

# --kv-cache-dtype: auto follows the model dtype, BF16 for every Nemotron checkpoint (the FP8 and
# NVFP4 checkpoints quantize weights, and their dtype stays bfloat16) [S].
KV_DTYPE_BYTES = {"auto": 2, "bfloat16": 2, "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1}
SSM_DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}
# The conv state follows --mamba-cache-dtype, which the operator leaves at auto (model dtype).
CONV_DTYPE_BYTES = 2


DEFAULT_RELEASE = EngineRelease(DEFAULT_PROFILE, (*DEFAULT_PROFILE.minor, 0))


@dataclass(frozen=True)
class EngineSettings:
    max_model_len: int
    speculative_tokens: int
    kv_cache_dtype: str
    mamba_ssm_cache_dtype: str
    prefix_caching: bool
    gpu_memory_utilization: float
    max_num_seqs: int | None  # None: vLLM's default for the GPU (vllm_defaults)
    max_num_batched_tokens: int | None
    lora: LoraLimits | None = None  # --enable-lora with these limits (sizing.lora)
    release: EngineRelease = DEFAULT_RELEASE
    # --gpu-memory-utilization as the spec gives it (None: the release's default is in effect)
    explicit_utilization: float | None = None
    planned_pool: bool = False  # spec.engine.kvCacheMemory: Planned
    # --block-size in spec.engine.extraArgs: vLLM starts its hybrid block alignment from it
    # instead of the release's default (``user_specified_block_size``; vLLM's CPU build forces
    # 128 unless it is given)
    block_size: int | None = None

    @property
    def profile(self) -> EngineProfile:
        return self.release.profile

    @property
    def extensible_kv_cache(self) -> bool:
        """The pool is sized as vLLM 0.34's extensible KV cache sizes it. With a planned pool
        vLLM turns the extensible cache off (``config/vllm.py _resolve_extensible_kv_cache``) and
        allocates what the plan passes, which is still this figure: the plan does not depend on
        who enforces it."""
        return self.profile.extensible_kv_cache

    @property
    def kv_dtype_bytes(self) -> int:
        return KV_DTYPE_BYTES[self.kv_cache_dtype]

    @property
    def ssm_dtype_bytes(self) -> int:
        return SSM_DTYPE_BYTES[self.mamba_ssm_cache_dtype]

    def scheduler_limits(self, gpu: GpuProduct) -> tuple[int, int]:
        """(max_num_seqs, max_num_batched_tokens) as vLLM would run on ``gpu``."""
        seqs, tokens = vllm_defaults(gpu)
        return self.max_num_seqs or seqs, self.max_num_batched_tokens or tokens


def vllm_defaults(gpu: GpuProduct) -> tuple[int, int]:
    """vLLM's server defaults when unset (``engine/arg_utils.py``, model-facts.md §2.4 [P]):
    ≥160 GiB → 1024 sequences / 16384 tokens; ≥70 GiB and not an A100 → 1024 / 8192;
    else 256 / 2048."""
    if gpu.memory_bytes >= 160 * GIB:
        return 1024, 16384
    if gpu.memory_bytes >= 70 * GIB and "a100" not in gpu.name.lower():
        return 1024, 8192
    return 256, 2048


def resolve_settings(
    engine: EngineSpec, model: ModelEntry, *, adapters: bool = False
) -> EngineSettings:
    """Settings for ``model``; raises PlanningError for choices the model cannot honour.
    ``adapters``: the spec lists LoRA adapters (LoRA is on with vLLM's default limits even
    without ``engine.lora``)."""
    max_model_len: int = engine.max_model_len or model.max_position_embeddings
    if max_model_len > model.trained_context:
        raise PlanningError(
            errors.MAX_MODEL_LEN_TOO_LONG,
            f"{max_model_len} tokens is longer than {model.hf_id} supports "
            f"({model.trained_context} tokens); set spec.engine.maxModelLen to at most "
            f"{model.trained_context}",
            field="spec.engine.maxModelLen",
        )
    release = _release(engine)
    seqs, batched = engine.max_num_seqs, engine.max_num_batched_tokens
    if seqs is not None and batched is not None and batched < seqs:
        # vLLM's SchedulerConfig refuses it at start-up (the real engine's words, tests/contract)
        raise PlanningError(
            errors.INCOMPATIBLE_ENGINE_SETTINGS,
            f"spec.engine.maxNumBatchedTokens ({batched}) is smaller than spec.engine.maxNumSeqs "
            f"({seqs}): vLLM refuses to start (max_num_batched_tokens must be greater than or "
            f"equal to max_num_seqs); raise maxNumBatchedTokens to at least {seqs} or lower "
            "maxNumSeqs",
            field="spec.engine.maxNumBatchedTokens",
        )
    speculative = engine.speculative_decoding
    tokens: int
    if speculative is None:
        tokens = 1 if model.mtp_layers else 0
    elif speculative.method == "none":
        tokens = 0
    elif model.mtp_layers == 0:
        raise PlanningError(
            errors.SPECULATIVE_DECODING_UNSUPPORTED,
            f"{model.hf_id} has no MTP head (num_nextn_predict_layers is 0), so MTP speculative "
            "decoding cannot run; remove spec.engine.speculativeDecoding or set its method to none",
            field="spec.engine.speculativeDecoding",
        )
    else:
        tokens = speculative.draft_tokens
    return EngineSettings(
        max_model_len=max_model_len,
        speculative_tokens=tokens,
        kv_cache_dtype=engine.kv_cache_dtype,
        mamba_ssm_cache_dtype=engine.mamba_ssm_cache_dtype,
        prefix_caching=engine.enable_prefix_caching,
        gpu_memory_utilization=gpu_memory_utilization(engine.gpu_memory_utilization, release),
        max_num_seqs=engine.max_num_seqs,
        max_num_batched_tokens=engine.max_num_batched_tokens,
        lora=_lora(engine, adapters),
        release=release,
        explicit_utilization=engine.gpu_memory_utilization,
        planned_pool=engine.kv_cache_memory == "Planned",
        block_size=user_block_size(engine.extra_args),
    )


def user_block_size(extra_args: list[str]) -> int | None:
    """``--block-size N`` or ``--block-size=N`` among the extra args (a malformed value is left
    to the flag check, which refuses it naming the field)."""
    for i, arg in enumerate(extra_args):
        name, _, value = arg.partition("=")
        if name != "--block-size":
            continue
        if not value and i + 1 < len(extra_args):
            value = extra_args[i + 1]
        return int(value) if value.isdigit() and int(value) > 0 else None
    return None


def _release(engine: EngineSpec) -> EngineRelease:
    try:
        return resolve_release(engine.image, engine.version)
    except EngineVersionError as exc:
        raise PlanningError(errors.UNSUPPORTED_ENGINE_VERSION, str(exc), field=exc.field) from exc


def gpu_memory_utilization(explicit: float | None, release: EngineRelease) -> float:
    """The utilization vLLM runs with: the spec's, else the operator's default for the release,
    else vLLM's own (``CacheConfig.resolved_gpu_memory_utilization``: 1.0 with the extensible KV
    cache)."""
    if explicit is not None:
        return explicit
    default = release.profile.default_gpu_memory_utilization
    return 1.0 if default is None else default


def _lora(engine: EngineSpec, adapters: bool) -> LoraLimits | None:
    """vLLM's LoRA limits when LoRA is on: engine.lora's, or vLLM's defaults (1 adapter per batch,
    rank 16; ``LoRAConfig``) when only adapters are listed."""
    if engine.lora is not None:
        return LoraLimits(engine.lora.max_loras, engine.lora.max_lora_rank)
    if adapters:
        return LoraLimits(DEFAULT_MAX_LORAS, DEFAULT_MAX_LORA_RANK)
    return None
