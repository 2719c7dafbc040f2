"""Which parallel layouts to try on a GPU product, and the rules a layout must satisfy before its
memory is worth computing (vLLM's own checks, so a plan never renders a server that refuses to
start)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from nemotron_operator.api.capacity import CapacitySpec
from nemotron_operator.catalog.gpus import GpuProduct
from nemotron_operator.catalog.models import ModelEntry
from nemotron_operator.sizing.memory import Layout

# Pipeline stages the planner tries on its own (one node each); an explicit
# spec.capacity.parallelism.pipeline may go further.
MAX_PLANNED_PIPELINE = 8
TENSOR_SIZES = (1, 2, 4, 8, 16, 32, 64)

# Minimum compute capability of vLLM's ModelOpt kernels (quantization/modelopt.py
# get_min_capability [P]): FP8 8.0 (Marlin weight-only below 8.9), NVFP4 7.5 (Marlin W4A16 below
# 10.0).
MIN_CAPABILITY = {"BF16": (8, 0), "FP8": (8, 0), "NVFP4": (7, 5)}


@dataclass(frozen=True)
class Candidate:
    layout: Layout
    explicit_fields: tuple[str, ...]  # spec fields that fixed this layout (for error paths)


def expert_parallel_default(model: ModelEntry, tensor_parallel: int) -> bool:
    """On for MoE models when TP > 1: the expert-parallel group is the TP ranks (× DP, which is
    1 here), so with TP 1 — pipeline stages only — the flag would change nothing."""
    return model.is_moe and tensor_parallel > 1


def candidates(model: ModelEntry, gpu: GpuProduct, capacity: CapacitySpec) -> list[Candidate]:
    """Layouts to try, fewest GPUs first. Explicit choices are kept as given: they are checked,
    never changed."""
    par = capacity.parallelism
    count = capacity.gpu.count
    per_node = gpu.gpus_per_node
    fields: list[str] = []
    pairs: list[tuple[int, int]]
    if par.tensor is not None:
        fields.append("spec.capacity.parallelism.tensor")
    if par.pipeline is not None:
        fields.append("spec.capacity.parallelism.pipeline")
    if count is not None:
        fields.append("spec.capacity.gpu.count")
    tensors = [par.tensor] if par.tensor is not None else _planned_tensors(per_node, count)
    if par.pipeline is not None:
        pipelines = [par.pipeline]
    elif count is not None:
        pipelines = sorted({count // t for t in tensors if count % t == 0})
    else:
        pipelines = list(range(1, MAX_PLANNED_PIPELINE + 1))
    pairs = [(t, p) for t in tensors for p in pipelines]
    if count is not None:
        pairs = [(t, p) for t, p in pairs if t * p == count]
    if par.tensor is None and par.pipeline is None:
        # Planned: TP inside a node first; PP only across full nodes (unless gpu.count leaves
        # no other way to lay the count out).
        preferred = [(t, p) for t, p in pairs if p == 1 or t == per_node]
        pairs = preferred or pairs
    if par.expert is not None:
        fields.append("spec.capacity.parallelism.expert")
    out = []
    for t, p in sorted(set(pairs), key=lambda tp: (tp[0] * tp[1], tp[1])):
        expert = par.expert if par.expert is not None else expert_parallel_default(model, t)
        out.append(Candidate(Layout(t, p, expert), tuple(fields)))
    return out


def _planned_tensors(per_node: int, count: int | None) -> list[int]:
    limit = per_node if count is None else min(per_node, count)
    return [t for t in TENSOR_SIZES if t <= limit] or [1]


def structural_problem(model: ModelEntry, gpu: GpuProduct, layout: Layout) -> str | None:
    """Why vLLM would refuse this layout on this product, or None."""
    return next(_structural_problems(model, gpu, layout), None)


def _structural_problems(model: ModelEntry, gpu: GpuProduct, layout: Layout) -> Iterator[str]:
    t, p = layout.tensor_parallel, layout.pipeline_parallel
    dims = model.dims
    per_node = gpu.gpus_per_node
    if t > per_node and t % per_node:
        yield (
            f"TP {t} needs {t} GPUs but {gpu.name} nodes have {per_node}: a tensor-parallel "
            f"group spans whole nodes (a multiple of {per_node}) or stays inside one"
        )
    if model.num_attention_heads % t:
        yield f"TP {t} does not divide the {model.num_attention_heads} attention heads"
    kv = model.num_key_value_heads
    if kv % t and t % kv:
        yield f"TP {t} neither divides nor is a multiple of the {kv} KV heads"
    if model.mamba_num_heads and model.mamba_num_heads % t:
        yield f"TP {t} does not divide the {model.mamba_num_heads} Mamba heads"
    groups = model.mamba_n_groups
    if groups and groups % t and t % groups:
        yield f"TP {t} neither divides nor is a multiple of the {groups} Mamba groups"
    if layout.expert_parallel and not model.is_moe:
        yield "expert parallelism needs an MoE model; unset spec.capacity.parallelism.expert"
    if model.is_moe and layout.expert_parallel and model.n_routed_experts % t:
        experts = model.n_routed_experts
        yield f"expert parallelism over {t} ranks does not divide the {experts} experts"
    inter = dims.moe_intermediate_size
    if model.is_moe and not layout.expert_parallel and inter and inter % t:
        yield f"TP {t} does not divide the expert width {inter}"
    if dims.intermediate_size and "-" in model.layer_pattern and dims.intermediate_size % t:
        yield f"TP {t} does not divide the MLP width {dims.intermediate_size}"
    if p > model.num_hidden_layers:
        yield f"PP {p} exceeds the {model.num_hidden_layers} layers"
    gpus = t * p
    nodes = -(-gpus // per_node)
    if t > per_node:
        return  # each TP group fills whole nodes (checked above), so no group is split
    if nodes > 1 and (gpus % nodes or (gpus // nodes) % t):
        yield (
            f"{gpus} GPUs on {nodes} nodes of {gpu.gpus_per_node} would split a TP {t} group "
            "across nodes (vLLM places ranks evenly, node by node)"
        )


def precision_problem(model: ModelEntry, gpu: GpuProduct) -> str | None:
    need = MIN_CAPABILITY[model.precision]
    if gpu.compute_capability < need:
        return (
            f"{model.precision} checkpoints need compute capability {need[0]}.{need[1]} "
            f"(vLLM's kernels); {gpu.name} has {gpu.compute_capability_str}"
        )
    return None


def precision_note(model: ModelEntry, gpu: GpuProduct) -> str | None:
    if model.precision == "NVFP4" and not gpu.fp4:
        return (
            f"NVFP4 on {gpu.name} runs weight-only (Marlin W4A16): no FP4 tensor cores, so "
            "memory is saved but not compute; a Blackwell GPU runs it natively"
        )
    if model.precision == "FP8" and not gpu.fp8:
        return f"FP8 on {gpu.name} runs weight-only (Marlin W8A16): no FP8 tensor cores"
    return None
