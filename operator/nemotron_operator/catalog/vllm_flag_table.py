"""The `vllm serve` flags the pinned vLLM accepts and how each takes its value, as data; which of
them a user may not pass through ``spec.engine.extraArgs``, and why. The parser that reads an
argument list with this table is ``catalog.vllm_flags``.

Sources. [F] ``docs/model-facts.md`` §4, which checked the flags in the vLLM v0.31.0
and v0.33.0 source. [E] vLLM ``vllm/engine/arg_utils.py`` ``EngineArgs`` and
``vllm/entrypoints/openai/cli_args.py`` ``FrontendArgs`` (recent source, read for this table; the
flags below are long-standing ones also present in v0.31). How vLLM spells flags
(``FlexibleArgumentParser``): ``--a_b`` means ``--a-b``; ``--flag=value`` and ``--flag value``
both work; every boolean config field gets ``--x`` and ``--no-x`` (``argparse.
BooleanOptionalAction``, [E] ``_compute_kwargs``) and takes no value; a JSON field also accepts
dotted keys (``--speculative-config.method mtp``) [F].
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType

from nemotron_operator.catalog.vllm_releases import NEWEST, OLDEST

# The release the table is read against when no deployment names one: the newest profile. Which
# flags each release 0.31-0.34 has is generated data (catalog.vllm_release_flags).
VLLM_VERSION = f"v{NEWEST.release}"


class Kind(StrEnum):
    """How a flag takes its value."""

    BOOL = "bool"  # --x / --no-x, no value (BooleanOptionalAction)
    SWITCH = "switch"  # --x only, no value (store_true)
    STR = "str"
    INT = "int"
    FLOAT = "float"
    HUMAN_INT = "human-int"  # an int, or k/m/g/t (×1000) or K/M/G/T (×1024) (human_readable_int)
    HUMAN_INT_OR_AUTO = "human-int-or-auto"  # the same, or "auto"/-1 (human_readable_int_or_auto)
    CHOICE = "choice"  # one of ``choices``; empty: the release's generated ``flagChoices``
    JSON = "json"  # a JSON value; dotted sub-keys allowed
    JSON_OR_STR = "json-or-str"  # "{...}" must be a JSON object, anything else is a string
    LIST = "list"  # one or more values (nargs="+"), each a choice if the release has them
    INT_LIST = "int-list"  # one or more integers (nargs="+", type=int)
    APPEND = "append"  # one value per occurrence, repeatable (action="append")


@dataclass(frozen=True)
class VllmFlag:
    """One long flag of ``vllm serve``."""

    name: str
    kind: Kind
    aliases: tuple[str, ...] = ()
    choices: tuple[str, ...] = ()
    source: str = "E"
    # The parser lower-cases the value and turns "-" into "_" before checking the choice.
    folded: bool = False


def _f(
    name: str,
    kind: Kind,
    *aliases: str,
    choices: Iterable[str] = (),
    src: str = "E",
    folded: bool = False,
) -> VllmFlag:
    return VllmFlag(name, kind, tuple(aliases), tuple(choices), src, folded)


_K = Kind
_MAMBA_DTYPES = ("auto", "float32", "float16", "bfloat16")  # [F] §2.2
# A CHOICE flag with no choices here takes its release's values, generated from the wheel's
# Literal types (``vllm_release_data``'s ``flagChoices``; ``--mamba-cache-mode`` from its
# ``mambaCacheModes``): they differ between 0.31 and 0.34 (--kv-cache-dtype gains octave_*).

_TABLE: tuple[VllmFlag, ...] = (
    # Model and loading
    _f("--model", _K.STR),
    _f("--served-model-name", _K.LIST, src="F"),
    _f("--tokenizer", _K.STR),
    _f("--tokenizer-mode", _K.STR),
    _f("--revision", _K.STR),
    _f("--code-revision", _K.STR),
    _f("--tokenizer-revision", _K.STR),
    _f("--trust-remote-code", _K.BOOL, src="F"),
    _f("--dtype", _K.CHOICE, choices=("auto", "half", "float16", "bfloat16", "float", "float32")),
    _f("--seed", _K.INT),
    _f("--max-model-len", _K.HUMAN_INT_OR_AUTO, src="F"),
    _f("--quantization", _K.STR, "-q"),
    _f("--load-format", _K.STR),
    # [E] ``LoadConfig.model_loader_extra_config`` (vllm/config/load.py): a JSON object; the
    # Run:ai streamer loader reads "concurrency", "memory_limit" and "distributed" from it.
    _f("--model-loader-extra-config", _K.JSON_OR_STR),
    _f("--download-dir", _K.STR),
    _f("--hf-overrides", _K.JSON_OR_STR),  # vLLM's union_dict_and_str, as the one above
    _f("--hf-token", _K.STR),
    _f("--allowed-local-media-path", _K.STR),
    _f("--allowed-media-domains", _K.LIST),
    _f("--generation-config", _K.STR),
    _f("--override-generation-config", _K.JSON),
    _f("--enforce-eager", _K.BOOL),
    _f("--max-logprobs", _K.INT),
    _f("--enable-prompt-embeds", _K.BOOL),
    _f("--model-impl", _K.STR),
    _f("--logits-processors", _K.LIST),
    _f("--max-parallel-loading-workers", _K.INT),
    # Parallelism and multi-node [F]
    _f("--tensor-parallel-size", _K.INT, "-tp", src="F"),
    _f("--pipeline-parallel-size", _K.INT, "-pp", src="F"),
    _f("--data-parallel-size", _K.INT, "-dp", src="F"),
    _f("--data-parallel-size-local", _K.INT, src="F"),
    _f("--data-parallel-address", _K.STR, src="F"),
    _f("--data-parallel-rpc-port", _K.INT, src="F"),
    _f("--data-parallel-start-rank", _K.INT, src="F"),
    _f("--data-parallel-rank", _K.INT, src="F"),
    _f("--data-parallel-hybrid-lb", _K.BOOL, src="F"),
    _f("--data-parallel-external-lb", _K.BOOL, src="F"),
    _f("--enable-expert-parallel", _K.BOOL, "-ep", src="F"),
    _f("--enable-eplb", _K.BOOL),
    _f("--eplb-config", _K.JSON),
    _f("--all2all-backend", _K.CHOICE),
    _f("--nnodes", _K.INT, "-n", src="F"),
    _f("--node-rank", _K.INT, "-r", src="F"),
    _f("--master-addr", _K.STR, src="F"),
    _f("--master-port", _K.INT, src="F"),
    _f("--headless", _K.SWITCH, src="F"),
    # Any string: mp, ray, uni, external_launcher or a class path (a str-or-Literal field).
    _f("--distributed-executor-backend", _K.STR, src="F"),
    _f("--disable-custom-all-reduce", _K.BOOL),
    # Memory and cache [F] §2, §4
    _f("--gpu-memory-utilization", _K.FLOAT, src="F"),
    _f("--kv-cache-memory-bytes", _K.HUMAN_INT, src="F"),
    _f("--kv-cache-dtype", _K.CHOICE, src="F"),
    _f("--block-size", _K.INT, src="F"),
    _f("--enable-prefix-caching", _K.BOOL, src="F"),
    _f("--cpu-offload-gb", _K.FLOAT),
    _f("--num-gpu-blocks-override", _K.INT),
    _f("--mamba-cache-dtype", _K.CHOICE, choices=_MAMBA_DTYPES, src="F"),
    _f("--mamba-ssm-cache-dtype", _K.CHOICE, choices=_MAMBA_DTYPES, src="F"),
    _f("--mamba-block-size", _K.INT, src="F"),
    _f("--mamba-cache-mode", _K.CHOICE, src="F"),
    _f("--mamba-backend", _K.STR, src="F"),
    _f("--enable-mamba-cache-stochastic-rounding", _K.BOOL, src="F"),
    _f("--mamba-cache-philox-rounds", _K.INT, src="F"),
    # Scheduler
    _f("--max-num-seqs", _K.INT, src="F"),
    _f("--max-num-batched-tokens", _K.HUMAN_INT, src="F"),
    _f("--enable-chunked-prefill", _K.BOOL, src="F"),
    _f("--async-scheduling", _K.BOOL, src="F"),
    _f("--scheduling-policy", _K.CHOICE, choices=("fcfs", "priority")),
    _f("--long-prefill-token-threshold", _K.INT),
    _f("--stream-interval", _K.INT),
    # Speculative decoding [F]
    _f("--speculative-config", _K.JSON, "-sc", src="F"),
    _f("--spec-method", _K.CHOICE, src="F"),
    _f("--spec-tokens", _K.INT, src="F"),
    # Compilation and kernels
    # -cc, as generated from each release (vllm_release_data); -O is --optimization-level there.
    _f("--compilation-config", _K.JSON, "-cc"),
    _f("--max-cudagraph-capture-size", _K.INT, src="F"),
    _f("--cudagraph-capture-sizes", _K.INT_LIST),
    # [E] arg_utils.py (0.31-0.34): ``type=lambda s: s.lower().replace("-", "_")``.
    _f("--moe-backend", _K.CHOICE, src="F", folded=True),
    _f("--attention-backend", _K.STR),
    # Multimodal [F]
    _f("--limit-mm-per-prompt", _K.JSON, src="F"),
    _f("--media-io-kwargs", _K.JSON, src="F"),
    _f("--mm-processor-kwargs", _K.JSON),
    _f("--mm-processor-cache-gb", _K.FLOAT),
    _f("--mm-encoder-tp-mode", _K.CHOICE),
    _f("--skip-mm-profiling", _K.BOOL),
    _f("--video-pruning-rate", _K.FLOAT, src="F"),
    # Reasoning, tools, chat [F]
    _f("--reasoning-parser", _K.STR, src="F"),
    _f("--reasoning-parser-plugin", _K.STR, src="F"),
    # [E] ``vllm/config/vllm.py`` ``VllmConfig.reasoning_config``; used with v0.19 in vllm#39103.
    _f("--reasoning-config", _K.JSON),
    _f("--structured-outputs-config", _K.JSON),
    _f("--tool-call-parser", _K.STR, src="F"),
    _f("--enable-auto-tool-choice", _K.BOOL, src="F"),
    _f("--tool-parser-plugin", _K.STR),
    _f("--exclude-tools-when-tool-choice-none", _K.BOOL),
    _f("--tool-server", _K.STR),
    _f("--chat-template", _K.STR),
    _f("--chat-template-content-format", _K.CHOICE),
    _f("--trust-request-chat-template", _K.BOOL),
    _f("--default-chat-template-kwargs", _K.JSON),
    _f("--response-role", _K.STR),
    # LoRA
    # LoRA ([E] ``EngineArgs`` LoRA group, ``LoRAConfig`` in vllm/config/lora.py; the value
    # rules are catalog.vllm_lora's)
    _f("--enable-lora", _K.BOOL),
    _f("--max-loras", _K.INT),
    _f("--max-lora-rank", _K.INT),
    _f("--max-cpu-loras", _K.INT),
    _f("--fully-sharded-loras", _K.BOOL),
    _f("--lora-dtype", _K.CHOICE, choices=("auto", "float16", "bfloat16")),
    _f("--lora-modules", _K.LIST),
    # Observability
    _f("--disable-log-stats", _K.SWITCH),
    _f("--enable-log-requests", _K.BOOL),
    _f("--enable-log-outputs", _K.BOOL),
    _f("--max-log-len", _K.INT),
    _f("--otlp-traces-endpoint", _K.STR),
    _f("--collect-detailed-traces", _K.LIST),
    _f("--show-hidden-metrics-for-version", _K.STR),
    _f("--kv-cache-metrics", _K.BOOL),
    _f("--profiler-config", _K.JSON),
    _f("--enable-sleep-mode", _K.BOOL),
    _f("--kv-transfer-config", _K.JSON),
    _f("--worker-extension-cls", _K.STR),
    _f("--weight-transfer-config", _K.JSON),
    # API server (FrontendArgs)
    _f("--host", _K.STR),
    _f("--port", _K.INT),
    _f("--uds", _K.STR),
    _f(
        "--uvicorn-log-level",
        _K.CHOICE,
        choices=("critical", "error", "warning", "info", "debug", "trace"),
    ),
    _f("--disable-uvicorn-access-log", _K.BOOL),
    _f("--disable-access-log-for-endpoints", _K.STR),
    _f("--api-key", _K.LIST),
    _f("--allow-credentials", _K.BOOL),
    _f("--allowed-origins", _K.JSON),
    _f("--allowed-methods", _K.JSON),
    _f("--allowed-headers", _K.JSON),
    _f("--ssl-keyfile", _K.STR),
    _f("--ssl-certfile", _K.STR),
    _f("--ssl-ca-certs", _K.STR),
    _f("--root-path", _K.STR),
    _f("--middleware", _K.APPEND),
    _f("--enable-request-id-headers", _K.BOOL),
    _f("--disable-fastapi-docs", _K.BOOL),
    _f("--enable-prompt-tokens-details", _K.BOOL),
    _f("--enable-server-load-tracking", _K.BOOL),
    _f("--enable-force-include-usage", _K.BOOL),
    _f("--enable-tokenizer-info-endpoint", _K.BOOL),
    _f("--log-config-file", _K.STR),
)

FLAGS: Mapping[str, VllmFlag] = MappingProxyType({f.name: f for f in _TABLE})
"""Every accepted long flag by its canonical spelling."""

BY_SPELLING: Mapping[str, VllmFlag] = MappingProxyType(
    {spelling: f for f in _TABLE for spelling in (f.name, *f.aliases)}
)
"""Every accepted spelling (canonical names and aliases) → its flag."""

REMOVED: Mapping[str, str] = MappingProxyType(
    {
        "--swap-space": f"--swap-space does not exist in vLLM {OLDEST.name} to {NEWEST.name} "
        "(older guides pass it)"
    }
)
"""Flags users copy from old guides that the pinned vLLM no longer has [F]."""

_OPERATOR_OWNS = "is set by the operator"
DENIED: Mapping[str, str] = MappingProxyType(
    {
        "--trust-remote-code": "runs Python code from the model repository; the operator passes "
        "it only for models that need it (the catalog, or spec.model.architecture."
        "trustRemoteCode) when the administrator allows remote code",
        "--tool-server": "lets the model reach arbitrary hosts and run code (vLLM security guide)",
        "--enable-tokenizer-info-endpoint": "exposes chat templates and tokenizer configuration "
        "(vLLM security guide)",
        "--profiler-config": "profiler options are not for production servers (vLLM security "
        "guide)",
        "--api-key": "a secret in the spec is copied into annotations, logs and the pod spec; "
        "put an authenticating gateway in front of the Service instead",
        "--hf-token": "a secret in the spec leaks; use spec.model.source.huggingFace."
        "tokenSecretRef",
        "--allowed-local-media-path": "lets any client read files from the server's filesystem",
        "--middleware": "imports arbitrary code into the API server; build an image instead",
        "--worker-extension-cls": "opens weight-update paths that --api-key does not guard",
        "--weight-transfer-config": "opens weight-update paths that --api-key does not guard",
        "--host": f"{_OPERATOR_OWNS}: probes, the Service and the PodMonitor use port 8000",
        "--port": f"{_OPERATOR_OWNS}: probes, the Service and the PodMonitor use port 8000",
        "--uds": f"{_OPERATOR_OWNS}: probes, the Service and the PodMonitor use port 8000",
        "--num-gpu-blocks-override": "overrides the KV cache size the plan computed",
        "--data-parallel-size": "each replica is its own vLLM server; scale with spec.replicas",
        "--data-parallel-size-local": "each replica is its own vLLM server; use spec.replicas",
        "--data-parallel-address": "each replica is its own vLLM server; use spec.replicas",
        "--data-parallel-rpc-port": "each replica is its own vLLM server; use spec.replicas",
        "--data-parallel-start-rank": "each replica is its own vLLM server; use spec.replicas",
        "--data-parallel-rank": "each replica is its own vLLM server; use spec.replicas",
        "--data-parallel-hybrid-lb": "each replica is its own vLLM server; use spec.replicas",
        "--data-parallel-external-lb": "each replica is its own vLLM server; use spec.replicas",
        "--nnodes": f"{_OPERATOR_OWNS} from the plan (nodes per replica)",
        "--node-rank": f"{_OPERATOR_OWNS} from the pod ordinal",
        "--master-addr": f"{_OPERATOR_OWNS}: the leader pod's DNS name",
        "--master-port": f"{_OPERATOR_OWNS} for multi-node replicas",
        "--headless": f"{_OPERATOR_OWNS} on the worker pods of a multi-node replica",
        "--distributed-executor-backend": f"{_OPERATOR_OWNS} (mp; multi-node without Ray)",
    }
)
"""Flags never accepted in extraArgs, with the reason shown to the user."""

OWNED_BY_FIELD: Mapping[str, str] = MappingProxyType(
    {
        "--model": "spec.model.id",
        "--download-dir": "spec.model.source",
        "--served-model-name": "spec.model.servedName",
        "--revision": "spec.model.revision",
        "--tensor-parallel-size": "spec.capacity.parallelism.tensor",
        "--pipeline-parallel-size": "spec.capacity.parallelism.pipeline",
        "--enable-expert-parallel": "spec.capacity.parallelism.expert",
        "--max-model-len": "spec.engine.maxModelLen",
        "--gpu-memory-utilization": "spec.engine.gpuMemoryUtilization",
        "--kv-cache-memory-bytes": "spec.engine.kvCacheMemory",
        "--max-num-seqs": "spec.engine.maxNumSeqs",
        "--max-num-batched-tokens": "spec.engine.maxNumBatchedTokens",
        "--kv-cache-dtype": "spec.engine.kvCacheDtype",
        "--mamba-ssm-cache-dtype": "spec.engine.mambaSsmCacheDtype",
        "--mamba-cache-mode": "spec.engine.enablePrefixCaching",
        "--enable-prefix-caching": "spec.engine.enablePrefixCaching",
        "--speculative-config": "spec.engine.speculativeDecoding",
        "--spec-method": "spec.engine.speculativeDecoding",
        "--spec-tokens": "spec.engine.speculativeDecoding",
        "--reasoning-parser": "spec.engine.reasoningParser",
        "--reasoning-parser-plugin": "spec.engine.reasoningParserPlugin",
        "--tool-call-parser": "spec.engine.toolCallParser",
        "--enable-auto-tool-choice": "spec.engine.toolCallParser",
        "--limit-mm-per-prompt": "spec.engine.multimodal",
        "--default-chat-template-kwargs": "spec.engine.enableThinking",
        "--enable-lora": "spec.engine.lora",
        "--max-loras": "spec.engine.lora.maxLoras",
        "--max-lora-rank": "spec.engine.lora.maxLoraRank",
        "--max-cpu-loras": "spec.engine.lora.maxCpuLoras",
        "--lora-modules": "spec.adapters",
    }
)
"""Flags a typed field owns: in extraArgs they are refused, naming the field to set instead."""
