"""``plan_deployment``: the spec → ``PlanResult`` (the ``status.plan`` object, the model entry,
the GPU product), or ``PlanningError``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from nemotron_operator.api.plan import (
    MAX_REJECTED,
    PerGpuMemory,
    Plan,
    RejectedLayout,
    ReserveComponent,
)
from nemotron_operator.api.spec import NemotronDeploymentSpec
from nemotron_operator.catalog.gpus import GpuProduct
from nemotron_operator.catalog.models import ModelEntry
from nemotron_operator.catalog.vllm_rule_input import rules_fired
from nemotron_operator.catalog.vllm_rules import Action, Fired
from nemotron_operator.sizing import errors
from nemotron_operator.sizing.cache import cdiv
from nemotron_operator.sizing.errors import PlanningError
from nemotron_operator.sizing.inventory import GpuInventory
from nemotron_operator.sizing.layouts import precision_note
from nemotron_operator.sizing.memory import LayoutMemory
from nemotron_operator.sizing.planner import Evaluation, Search, choose, search
from nemotron_operator.sizing.settings import EngineSettings

MAX_NOTES = 16


@dataclass(frozen=True)
class PlanResult:
    """The chosen plan (exactly ``status.plan``), with the entries it was computed from."""

    plan: Plan
    model: ModelEntry
    gpu: GpuProduct
    memory: LayoutMemory
    settings: EngineSettings
    alternatives: tuple[Evaluation, ...]  # the best layout on every candidate product
    rules: tuple[Fired, ...] = ()  # the vLLM rules that fired (fixes and warnings)

    @property
    def allow_long_max_model_len(self) -> bool:
        """maxModelLen beyond the config's limit: vLLM needs VLLM_ALLOW_LONG_MAX_MODEL_LEN=1."""
        return self.plan.max_model_len > self.model.max_position_embeddings


def nodes_for(replicas: int, gpus_per_replica: int, gpus_per_node: int) -> tuple[int, int]:
    """(nodes per replica, nodes for all replicas): several small replicas share a node; a
    replica larger than a node takes whole nodes."""
    per_replica = cdiv(gpus_per_replica, gpus_per_node)
    if replicas == 0:
        return per_replica, 0
    if gpus_per_replica <= gpus_per_node:
        return per_replica, cdiv(replicas, gpus_per_node // gpus_per_replica)
    return per_replica, replicas * per_replica


def rank_rejected(
    chosen: Evaluation | None, evaluations: Sequence[Evaluation], best: Sequence[Evaluation]
) -> tuple[list[RejectedLayout], int]:
    """Rejections worth reading first: layouts that failed, fewest GPUs first (those explain why
    the plan needs what it needs), then the other products' best layouts and why they lost."""
    failed = sorted(
        (e for e in evaluations if not e.fits),
        key=lambda e: (e.gpu is not (chosen.gpu if chosen else None), e.layout.gpus),
    )
    out = [e.rejected() for e in failed]
    if chosen is not None and chosen.memory is not None:
        for other in best:
            if other is chosen or other.memory is None:
                continue
            why = (
                "needs more GPUs"
                if other.layout.gpus > chosen.layout.gpus
                else "holds fewer full-length requests"
            )
            out.append(
                other.rejected(
                    f"fits on {other.layout.gpus} GPU(s) with max concurrency "
                    f"{other.memory.max_concurrency:.2f}, but {why} than {chosen.gpu.name} "
                    f"TP{chosen.layout.tensor_parallel} PP{chosen.layout.pipeline_parallel}"
                )
            )
    return out[:MAX_REJECTED], max(0, len(out) - MAX_REJECTED)


# status.plan.notes carries the model's unverified catalog facts with this prefix; the plan table
# prints them in a section of their own.
UNVERIFIED_PREFIX = "unverified catalog fact: "


def notes_for(
    model: ModelEntry,
    gpu: GpuProduct,
    memory: LayoutMemory,
    settings: EngineSettings,
    rules: Sequence[Fired] = (),
) -> list[str]:
    notes: list[str] = [fired.note for fired in rules]
    if settings.release.note:
        notes.append(settings.release.note)
    precision = precision_note(model, gpu)
    if precision:
        notes.append(precision)
    if settings.max_model_len > model.max_position_embeddings:
        notes.append(
            f"maxModelLen {settings.max_model_len} exceeds the config's "
            f"max_position_embeddings {model.max_position_embeddings}: the server runs with "
            "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (the model was trained to "
            f"{model.trained_context} tokens)"
        )
    if gpu.note:
        notes.append(f"{gpu.name}: {gpu.note}")
    if not model.in_catalog:
        notes.append(
            "explicit architecture: parameters beyond the Mamba, attention and embedding "
            "dimensions are assumed TP-sharded; check the plan against vLLM's startup log"
        )
    if memory.max_concurrency > memory.max_num_seqs:
        notes.append(
            f"the pool holds {memory.max_concurrency:.0f} full-length requests but vLLM "
            f"schedules at most maxNumSeqs={memory.max_num_seqs} at once"
        )
    notes.extend(model.notes)
    notes.extend(f"{UNVERIFIED_PREFIX}{fact}" for fact in model.unverified)
    return [n[:512] for n in notes[:MAX_NOTES]]


def build_plan(
    spec: NemotronDeploymentSpec, found: Search, chosen: Evaluation, rules: Sequence[Fired] = ()
) -> Plan:
    memory = chosen.memory
    assert memory is not None
    gpu = chosen.gpu
    model = found.model
    settings = found.settings
    layout = chosen.layout
    binding = memory.binding
    per_replica_nodes, nodes = nodes_for(spec.replicas, layout.gpus, gpu.gpus_per_node)
    rejected, omitted = rank_rejected(chosen, found.evaluations, found.best_per_product())
    return Plan(
        model_id=spec.model.id,
        engine_version=settings.profile.name,
        precision=model.precision,
        gpu_product=gpu.name,
        gpu_memory_bytes=gpu.memory_bytes,
        gpus_per_node=gpu.gpus_per_node,
        tensor_parallel=layout.tensor_parallel,
        pipeline_parallel=layout.pipeline_parallel,
        expert_parallel=layout.expert_parallel,
        gpus_per_replica=layout.gpus,
        nodes_per_replica=per_replica_nodes,
        replicas=spec.replicas,
        total_gpus=spec.replicas * layout.gpus,
        nodes=nodes,
        weights_total_bytes=model.weights_bytes(),
        per_gpu=PerGpuMemory(
            weights_bytes=binding.weights_bytes,
            reserve_bytes=binding.reserve_bytes,
            kv_pool_bytes=binding.kv_pool_bytes,
            usable_bytes=binding.usable_bytes,
            reserve_components=[ReserveComponent(name=n, bytes=b) for n, b in binding.reserve],
        ),
        kv_bytes_per_token=memory.kv_bytes_per_token,
        mamba_bytes_per_sequence=memory.mamba_bytes_per_sequence,
        bytes_per_sequence=memory.bytes_per_sequence,
        block_size_tokens=memory.block_size,
        prefix_caching=settings.prefix_caching,
        max_concurrency=round(memory.max_concurrency, 2),
        kv_cache_tokens=memory.kv_cache_tokens,
        max_model_len=settings.max_model_len,
        speculative_tokens=settings.speculative_tokens,
        mamba_state_bytes_per_sequence=memory.mamba_state_bytes_per_sequence,
        kv_cache_blocks=memory.num_blocks,
        blocks_per_sequence=memory.blocks_per_request,
        kv_cache_groups=len(memory.groups),
        layers_per_group=binding.layers_per_group,
        max_num_seqs=memory.max_num_seqs,
        max_num_batched_tokens=memory.max_num_batched_tokens,
        notes=notes_for(model, gpu, memory, settings, rules),
        rejected=rejected,
        rejected_omitted=omitted,
    )


def plan_deployment(
    spec: NemotronDeploymentSpec, *, inventory: GpuInventory | None = None
) -> PlanResult:
    """Plan ``spec`` (pure, deterministic). Raises PlanningError when nothing fits or the spec
    asks for something the model or the GPUs cannot do."""
    found = search(spec, inventory=inventory)
    try:
        chosen = choose(found)
    except PlanningError as exc:
        kept, omitted = rank_rejected(None, found.evaluations, ())
        exc.rejected, exc.rejected_omitted = kept, omitted
        raise
    assert chosen.memory is not None
    rules = check_vllm_rules(spec, found, chosen.memory)
    return PlanResult(
        plan=build_plan(spec, found, chosen, rules),
        model=found.model,
        gpu=chosen.gpu,
        memory=chosen.memory,
        settings=found.settings,
        alternatives=found.best_per_product(),
        rules=rules,
    )


def check_vllm_rules(
    spec: NemotronDeploymentSpec, found: Search, memory: LayoutMemory
) -> tuple[Fired, ...]:
    """The vLLM rules that fire on the chosen layout (``catalog.vllm_rules``); raises
    PlanningError naming the field when one refuses the spec."""
    fired = rules_fired(
        spec,
        found.model,
        max_model_len=found.settings.max_model_len,
        block_size=memory.block_size,
        speculative_tokens=found.settings.speculative_tokens,
    )
    refused = [f for f in fired if f.action is Action.REFUSE]
    if refused:
        raise PlanningError(
            errors.INCOMPATIBLE_ENGINE_SETTINGS,
            "; ".join(
                f"{'' if i == 0 else f.field + ': '}{f.message} (rule {f.rule.id})"
                for i, f in enumerate(refused)
            ),
            field=refused[0].field,
        )
    return fired
