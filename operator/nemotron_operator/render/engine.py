"""The ``vllm serve`` command line: flags only from typed fields and the plan, then extraArgs.

Flag order is fixed (deterministic output, readable diffs). Every flag rendered here is in
``catalog.vllm_flags`` (a unit test parses every rendered command with it).
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass

from nemotron_operator.api import NemotronDeployment, Plan
from nemotron_operator.catalog.vllm_releases import DEFAULT_PROFILE, profile_named
from nemotron_operator.catalog.vllm_rule_input import (
    reasoning_parser,
    rules_fired,
    tool_call_parser,
)
from nemotron_operator.catalog.vllm_rules import Action, Fired
from nemotron_operator.render import object_store
from nemotron_operator.render.adapters import lora_args
from nemotron_operator.render.inputs import ModelFacts

SERVE_PORT = 8000  # vLLM's default --port (FrontendArgs.port)
MASTER_PORT = 29501  # vLLM's default --master-port (model-facts.md §4)
NODE_RANK_ENV = "NODE_RANK"
MODEL_MOUNT = "/models"
PLUGIN_MOUNT = "/etc/nemotron/reasoning-parser"
DOWNLOAD_MARKER = ".nemotron-download-complete"


@dataclass(frozen=True)
class Distributed:
    """This pod's part in a multi-node replica."""

    nnodes: int
    master_addr: str
    worker: bool  # False: node rank 0, runs the API server; True: --headless rank from ordinal
    # The variable that holds a worker's node rank: NODE_RANK, which the pod template sets from
    # the StatefulSet's pod-index label, or LWS_WORKER_INDEX, which LeaderWorkerSet's pod
    # webhook injects (with LWS_LEADER_ADDRESS, the master address).
    rank_env: str = NODE_RANK_ENV


@dataclass(frozen=True)
class ServeSettings:
    """What the ``vllm serve`` command takes besides the spec's engine fields and the plan: the
    spec's defaults resolved against the model. (The engine settings of the memory model are
    ``sizing.EngineSettings``; the MTP draft tokens it resolves reach the command in the plan.)"""

    served_name: str
    model_path: str
    reasoning_parser: str | None
    plugin_file: str | None  # path of the mounted plugin file
    tool_call_parser: str | None
    images: int | None  # multimodal limits, VL models only
    videos: int | None
    enable_thinking: bool | None
    trust_remote_code: bool
    long_context: bool  # needs VLLM_ALLOW_LONG_MAX_MODEL_LEN=1
    fix_args: tuple[str, ...] = ()  # flags the vLLM rules' fixes add (catalog.vllm_rules)


def model_path(deployment: NemotronDeployment) -> str:
    """Where vLLM reads the weights: a path inside the serving container, or a bucket URI."""
    source = deployment.spec.model.source
    if source.pvc is not None:
        return posixpath.normpath(posixpath.join(MODEL_MOUNT, source.pvc.path.lstrip("/")))
    if source.object_store is not None:
        # vLLM takes the bucket URI as the model and streams from it (render/object_store.py).
        return source.object_store.uri
    return f"{MODEL_MOUNT}/{deployment.spec.model.id}"


def vllm_rules(deployment: NemotronDeployment, plan: Plan, model: ModelFacts) -> tuple[Fired, ...]:
    """The vLLM rules (``catalog.vllm_rules``) that fire for this deployment under ``plan``."""
    return rules_fired(
        deployment.spec,
        model,
        max_model_len=plan.max_model_len,
        block_size=plan.block_size_tokens,
        speculative_tokens=plan.speculative_tokens,
    )


def resolve_serve_settings(
    deployment: NemotronDeployment, plan: Plan, model: ModelFacts
) -> ServeSettings:
    spec = deployment.spec
    engine = spec.engine
    plugin = engine.reasoning_parser_plugin
    reasoning, _ = reasoning_parser(spec, model)
    tools = tool_call_parser(spec, model)
    multimodal = engine.multimodal
    return ServeSettings(
        served_name=spec.model.served_name or deployment.metadata.name,
        model_path=model_path(deployment),
        reasoning_parser=reasoning,
        plugin_file=None if plugin is None else f"{PLUGIN_MOUNT}/{plugin.file_name}",
        tool_call_parser=tools,
        images=(multimodal.images if multimodal else 8) if model.vision else None,
        videos=(multimodal.videos if multimodal else 2) if model.vision else None,
        enable_thinking=engine.enable_thinking,
        trust_remote_code=model.trust_remote_code,
        long_context=plan.max_model_len > model.max_position_embeddings,
        fix_args=tuple(
            arg
            for fired in vllm_rules(deployment, plan, model)
            if fired.action is Action.FIX
            for arg in fired.args
        ),
    )


def memory_args(deployment: NemotronDeployment, plan: Plan) -> list[str]:
    """``--gpu-memory-utilization`` (when the release needs it) and, with a planned pool,
    ``--kv-cache-memory-bytes``: vLLM's own override, so the pool it allocates per GPU is exactly
    the planned one (the plan's blocks and concurrency follow) and start-up profiling no longer
    sizes it."""
    args: list[str] = []
    utilization = engine_utilization(deployment, plan)
    if utilization is not None:
        args += ["--gpu-memory-utilization", _float(utilization)]
    if deployment.spec.engine.kv_cache_memory == "Planned":
        args += ["--kv-cache-memory-bytes", str(planned_pool_bytes(plan))]
    return args


def engine_utilization(deployment: NemotronDeployment, plan: Plan) -> float | None:
    """``--gpu-memory-utilization``: the spec's, else the operator's default for the plan's
    release (0.90 up to 0.33); None for 0.34, whose extensible KV cache uses 1.0 and measures its
    own headroom (an explicit value below 1 only withholds memory from the pool)."""
    explicit = deployment.spec.engine.gpu_memory_utilization
    if explicit is not None:
        return explicit
    profile = profile_named(plan.engine_version) or DEFAULT_PROFILE
    return profile.default_gpu_memory_utilization


def planned_pool_bytes(plan: Plan) -> int:
    """The per-GPU pool for ``--kv-cache-memory-bytes``: the plan's pool on the GPU whose pool
    fills first. vLLM gives every worker this budget and takes the fewest blocks over workers
    (``get_kv_cache_configs``), so the plan's ``kvCacheBlocks`` is what it allocates."""
    return max(0, plan.per_gpu.kv_pool_bytes)


def _json(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def serve_args(
    deployment: NemotronDeployment,
    plan: Plan,
    settings: ServeSettings,
    distributed: Distributed | None = None,
) -> list[str]:
    """Arguments after ``vllm serve``: the model path, then the flags."""
    engine = deployment.spec.engine
    args = [
        settings.model_path,
        "--served-model-name",
        settings.served_name,
        *object_store.load_args(deployment),
        "--tensor-parallel-size",
        str(plan.tensor_parallel),
        "--pipeline-parallel-size",
        str(plan.pipeline_parallel),
    ]
    if plan.expert_parallel:
        args.append("--enable-expert-parallel")
    args += ["--max-model-len", str(plan.max_model_len)]
    args += memory_args(deployment, plan)
    if engine.max_num_seqs is not None:
        args += ["--max-num-seqs", str(engine.max_num_seqs)]
    if engine.max_num_batched_tokens is not None:
        args += ["--max-num-batched-tokens", str(engine.max_num_batched_tokens)]
    args += ["--kv-cache-dtype", engine.kv_cache_dtype]
    args += ["--mamba-ssm-cache-dtype", engine.mamba_ssm_cache_dtype]
    # The plan's decision, which the endpoint picker's configuration follows too (gateway.py).
    args.append("--enable-prefix-caching" if plan.prefix_caching else "--no-enable-prefix-caching")
    args += settings.fix_args
    if plan.speculative_tokens > 0:
        spec = {"method": "mtp", "num_speculative_tokens": plan.speculative_tokens}
        args += ["--speculative-config", _json(spec)]
    if settings.plugin_file is not None:
        args += ["--reasoning-parser-plugin", settings.plugin_file]
    if settings.reasoning_parser is not None:
        args += ["--reasoning-parser", settings.reasoning_parser]
    if settings.tool_call_parser is not None:
        args += ["--tool-call-parser", settings.tool_call_parser, "--enable-auto-tool-choice"]
    if settings.images is not None and settings.videos is not None:
        limits = {"image": settings.images, "video": settings.videos}
        args += ["--limit-mm-per-prompt", _json(limits)]
    if settings.enable_thinking is not None:
        kwargs = {"enable_thinking": settings.enable_thinking}
        args += ["--default-chat-template-kwargs", _json(kwargs)]
    args += lora_args(deployment, settings.served_name)
    if settings.trust_remote_code:
        args.append("--trust-remote-code")
    args += _distributed_args(distributed)
    if distributed is None or not distributed.worker:
        args += ["--port", str(SERVE_PORT)]
    args += engine.extra_args
    return args


def _distributed_args(distributed: Distributed | None) -> list[str]:
    if distributed is None:
        return []
    rank = f"$({distributed.rank_env})" if distributed.worker else "0"
    args = [
        "--distributed-executor-backend",
        "mp",
        "--nnodes",
        str(distributed.nnodes),
        "--node-rank",
        rank,
        "--master-addr",
        distributed.master_addr,
        "--master-port",
        str(MASTER_PORT),
    ]
    if distributed.worker:
        args.append("--headless")
    return args


def _float(value: float) -> str:
    # repr keeps 0.9 as "0.9" and never switches to exponent notation for these values.
    return repr(value)
