"""The plan as plain-text tables for ``nemotron-operator plan`` (pure: returns lines)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from nemotron_operator.api.plan import Plan, RejectedLayout
from nemotron_operator.catalog.gpus import GIB
from nemotron_operator.sizing.memory import evaluate
from nemotron_operator.sizing.result import UNVERIFIED_PREFIX, PlanResult
from nemotron_operator.sizing.settings import EngineSettings

SWEEP_LENGTHS = (32768, 131072, 262144, 1048576)


def table(rows: Sequence[Sequence[str]], right: Iterable[int] = ()) -> list[str]:
    """Columns padded to the widest cell; ``right`` lists right-aligned columns."""
    if not rows:
        return []
    aligned = set(right)
    widths = [max(len(r[i]) for r in rows if i < len(r)) for i in range(len(rows[0]))]
    out = []
    for row in rows:
        cells = [
            cell.rjust(widths[i]) if i in aligned else cell.ljust(widths[i])
            for i, cell in enumerate(row)
        ]
        out.append("  " + "  ".join(cells).rstrip())
    return out


def gib(value: int) -> str:
    return f"{value / GIB:.1f}"


def _count(value: int) -> str:
    return f"{value:,}"


def header(result: PlanResult) -> list[str]:
    model, plan, settings = result.model, result.plan, result.settings
    split = model.parameter_split()
    mtp = f"MTP {plan.speculative_tokens} draft token(s)" if plan.speculative_tokens else "MTP off"
    release = settings.release
    profile = release.profile
    ran = "" if release.version is None else f"vLLM {release.label}, "
    pool = (
        "pool: extensible KV cache (measured after warm-up)"
        if settings.extensible_kv_cache
        else "pool: gpuMemoryUtilization × memory − non-KV"
    )
    if settings.planned_pool:
        pool += ", passed as --kv-cache-memory-bytes"
    return [
        f"Engine    {ran}profile {profile.name} (block size {profile.default_block_size}; {pool})",
        f"Model     {plan.model_id}  ({model.precision}, {split.total / 1e9:.1f} B parameters, "
        f"{gib(model.weights_bytes())} GiB checkpoint)",
        f"Context   {plan.max_model_len} tokens (config limit {model.max_position_embeddings}, "
        f"trained {model.trained_context}); {mtp}; KV {settings.kv_cache_dtype}, Mamba SSM "
        f"{settings.mamba_ssm_cache_dtype}; prefix caching "
        f"{'on' if settings.prefix_caching else 'off'}; gpuMemoryUtilization "
        f"{_utilization(settings)}",
    ]


def _utilization(settings: EngineSettings) -> str:
    if (
        settings.explicit_utilization is None
        and settings.profile.default_gpu_memory_utilization is None
    ):
        return f"unset ({settings.gpu_memory_utilization:g} with the extensible KV cache)"
    return f"{settings.gpu_memory_utilization:g}"


def per_product(result: PlanResult, min_concurrency: int) -> list[str]:
    """The best layout on every candidate product ("which GPUs do I need")."""
    rows = [["GPU", "GPUs", "TP", "PP", "EP", "Nodes", "Weights/GPU", "Pool/GPU", "MaxConc"]]
    best = {e.gpu.name: e for e in result.alternatives}
    products = list(best)
    for rejected in result.plan.rejected:
        if rejected.gpu_product not in products:
            products.append(rejected.gpu_product)
    for name in products:
        evaluation = best.get(name)
        if evaluation is None or evaluation.memory is None:
            reason = _last_reason(result.plan.rejected, name)
            rows.append([name, "-", "", "", "", "", "does not fit:", reason, ""])
            continue
        memory, layout = evaluation.memory, evaluation.layout
        nodes = -(-layout.gpus // evaluation.gpu.gpus_per_node)
        rows.append(
            [
                name,
                str(layout.gpus),
                str(layout.tensor_parallel),
                str(layout.pipeline_parallel),
                "on" if layout.expert_parallel else "off",
                str(nodes),
                f"{gib(memory.binding.weights_bytes)} GiB",
                f"{gib(memory.binding.kv_pool_bytes)} GiB",
                f"{memory.max_concurrency:.2f}",
            ]
        )
    return [
        f"Best layout per GPU product (fewest GPUs holding minConcurrency {min_concurrency}):",
        *table(rows, right=(1, 2, 3, 5, 6, 7, 8)),
    ]


def _last_reason(rejected: Sequence[RejectedLayout], product: str) -> str:
    reasons = [r for r in rejected if r.gpu_product == product]
    if not reasons:
        return "no layout tried"
    last = reasons[-1]
    return f"TP{last.tensor_parallel} PP{last.pipeline_parallel}: {last.reason}"


def chosen(plan: Plan) -> list[str]:
    ep = "on" if plan.expert_parallel else "off"
    return [
        f"Chosen    {plan.gpu_product}: {plan.gpus_per_replica} GPU(s) per replica "
        f"(TP {plan.tensor_parallel}, PP {plan.pipeline_parallel}, EP {ep}), "
        f"{plan.nodes_per_replica} node(s) per replica; {plan.replicas} replica(s) → "
        f"{plan.total_gpus} GPUs on {plan.nodes} node(s) of {plan.gpus_per_node}",
    ]


def memory_breakdown(result: PlanResult) -> list[str]:
    plan = result.plan
    per_gpu = plan.per_gpu
    utilization = result.settings.gpu_memory_utilization
    rows = [
        [f"usable ({utilization:g} × {gib(plan.gpu_memory_bytes)})", gib(per_gpu.usable_bytes)],
        ["weights", gib(per_gpu.weights_bytes)],
        ["reserve", gib(per_gpu.reserve_bytes)],
        *[[f"  {c.name}", gib(c.bytes)] for c in per_gpu.reserve_components],
        ["KV cache + Mamba state pool", gib(per_gpu.kv_pool_bytes)],
    ]
    return ["Per-GPU memory (GiB), the GPU whose pool fills first:", *table(rows, right=(1,))]


def cache_arithmetic(result: PlanResult) -> list[str]:
    plan, memory = result.plan, result.memory
    attention_groups = sum(1 for g in memory.groups if g.kind == "attention")
    mamba_groups = len(memory.groups) - attention_groups
    attention_blocks = plan.blocks_per_sequence - mamba_groups * memory.mamba_slots
    binding = memory.binding
    rows = [
        [
            "KV per token",
            f"{plan.kv_bytes_per_token:,} B ({binding.attention_layers} attention layers × "
            f"{memory.attention_page_per_token} B)",
        ],
        [
            "Mamba state per sequence",
            f"{plan.mamba_state_bytes_per_sequence / 1e6:.1f} MB raw ({binding.mamba_layers} "
            f"layers); {memory.mamba_slots} slots in padded pages → "
            f"{plan.mamba_bytes_per_sequence / 1e6:.1f} MB",
        ],
        [
            "block",
            f"{plan.block_size_tokens} tokens, page {_count(memory.page_bytes)} B; "
            f"{plan.kv_cache_groups} groups ({attention_groups} attention, {mamba_groups} Mamba) "
            f"× {plan.layers_per_group} layers",
        ],
        [
            "blocks per sequence",
            f"{plan.blocks_per_sequence} = {attention_blocks} attention + {mamba_groups} × "
            f"{memory.mamba_slots} Mamba",
        ],
        ["bytes per sequence", f"{plan.bytes_per_sequence / 1e9:.2f} GB at {plan.max_model_len}"],
        ["pool", f"{_count(plan.kv_cache_blocks)} blocks"],
        [
            "max concurrency",
            f"{plan.max_concurrency:.2f} full-length requests; KV capacity "
            f"{_count(plan.kv_cache_tokens)} tokens",
        ],
    ]
    layout = f"vLLM {result.settings.profile.name} layout"
    return [f"Cache arithmetic (per GPU, {layout}):", *table(rows)]


def rejected(plan: Plan) -> list[str]:
    if not plan.rejected:
        return []
    return rejected_lines(plan.rejected, plan.rejected_omitted)


def rejected_lines(items: Sequence[RejectedLayout], omitted: int) -> list[str]:
    rows = [["GPU", "TP", "PP", "Why not"]]
    rows.extend(
        [r.gpu_product, str(r.tensor_parallel), str(r.pipeline_parallel), r.reason] for r in items
    )
    tail = [f"  ... and {omitted} more"] if omitted else []
    return ["Rejected layouts:", *table(rows, right=(1, 2)), *tail]


def sweep(result: PlanResult) -> list[str]:
    """Max concurrency of the chosen layout at the context lengths the guides trade off."""
    rows = [["maxModelLen", "blocks/seq", "bytes/seq", "MaxConc", ""]]
    model = result.model
    for length in SWEEP_LENGTHS:
        if length > model.trained_context:
            rows.append([str(length), "", "", "", f"beyond the trained {model.trained_context}"])
            continue
        settings = replace(result.settings, max_model_len=length)
        memory = evaluate(model, result.gpu, result.memory.layout, settings)
        note = "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1" if length > model.max_position_embeddings else ""
        rows.append(
            [
                str(length),
                str(memory.blocks_per_request),
                f"{memory.bytes_per_sequence / 1e9:.2f} GB",
                f"{memory.max_concurrency:.2f}",
                note,
            ]
        )
    plan = result.plan
    return [
        f"Context sweep on {plan.gpu_product} TP {plan.tensor_parallel} PP "
        f"{plan.pipeline_parallel}:",
        *table(rows, right=(0, 1, 2, 3)),
    ]


def unverified(result: PlanResult) -> list[str]:
    """The catalog facts about this model that no primary source confirms (docs/model-facts.md),
    so a reader knows which numbers of the plan rest on them."""
    facts = result.model.unverified
    if not facts:
        return []
    return [
        f"Unverified catalog facts about {result.model.hf_id}:",
        *[f"  - {fact}" for fact in facts],
    ]


def full_report(
    result: PlanResult, *, min_concurrency: int, products: bool, with_sweep: bool
) -> list[str]:
    sections = [header(result)]
    if products:
        sections.append(per_product(result, min_concurrency))
    sections += [chosen(result.plan), memory_breakdown(result), cache_arithmetic(result)]
    if with_sweep:
        sections.append(sweep(result))
    notes = [n for n in result.plan.notes if not n.startswith(UNVERIFIED_PREFIX)]
    if notes:
        sections.append(["Notes:", *[f"  - {n}" for n in notes]])
    sections.append(unverified(result))
    sections.append(rejected(result.plan))
    lines: list[str] = []
    for section in sections:
        if section:
            if lines:
                lines.append("")
            lines.extend(section)
    return lines
