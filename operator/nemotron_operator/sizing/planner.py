"""The planner: GPU products × parallel layouts → the plan with the fewest GPUs, then the most
concurrency, and every rejected alternative with a reason. Pure and deterministic."""

from __future__ import annotations

from dataclasses import dataclass

from nemotron_operator.api.model import ModelSpec
from nemotron_operator.api.plan import RejectedLayout
from nemotron_operator.api.spec import NemotronDeploymentSpec
from nemotron_operator.catalog.gpus import GIB, GPUS, GpuProduct, lookup_gpu
from nemotron_operator.catalog.model_data import lookup_model
from nemotron_operator.catalog.models import ModelEntry, model_from_architecture
from nemotron_operator.sizing import errors
from nemotron_operator.sizing.errors import PlanningError
from nemotron_operator.sizing.inventory import GpuInventory
from nemotron_operator.sizing.layouts import (
    candidates,
    precision_problem,
    structural_problem,
)
from nemotron_operator.sizing.memory import Layout, LayoutMemory, evaluate
from nemotron_operator.sizing.settings import EngineSettings, resolve_settings

PRODUCTS_FIELD = "spec.capacity.gpu.products"


@dataclass(frozen=True)
class Evaluation:
    """One layout tried on one product: ``problem`` None means it fits."""

    gpu: GpuProduct
    layout: Layout
    memory: LayoutMemory | None
    problem: str | None
    kind: str  # "fits", "memory", "parallelism", "precision"
    field: str | None = None

    @property
    def fits(self) -> bool:
        return self.problem is None

    def rejected(self, reason: str | None = None) -> RejectedLayout:
        return RejectedLayout(
            gpu_product=self.gpu.name,
            tensor_parallel=self.layout.tensor_parallel,
            pipeline_parallel=self.layout.pipeline_parallel,
            reason=_clip(reason or self.problem or ""),
        )


@dataclass(frozen=True)
class Search:
    model: ModelEntry
    settings: EngineSettings
    products: tuple[GpuProduct, ...]
    evaluations: tuple[Evaluation, ...]

    def best_per_product(self) -> tuple[Evaluation, ...]:
        best = []
        for gpu in self.products:
            fitting = [e for e in self.evaluations if e.gpu is gpu and e.fits]
            if fitting:
                best.append(min(fitting, key=_preference))
        return tuple(best)


def _preference(e: Evaluation) -> tuple[int, float, int]:
    assert e.memory is not None
    return (e.layout.gpus, -e.memory.max_concurrency, e.layout.pipeline_parallel)


def _clip(text: str, limit: int = 512) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def gib(value: int) -> str:
    return f"{value / GIB:.1f}"


def resolve_model(model: ModelSpec) -> ModelEntry:
    if model.architecture is not None:
        try:
            return model_from_architecture(model.id, model.architecture)
        except ValueError as exc:
            path, _, message = str(exc).partition(": ")
            if not path.startswith("spec.model.architecture") or not message:
                # An error that names no field is about the architecture as a whole.
                path, message = "spec.model.architecture", str(exc)
            raise PlanningError(errors.INVALID_ARCHITECTURE, message, field=path) from exc
    entry = lookup_model(model.id)
    if entry is None:
        raise PlanningError(
            errors.UNKNOWN_MODEL,
            f"{model.id} is not in the model catalog; use a catalog id (nemotron-operator models "
            "lists them) or describe the checkpoint in spec.model.architecture",
            field="spec.model.id",
        )
    return entry


def resolve_products(
    requested: list[str], inventory: GpuInventory | None
) -> tuple[GpuProduct, ...]:
    """Requested products, else the products the cluster has, else the whole catalog."""
    if requested:
        out = []
        for index, name in enumerate(requested):
            gpu = inventory.gpu_product(name) if inventory is not None else None
            gpu = gpu or lookup_gpu(name)
            if gpu is None:
                raise PlanningError(
                    errors.NO_MATCHING_GPUS,
                    f"unknown GPU product {name!r}: use a GPU Feature Discovery name "
                    "(nvidia.com/gpu.product) that the cluster has or that nemotron-operator "
                    "gpus lists, e.g. NVIDIA-H200",
                    field=f"{PRODUCTS_FIELD}[{index}]",
                )
            if gpu not in out:
                out.append(gpu)
        return tuple(out)
    if inventory is not None:
        present = [inventory.gpu_product(p) for p in inventory.products()]
        found = tuple(g for g in present if g is not None)
        if not found:
            raise PlanningError(
                errors.NO_MATCHING_GPUS,
                "the cluster has no GPU nodes (no node with a nvidia.com/gpu.product label and "
                "allocatable nvidia.com/gpu); install the NVIDIA GPU Operator or device plugin "
                "with GPU Feature Discovery, or add GPU nodes",
                field=None,
            )
        return found
    return GPUS


def memory_problem(memory: LayoutMemory, min_concurrency: int) -> str | None:
    b = memory.binding
    gpu = memory.gpu
    util = memory.settings.gpu_memory_utilization
    usable = f"{gib(b.usable_bytes)} GiB usable ({util:g} of {gib(gpu.memory_bytes)} GiB)"
    if memory.settings.extensible_kv_cache and memory.settings.explicit_utilization is None:
        usable = f"{gib(b.usable_bytes)} GiB (all of it, vLLM {memory.settings.profile.name})"
    if b.weights_bytes > b.usable_bytes:
        return f"weights need {gib(b.weights_bytes)} GiB per GPU; {gpu.name} has {usable}"
    if b.kv_pool_bytes <= 0:
        return (
            f"weights {gib(b.weights_bytes)} GiB + reserve {gib(b.reserve_bytes)} GiB per GPU "
            f"leave no KV cache in {usable}"
        )
    concurrency = memory.max_concurrency
    length = memory.settings.max_model_len
    if concurrency < 1:
        return (
            f"one {length}-token request needs {gib(memory.bytes_per_sequence)} GiB per GPU but "
            f"the KV pool is {gib(b.kv_pool_bytes)} GiB (vLLM would refuse to start)"
        )
    blocks = memory.num_blocks
    if memory.mamba_slots and memory.binding.mamba_layers and memory.max_num_seqs > blocks:
        # vLLM >= 0.19 (PR #38270, gpu_model_runner): with FULL decode CUDA graphs each running
        # sequence needs one Mamba cache block, and the engine raises at startup when
        # max_num_seqs > kv_cache_config.num_blocks (model-facts.md §2.5).
        return (
            f"vLLM would refuse to start: maxNumSeqs {memory.max_num_seqs} exceeds the {blocks} "
            f"Mamba cache blocks of the pool (one per running sequence); set "
            f"spec.engine.maxNumSeqs to at most {blocks}"
        )
    if concurrency < min_concurrency:
        return (
            f"holds {concurrency:.2f} full-length ({length}-token) requests, below "
            f"minConcurrency {min_concurrency}"
        )
    return None


def search(spec: NemotronDeploymentSpec, *, inventory: GpuInventory | None = None) -> Search:
    """Every layout worth trying on every candidate product, judged."""
    model = resolve_model(spec.model)
    settings = resolve_settings(spec.engine, model, adapters=bool(spec.adapters))
    products = resolve_products(spec.capacity.gpu.products, inventory)
    min_concurrency = spec.capacity.min_concurrency
    evaluations: list[Evaluation] = []
    for gpu in products:
        tried = candidates(model, gpu, spec.capacity)
        precision = precision_problem(model, gpu)
        if precision is not None:
            evaluations.extend(
                Evaluation(gpu, c.layout, None, precision, "precision") for c in tried
            )
            continue
        fit_gpus: int | None = None
        for candidate in tried:
            layout = candidate.layout
            if fit_gpus is not None and layout.gpus > fit_gpus:
                break
            problem = structural_problem(model, gpu, layout)
            if problem is not None:
                field = candidate.explicit_fields[0] if candidate.explicit_fields else None
                evaluations.append(Evaluation(gpu, layout, None, problem, "parallelism", field))
                continue
            memory = evaluate(model, gpu, layout, settings)
            problem = memory_problem(memory, min_concurrency)
            evaluations.append(
                Evaluation(gpu, layout, memory, problem, "memory" if problem else "fits")
            )
            if problem is None:
                fit_gpus = layout.gpus
    return Search(model, settings, products, tuple(evaluations))


def choose(found: Search) -> Evaluation:
    """The fewest GPUs, then the most concurrency; raises PlanningError when nothing fits."""
    best = found.best_per_product()
    if best:
        return min(best, key=lambda e: (*_preference(e), found.products.index(e.gpu)))
    tried = list(found.evaluations)
    kinds = {e.kind for e in tried}
    rejected = [e.rejected() for e in tried]
    if not tried:
        raise PlanningError(
            errors.INVALID_PARALLELISM,
            "spec.capacity.gpu.count cannot be split into a power-of-two tensor-parallel size "
            "times spec.capacity.parallelism.pipeline; make gpu.count equal tensor × pipeline",
            field="spec.capacity.gpu.count",
        )
    if "memory" not in kinds and "parallelism" in kinds:
        kinds = {"parallelism"}
        tried = [e for e in tried if e.kind == "parallelism"]
    if kinds == {"precision"}:
        raise PlanningError(
            errors.UNSUPPORTED_PRECISION,
            f"{found.model.hf_id} is {found.model.precision}, which none of the candidate GPUs "
            f"runs ({tried[0].problem}); choose a newer GPU in {PRODUCTS_FIELD} or another "
            "precision of the model",
            field=PRODUCTS_FIELD,
            rejected=rejected,
        )
    if kinds == {"parallelism"}:
        fields = {e.field for e in tried}
        field = fields.pop() if len(fields) == 1 else None
        raise PlanningError(
            errors.INVALID_PARALLELISM,
            f"no layout is valid for {found.model.hf_id}: {tried[0].problem}; change "
            f"{field or 'spec.capacity'}",
            field=field,
            rejected=rejected,
        )
    closest = max(
        (e for e in tried if e.memory is not None),
        key=lambda e: (e.memory.max_concurrency if e.memory else 0.0, -e.layout.gpus),
        default=None,
    )
    hint = ""
    if closest is not None:
        layout = closest.layout
        hint = (
            f" (closest: {closest.gpu.name} TP{layout.tensor_parallel} "
            f"PP{layout.pipeline_parallel}: {closest.problem})"
        )
    raise PlanningError(
        errors.INSUFFICIENT_GPU_MEMORY,
        f"no layout of {found.model.hf_id} on {', '.join(g.name for g in found.products)} "
        f"holds spec.capacity.minConcurrency full-length requests of "
        f"{found.settings.max_model_len} tokens{hint}; add GPUs (spec.capacity.gpu.count or a "
        "larger product), lower spec.engine.maxModelLen or spec.capacity.minConcurrency, or set "
        "spec.engine.kvCacheDtype to fp8",
        rejected=rejected,
    )
