"""Plans and model facts built by hand, for builder tests that must not depend on the planner's
numbers (golden manifests use the real planner)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nemotron_operator.api import NemotronDeployment, PerGpuMemory, Plan
from nemotron_operator.api.errors import parse_deployment
from nemotron_operator.render import RenderOptions, render_all

SUPER_VL = "nvidia/NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-BF16"
GIB = 1024**3
# A model outside the catalog described by spec.model.architecture, asking for remote code.
REMOTE_CODE_ARCHITECTURE: dict[str, Any] = {
    "layerPattern": "M*M-",
    "hiddenSize": 1024,
    "numAttentionHeads": 8,
    "numKeyValueHeads": 2,
    "headDim": 128,
    "vocabSize": 1000,
    "maxPositionEmbeddings": 262_144,
    "parameters": {"routedExperts": 0, "other": 1000},
    "trustRemoteCode": True,
}


@dataclass(frozen=True)
class FakeModel:
    hf_id: str = SUPER_VL
    family: str = "Nemotron 3.5 Super VL 120B-A12B"
    layer_pattern: str = "MEM*EMEM*E"  # hybrid: Mamba (M), MoE (E) and attention (*) layers
    vision: bool = True
    mtp_layers: int = 1
    trust_remote_code: bool = False
    default_reasoning_parser: str | None = "nemotron_v3"
    default_tool_call_parser: str | None = "qwen3_coder"
    max_position_embeddings: int = 262_144
    trained_context: int = 1_048_576


@dataclass(frozen=True)
class FakeResult:
    plan: Plan
    model: FakeModel = field(default_factory=FakeModel)


def make_plan(**overrides: Any) -> Plan:
    values: dict[str, Any] = {
        "model_id": SUPER_VL,
        "precision": "BF16",
        "gpu_product": "NVIDIA-H200",
        "gpu_memory_bytes": 143_771 * 1024**2,
        "gpus_per_node": 8,
        "tensor_parallel": 4,
        "pipeline_parallel": 1,
        "expert_parallel": True,
        "gpus_per_replica": 4,
        "nodes_per_replica": 1,
        "replicas": 1,
        "total_gpus": 4,
        "nodes": 1,
        "weights_total_bytes": int(231.8 * GIB),
        "per_gpu": PerGpuMemory(
            weights_bytes=60 * GIB, reserve_bytes=8 * GIB, kv_pool_bytes=50 * GIB
        ),
        "kv_bytes_per_token": 4608,
        "mamba_bytes_per_sequence": 100_000_000,
        "bytes_per_sequence": 1_300_000_000,
        "block_size_tokens": 1040,
        "max_concurrency": 40.0,
        "kv_cache_tokens": 10_000_000,
        "max_model_len": 262_144,
        "speculative_tokens": 1,
    }
    values.update(overrides)
    return Plan(**values)


def make_deployment(
    spec: dict[str, Any] | None = None, name: str = "super-vl"
) -> NemotronDeployment:
    body: dict[str, Any] = {"model": {"id": SUPER_VL}, "engine": {"maxModelLen": 262_144}}
    for key, value in (spec or {}).items():
        if isinstance(value, dict) and isinstance(body.get(key), dict):
            body[key] = {**body[key], **value}
        else:
            body[key] = value
    return parse_deployment(
        {
            "apiVersion": "serving.nemotron.io/v1alpha1",
            "kind": "NemotronDeployment",
            "metadata": {"name": name, "namespace": "ai"},
            "spec": body,
        }
    )


def render(
    spec: dict[str, Any] | None = None,
    *,
    plan: Plan | None = None,
    model: FakeModel | None = None,
    options: RenderOptions | None = None,
    name: str = "super-vl",
) -> list[dict[str, Any]]:
    result = FakeResult(plan or make_plan(), model or FakeModel())
    return render_all(make_deployment(spec, name=name), result, options)


def of_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind]


def pod_spec(objects: list[dict[str, Any]], index: int = 0) -> dict[str, Any]:
    spec: dict[str, Any] = of_kind(objects, "StatefulSet")[index]["spec"]["template"]["spec"]
    return spec


def vllm(objects: list[dict[str, Any]], index: int = 0) -> dict[str, Any]:
    container: dict[str, Any] = pod_spec(objects, index)["containers"][0]
    return container


def flag_value(args: list[str], flag: str) -> str | None:
    """The value after ``flag`` in ``args``; None when absent."""
    if flag not in args:
        return None
    return args[args.index(flag) + 1]
