"""The `vllm serve` flags the pinned vLLM accepts, how each takes its value, and which of them a
user may not pass through ``spec.engine.extraArgs``.

Pure data plus a small argv parser. Used by the renderer (every rendered flag must be here; every
extraArgs flag is checked) and by the stand-in vLLM (it refuses what real vLLM would refuse).

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

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from types import MappingProxyType

VLLM_VERSION = "v0.31.0"


class Kind(StrEnum):
    """How a flag takes its value."""

    BOOL = "bool"  # --x / --no-x, no value (BooleanOptionalAction)
    SWITCH = "switch"  # --x only, no value (store_true)
    STR = "str"
    INT = "int"
    FLOAT = "float"
    HUMAN_INT = "human-int"  # an int with an optional k/M/G suffix, or "auto"/-1
    CHOICE = "choice"
    JSON = "json"  # a JSON value; dotted sub-keys allowed
    LIST = "list"  # one or more values (nargs="+")


@dataclass(frozen=True)
class VllmFlag:
    """One long flag of ``vllm serve``."""

    name: str
    kind: Kind
    aliases: tuple[str, ...] = ()
    choices: tuple[str, ...] = ()
    source: str = "E"


def _f(
    name: str, kind: Kind, *aliases: str, choices: Iterable[str] = (), src: str = "E"
) -> VllmFlag:
    return VllmFlag(name, kind, tuple(aliases), tuple(choices), src)


_K = Kind
_MAMBA_DTYPES = ("auto", "float32", "float16", "bfloat16")  # [F] §2.2
# [E] ``vllm/config/cache.py`` ``CacheDType``: the union of its values across recent releases, so
# the check refuses typos and never a value the pinned version may accept.
_KV_CACHE_DTYPES = (
    "auto", "float16", "bfloat16", "int8", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "fp8_ds_mla",
    "nvfp4", "int8_per_token_head", "fp8_per_token_head", "int4_per_token_head",
    "turboquant_k8v4", "turboquant_4bit_nc", "turboquant_3bit_nc",
)  # fmt: skip

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
    _f("--max-model-len", _K.HUMAN_INT, src="F"),
    _f("--quantization", _K.STR, "-q"),
    _f("--load-format", _K.STR),
    _f("--download-dir", _K.STR),
    _f("--hf-overrides", _K.JSON),
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
    _f("--all2all-backend", _K.STR),
    _f("--nnodes", _K.INT, "-n", src="F"),
    _f("--node-rank", _K.INT, "-r", src="F"),
    _f("--master-addr", _K.STR, src="F"),
    _f("--master-port", _K.INT, src="F"),
    _f("--headless", _K.SWITCH, src="F"),
    _f(
        "--distributed-executor-backend",
        _K.CHOICE,
        choices=("mp", "ray", "uni", "external_launcher"),
        src="F",
    ),
    _f("--disable-custom-all-reduce", _K.BOOL),
    # Memory and cache [F] §2, §4
    _f("--gpu-memory-utilization", _K.FLOAT, src="F"),
    _f("--kv-cache-memory-bytes", _K.HUMAN_INT, src="F"),
    _f("--kv-cache-dtype", _K.CHOICE, choices=_KV_CACHE_DTYPES, src="F"),
    _f("--block-size", _K.INT, src="F"),
    _f("--enable-prefix-caching", _K.BOOL, src="F"),
    _f("--cpu-offload-gb", _K.FLOAT),
    _f("--num-gpu-blocks-override", _K.INT),
    _f("--calculate-kv-scales", _K.BOOL),
    _f("--mamba-cache-dtype", _K.CHOICE, choices=_MAMBA_DTYPES, src="F"),
    _f("--mamba-ssm-cache-dtype", _K.CHOICE, choices=_MAMBA_DTYPES, src="F"),
    _f("--mamba-block-size", _K.INT, src="F"),
    _f("--mamba-cache-mode", _K.CHOICE, choices=("all", "align", "none"), src="F"),
    _f("--mamba-backend", _K.STR, src="F"),
    _f("--enable-mamba-cache-stochastic-rounding", _K.BOOL, src="F"),
    _f("--mamba-cache-philox-rounds", _K.INT, src="F"),
    # Scheduler
    _f("--max-num-seqs", _K.INT, src="F"),
    _f("--max-num-batched-tokens", _K.HUMAN_INT, src="F"),
    _f("--enable-chunked-prefill", _K.BOOL, src="F"),
    _f("--async-scheduling", _K.BOOL, src="F"),
    _f("--scheduling-policy", _K.CHOICE, choices=("fcfs", "priority")),
    _f("--max-num-partial-prefills", _K.INT),
    _f("--long-prefill-token-threshold", _K.INT),
    _f("--stream-interval", _K.INT),
    # Speculative decoding [F]
    _f("--speculative-config", _K.JSON, "-sc", src="F"),
    _f("--spec-method", _K.STR, src="F"),
    _f("--spec-tokens", _K.INT, src="F"),
    # Compilation and kernels
    _f("--compilation-config", _K.JSON, "-O"),
    _f("--max-cudagraph-capture-size", _K.INT, src="F"),
    _f("--cudagraph-capture-sizes", _K.LIST),
    _f("--moe-backend", _K.STR, src="F"),
    _f("--attention-backend", _K.STR),
    # Multimodal [F]
    _f("--limit-mm-per-prompt", _K.JSON, src="F"),
    _f("--media-io-kwargs", _K.JSON, src="F"),
    _f("--mm-processor-kwargs", _K.JSON),
    _f("--mm-processor-cache-gb", _K.FLOAT),
    _f("--mm-encoder-tp-mode", _K.STR),
    _f("--skip-mm-profiling", _K.BOOL),
    _f("--video-pruning-rate", _K.FLOAT, src="F"),
    # Reasoning, tools, chat [F]
    _f("--reasoning-parser", _K.STR, src="F"),
    _f("--reasoning-parser-plugin", _K.STR, src="F"),
    _f("--structured-outputs-config", _K.JSON),
    _f("--tool-call-parser", _K.STR, src="F"),
    _f("--enable-auto-tool-choice", _K.BOOL, src="F"),
    _f("--tool-parser-plugin", _K.STR),
    _f("--exclude-tools-when-tool-choice-none", _K.BOOL),
    _f("--tool-server", _K.STR),
    _f("--chat-template", _K.STR),
    _f("--chat-template-content-format", _K.STR),
    _f("--trust-request-chat-template", _K.BOOL),
    _f("--default-chat-template-kwargs", _K.JSON),
    _f("--response-role", _K.STR),
    # LoRA
    _f("--enable-lora", _K.BOOL),
    _f("--max-loras", _K.INT),
    _f("--max-lora-rank", _K.INT),
    _f("--lora-modules", _K.LIST),
    # Observability
    _f("--disable-log-stats", _K.BOOL),
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
    _f("--middleware", _K.LIST),
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

_BY_SPELLING: dict[str, VllmFlag] = {}
for _flag in _TABLE:
    _BY_SPELLING[_flag.name] = _flag
    for _alias in _flag.aliases:
        _BY_SPELLING[_alias] = _flag

REMOVED: Mapping[str, str] = MappingProxyType(
    {"--swap-space": f"--swap-space does not exist in vLLM {VLLM_VERSION} (older guides pass it)"}
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
        "--kv-cache-memory-bytes": "bypasses --gpu-memory-utilization, so the plan's memory "
        "arithmetic no longer holds; set spec.engine.gpuMemoryUtilization",
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
    }
)
"""Flags a typed field owns: in extraArgs they are refused, naming the field to set instead."""


class FlagError(ValueError):
    """An argument vLLM would refuse; ``index`` is its position in the argument list."""

    def __init__(self, index: int, message: str) -> None:
        self.index = index
        super().__init__(message)


@dataclass(frozen=True)
class FlagUse:
    """One flag as it appears in an argument list."""

    flag: VllmFlag
    spelled: str
    value: str | tuple[str, ...] | None
    negated: bool
    index: int
    sub_key: str | None = None  # "method" in --speculative-config.method


_HUMAN_INT = re.compile(r"^(auto|-1|[0-9]+(\.[0-9]+)?[kKmMgG]?)$")


def _normalise(option: str) -> str:
    """Underscores → dashes in the flag name only: a dotted JSON sub-key
    (``--speculative-config.num_speculative_tokens``) keeps its own spelling."""
    if option.startswith("--"):
        name, dot, sub_key = option[2:].partition(".")
        return "--" + name.replace("_", "-") + dot + sub_key
    return option


def lookup(option: str) -> tuple[VllmFlag, bool, str | None] | None:
    """Resolve one spelling (``--tp``, ``--max_model_len``, ``--no-enable-prefix-caching``,
    ``--speculative-config.method``) to (flag, negated, JSON sub-key), or None if unknown."""
    spelled = _normalise(option.split("=", 1)[0])
    if spelled in _BY_SPELLING:
        return _BY_SPELLING[spelled], False, None
    if spelled.startswith("--no-"):
        flag = FLAGS.get("--" + spelled[5:])
        if flag is not None and flag.kind is Kind.BOOL:
            return flag, True, None
    head, dot, sub_key = spelled.partition(".")
    if dot and sub_key:
        flag = _BY_SPELLING.get(head)
        if flag is not None and flag.kind is Kind.JSON:
            return flag, False, sub_key
    return None


def canonical(option: str) -> str | None:
    """The canonical long name of a spelling, or None if vLLM has no such flag."""
    found = lookup(option)
    return None if found is None else found[0].name


def _is_option(token: str) -> bool:
    return token.startswith("-") and not _looks_numeric(token)


def _looks_numeric(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _check_value(flag: VllmFlag, value: str, index: int, sub_key: str | None) -> None:
    if sub_key is not None:
        return  # a dotted JSON sub-key takes any scalar
    problem = None
    if flag.kind is Kind.INT and not re.fullmatch(r"-?[0-9]+", value):
        problem = "an integer"
    elif flag.kind is Kind.FLOAT and not _looks_numeric(value):
        problem = "a number"
    elif flag.kind is Kind.HUMAN_INT and not _HUMAN_INT.match(value):
        problem = "an integer (k/M/G suffixes allowed) or auto"
    elif flag.kind is Kind.CHOICE and value not in flag.choices:
        problem = "one of " + ", ".join(flag.choices)
    elif flag.kind is Kind.JSON:
        try:
            json.loads(value)
        except ValueError:
            problem = "valid JSON"
    if problem is not None:
        raise FlagError(index, f"{flag.name} takes {problem}, got {value!r}")


def parse_args(args: Sequence[str], *, offset: int = 0) -> list[FlagUse]:
    """Split an argument list (no positional arguments) into flags with their values, the way
    vLLM's parser would; raise FlagError on the first argument it would refuse. Indices in the
    result and in errors are positions in ``args`` plus ``offset``."""
    try:
        uses = _parse(args)
    except FlagError as exc:
        raise FlagError(exc.index + offset, str(exc)) from None
    return [replace(u, index=u.index + offset) for u in uses]


def _parse(args: Sequence[str]) -> list[FlagUse]:
    uses: list[FlagUse] = []
    i = 0
    while i < len(args):
        token = args[i]
        if not _is_option(token):
            raise FlagError(i, f"unexpected value {token!r}: every argument must start with --")
        found = lookup(token)
        if found is None:
            name = _normalise(token.split("=", 1)[0])
            raise FlagError(i, REMOVED.get(name, f"vLLM {VLLM_VERSION} has no flag {name}"))
        flag, negated, sub_key = found
        inline = token.split("=", 1)[1] if "=" in token else None
        start = i
        value: str | tuple[str, ...] | None
        if flag.kind in (Kind.BOOL, Kind.SWITCH) and sub_key is None:
            if inline is not None:
                raise FlagError(i, f"{flag.name} is a switch and takes no value (use --no-… off)")
            value = None
        elif flag.kind is Kind.LIST and inline is None:
            values = []
            while i + 1 < len(args) and not _is_option(args[i + 1]):
                i += 1
                values.append(args[i])
            if not values:
                raise FlagError(start, f"{flag.name} needs at least one value")
            value = tuple(values)
        else:
            if inline is None:
                if i + 1 >= len(args) or _is_option(args[i + 1]):
                    raise FlagError(i, f"{flag.name} needs a value")
                i += 1
                inline = args[i]
            _check_value(flag, inline, start, sub_key)
            value = inline
        uses.append(FlagUse(flag, token.split("=", 1)[0], value, negated, start, sub_key))
        i += 1
    return uses


def parse_serve_command(argv: Sequence[str]) -> tuple[str, list[FlagUse]]:
    """Parse ``["vllm", "serve", MODEL, *flags]`` into (MODEL, flags)."""
    if len(argv) < 3 or list(argv[:2]) != ["vllm", "serve"] or _is_option(argv[2]):
        raise FlagError(0, "expected: vllm serve MODEL [flags...]")
    return argv[2], parse_args(argv[3:], offset=3)
