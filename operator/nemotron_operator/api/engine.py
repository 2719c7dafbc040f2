"""``spec.engine``: how vLLM runs. Every field maps to a typed vLLM flag; nothing is dropped."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from nemotron_operator.api.adapters import LoraSpec
from nemotron_operator.api.base import ApiModel, ResourceName, cel, validations

# Pinned vLLM image: the newest release the operator has an engine profile for
# (catalog.vllm_releases; 0.31 to 0.34 are planned, each with its own arithmetic).
DEFAULT_IMAGE = "vllm/vllm-openai:v0.34.0"
# The operator's --gpu-memory-utilization for the releases that size the pool as
# utilization × memory − non-KV (0.31-0.33); 0.34's extensible KV cache measures its own
# headroom and is left at vLLM's default (catalog.vllm_releases).
DEFAULT_GPU_MEMORY_UTILIZATION = 0.90

Image = Annotated[
    str,
    StringConstraints(
        min_length=1, max_length=512, pattern=r"^[a-z0-9][a-z0-9._/:@-]*[a-zA-Z0-9_.-]$"
    ),
]
ParserName = Annotated[
    str, StringConstraints(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")
]
FileName = Annotated[
    str, StringConstraints(min_length=1, max_length=253, pattern=r"^[-._a-zA-Z0-9]+$")
]
ExtraArg = Annotated[str, StringConstraints(min_length=1, max_length=1024)]
EngineVersion = Annotated[
    str,
    StringConstraints(min_length=1, max_length=64, pattern=r"^v?[0-9]+\.[0-9]+(\.[0-9]+)?$"),
]
KvCacheDtype = Literal["auto", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2"]
MambaSsmCacheDtype = Literal["float32", "float16", "bfloat16"]
# Who sizes the KV cache pool: vLLM from the memory it measures at start-up, or the plan.
KvCacheMemory = Literal["Measured", "Planned"]


class SpeculativeDecoding(ApiModel):
    """Speculative decoding with the checkpoint's built-in MTP head."""

    model_config = ApiModel.model_config | {
        "json_schema_extra": validations(
            cel(
                "self.method != 'mtp' || !has(self.numSpeculativeTokens) || "
                "(self.numSpeculativeTokens >= 1 && self.numSpeculativeTokens <= 8)",
                "numSpeculativeTokens must be between 1 and 8 when method is mtp",
                ".numSpeculativeTokens",
            ),
            cel(
                "self.method != 'none' || !has(self.numSpeculativeTokens) || "
                "self.numSpeculativeTokens == 0",
                "numSpeculativeTokens must be 0 or unset when method is none",
                ".numSpeculativeTokens",
            ),
        )
    }

    method: Literal["mtp", "none"] = Field(
        default="mtp", description="mtp: draft with the MTP head; none: no speculative decoding."
    )
    num_speculative_tokens: int | None = Field(
        default=None,
        ge=0,
        le=16,
        description="Draft tokens per step, 1-8 with mtp (default 1). NVIDIA's guides use 3 on "
        "B200/H200.",
    )

    @property
    def draft_tokens(self) -> int:
        """Draft tokens in effect: 0 when off, the given number or 1 with mtp."""
        if self.method == "none":
            return 0
        return 1 if self.num_speculative_tokens is None else self.num_speculative_tokens


class ReasoningParserPlugin(ApiModel):
    """A reasoning-parser plugin file (such as the checkpoints' own super_v3 parser) kept in a
    ConfigMap of the deployment's namespace; mounted and passed with --reasoning-parser-plugin."""

    config_map_name: ResourceName = Field(description="Name of the ConfigMap holding the file.")
    file_name: FileName = Field(
        description="Key of the ConfigMap holding the parser's Python file, e.g. "
        "super_v3_reasoning_parser.py."
    )
    parser_name: ParserName = Field(
        description="Name the plugin registers its parser under (passed as --reasoning-parser)."
    )


class Multimodal(ApiModel):
    """Per-prompt media limits for vision-language models (--limit-mm-per-prompt)."""

    images: int = Field(default=8, ge=0, le=256, description="Images per prompt.")
    videos: int = Field(default=2, ge=0, le=64, description="Videos per prompt.")


class EngineSpec(ApiModel):
    """The vLLM engine: image, context, memory and serving features."""

    model_config = ApiModel.model_config | {
        "json_schema_extra": validations(
            cel(
                "!(has(self.reasoningParser) && has(self.reasoningParserPlugin))",
                "set either reasoningParser (a built-in parser) or reasoningParserPlugin "
                "(a plugin file), not both",
            )
        )
    }

    image: Image = Field(
        default=DEFAULT_IMAGE,
        description="vLLM OpenAI server image. Its tag names the vLLM release the plan is "
        "computed for (v0.31.0 to v0.34.0; patch releases use their minor's arithmetic).",
    )
    version: EngineVersion | None = Field(
        default=None,
        description="The vLLM release the image runs, e.g. 0.33.0, for an image whose tag is "
        "not a version (a digest, a private build). Unset: read from the image's tag. "
        "Releases before 0.31 are refused; newer ones are planned as the newest known.",
    )
    max_model_len: int | None = Field(
        default=None,
        ge=1,
        le=16_777_216,
        description="Maximum context per request in tokens (--max-model-len). Default: the "
        "model's configured context limit.",
    )
    gpu_memory_utilization: float | None = Field(
        default=None,
        description="Fraction of each GPU's memory vLLM may use (--gpu-memory-utilization), "
        "strictly between 0 and 1. Default: 0.90 for vLLM 0.31-0.33; unset (not passed) for "
        "0.34, whose extensible KV cache measures its own headroom and uses 1.0.",
        json_schema_extra=validations(
            cel(
                "self > 0.0 && self < 1.0",
                "gpuMemoryUtilization must be greater than 0 and less than 1, e.g. 0.90",
            )
        ),
    )
    kv_cache_memory: KvCacheMemory = Field(
        default="Measured",
        description="Who sizes the KV cache pool. Measured: vLLM sizes it at start-up from the "
        "memory it measures (the plan predicts it). Planned: the operator passes the plan's "
        "per-GPU pool (status.plan.perGPU.kvPoolBytes) as --kv-cache-memory-bytes, so vLLM "
        "allocates exactly the planned pool on every release (deterministic blocks and "
        "concurrency; vLLM then skips its own memory check, so a plan that under-estimates the "
        "reserve can run out of memory).",
    )
    max_num_seqs: int | None = Field(
        default=None,
        ge=1,
        le=65536,
        description="Maximum sequences scheduled at once (--max-num-seqs). Default: vLLM's, "
        "which depends on the GPU.",
    )
    max_num_batched_tokens: int | None = Field(
        default=None,
        ge=1,
        le=1_048_576,
        description="Maximum tokens per scheduler step (--max-num-batched-tokens); sizes the "
        "activation reserve. Default: vLLM's, which depends on the GPU.",
    )
    kv_cache_dtype: KvCacheDtype = Field(
        default="auto",
        description="KV cache dtype (--kv-cache-dtype); auto follows the model dtype. fp8 "
        "halves KV bytes per token.",
    )
    mamba_ssm_cache_dtype: MambaSsmCacheDtype = Field(
        default="float32",
        description="Mamba SSM state dtype (--mamba-ssm-cache-dtype), always passed explicitly: "
        "NVIDIA recommends float32, and vLLM does not default it for the VL architecture.",
    )
    speculative_decoding: SpeculativeDecoding | None = Field(
        default=None,
        description="MTP speculative decoding. Default: on with 1 draft token for models with "
        "an MTP head, off otherwise.",
    )
    reasoning_parser: ParserName | None = Field(
        default=None,
        description="Built-in vLLM reasoning parser (--reasoning-parser). Default: nemotron_v3 "
        "for reasoning models of the catalog; 'none' disables it.",
    )
    reasoning_parser_plugin: ReasoningParserPlugin | None = Field(
        default=None, description="A reasoning-parser plugin file from a ConfigMap."
    )
    tool_call_parser: ParserName | None = Field(
        default=None,
        description="Tool-call parser (--tool-call-parser, with --enable-auto-tool-choice). "
        "Default: the catalog's (qwen3_coder for Nemotron 3/3.5); 'none' disables tool calls.",
    )
    multimodal: Multimodal | None = Field(
        default=None,
        description="Media limits per prompt; vision-language models only. Default for VL "
        "models: 8 images and 2 videos.",
    )
    enable_thinking: bool | None = Field(
        default=None,
        description="Default of the chat template's enable_thinking switch "
        "(--default-chat-template-kwargs). Unset: the template's own default.",
    )
    enable_prefix_caching: bool = Field(
        default=True,
        description="Prefix caching. On (vLLM's default for hybrid models) it reserves 2+S Mamba "
        "state slots per sequence; off, 1+S.",
    )
    lora: LoraSpec | None = Field(
        default=None,
        description="LoRA limits (--enable-lora, --max-loras, --max-lora-rank, --max-cpu-loras). "
        "Default: on with vLLM's defaults (1 adapter per batch, rank 16) when spec.adapters is "
        "not empty, off otherwise.",
    )
    extra_args: Annotated[list[ExtraArg], Field(max_length=64)] = Field(
        default_factory=list,
        description="Further vllm serve arguments, appended after the typed ones. Flags owned by "
        "typed fields and unsafe flags (--trust-remote-code, --tool-server, ...) are refused.",
    )
