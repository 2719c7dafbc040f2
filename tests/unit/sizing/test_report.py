"""``nemotron-operator plan``'s text report, read back: every figure it prints is the plan's (or the
memory model's) figure, in the row and column it claims. Pure (sizing.report returns lines)."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from nemotron_operator.catalog.gpus import GIB
from nemotron_operator.sizing import plan_deployment
from nemotron_operator.sizing.report import (
    SWEEP_LENGTHS,
    cache_arithmetic,
    chosen,
    full_report,
    header,
    memory_breakdown,
    per_product,
    rejected_lines,
    sweep,
    table,
)
from nemotron_operator.sizing.result import PlanResult

from .helpers import H100, NANO_BF16, SUPER_BF16, SUPER_VL_BF16, spec

B200 = "NVIDIA-B200"
L40S = "NVIDIA-L40S"
SUPER_NVFP4 = "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4"


def cells(line: str) -> list[str]:
    return re.split(r"\s{2,}", line.strip())


def gib(value: int) -> str:
    return f"{value / GIB:.1f}"


@pytest.fixture(scope="module")
def super_on_three() -> PlanResult:
    return plan_deployment(spec(SUPER_BF16, capacity={"gpu": {"products": [H100, B200, L40S]}}))


def test_table_pads_columns_and_right_aligns_the_asked_ones() -> None:
    lines = table([["a", "1"], ["bbb", "22"]], right=(1,))
    assert lines == ["  a     1", "  bbb  22"]
    assert table([["x", "y"], ["longer", "z"]]) == ["  x       y", "  longer  z"]
    assert table([]) == []


def test_per_product_rows_are_each_products_best_layout(super_on_three: PlanResult) -> None:
    lines = per_product(super_on_three, 2)
    assert lines[0] == "Best layout per GPU product (fewest GPUs holding minConcurrency 2):"
    assert cells(lines[1]) == [
        "GPU", "GPUs", "TP", "PP", "EP", "Nodes", "Weights/GPU", "Pool/GPU", "MaxConc"
    ]  # fmt: skip
    rows = {cells(line)[0]: cells(line) for line in lines[2:]}
    assert set(rows) == {H100, B200, L40S}
    for evaluation in super_on_three.alternatives:
        memory, layout = evaluation.memory, evaluation.layout
        assert memory is not None
        nodes = -(-layout.gpus // evaluation.gpu.gpus_per_node)
        assert rows[evaluation.gpu.name] == [
            evaluation.gpu.name,
            str(layout.gpus),
            str(layout.tensor_parallel),
            str(layout.pipeline_parallel),
            "on" if layout.expert_parallel else "off",
            str(nodes),
            f"{gib(memory.binding.weights_bytes)} GiB",
            f"{gib(memory.binding.kv_pool_bytes)} GiB",
            f"{memory.max_concurrency:.2f}",
        ]


def test_a_product_that_fits_nowhere_shows_its_last_reason() -> None:
    # One GPU: Nano BF16's weights fit a B200's 180 GB, not an L40S's 48 GB.
    capacity = {"gpu": {"products": [B200, L40S], "count": 1}}
    result = plan_deployment(spec(NANO_BF16, capacity=capacity))
    assert L40S not in {e.gpu.name for e in result.alternatives}
    row = next(cells(line) for line in per_product(result, 2) if line.strip().startswith(L40S))
    last = [r for r in result.plan.rejected if r.gpu_product == L40S][-1]
    assert row[1:3] == ["-", "does not fit:"]
    assert row[3] == f"TP{last.tensor_parallel} PP{last.pipeline_parallel}: {last.reason}"
    assert "weights need" in row[3]


def test_header_and_chosen_say_what_the_plan_says() -> None:
    result = plan_deployment(spec(NANO_BF16, engine={"maxModelLen": 131072}))
    plan, model = result.plan, result.model
    engine, first, second = header(result)
    assert engine == (
        "Engine    vLLM 0.31.0, profile 0.31 (block size 16; pool: gpuMemoryUtilization × "
        "memory − non-KV)"
    )
    total = model.parameter_split().total / 1e9
    assert first == (
        f"Model     {plan.model_id}  (BF16, {total:.1f} B parameters, "
        f"{gib(model.weights_bytes())} GiB checkpoint)"
    )
    assert second.startswith(
        f"Context   131072 tokens (config limit {model.max_position_embeddings}, trained "
        f"{model.trained_context}); MTP off; KV auto, Mamba SSM "
    )
    assert "prefix caching on" in second
    assert second.endswith(f"gpuMemoryUtilization {result.settings.gpu_memory_utilization:g}")
    (line,) = chosen(plan)
    assert line == (
        f"Chosen    {plan.gpu_product}: {plan.gpus_per_replica} GPU(s) per replica (TP "
        f"{plan.tensor_parallel}, PP {plan.pipeline_parallel}, EP off), "
        f"{plan.nodes_per_replica} node(s) per replica; {plan.replicas} replica(s) → "
        f"{plan.total_gpus} GPUs on {plan.nodes} node(s) of {plan.gpus_per_node}"
    )


def test_header_names_the_draft_tokens_when_mtp_is_on() -> None:
    result = plan_deployment(spec(SUPER_VL_BF16))
    assert result.plan.speculative_tokens > 0
    assert f"MTP {result.plan.speculative_tokens} draft token(s)" in header(result)[2]


def test_memory_breakdown_rows_add_up_to_the_plans_figures() -> None:
    result = plan_deployment(spec(SUPER_VL_BF16))
    per_gpu = result.plan.per_gpu
    lines = memory_breakdown(result)
    assert lines[0] == "Per-GPU memory (GiB), the GPU whose pool fills first:"
    rows = [cells(line) for line in lines[1:]]
    utilization = result.settings.gpu_memory_utilization
    assert rows[0] == [
        f"usable ({utilization:g} × {gib(result.plan.gpu_memory_bytes)})",
        gib(per_gpu.usable_bytes),
    ]
    assert rows[1] == ["weights", gib(per_gpu.weights_bytes)]
    assert rows[2] == ["reserve", gib(per_gpu.reserve_bytes)]
    components = [[c.name, gib(c.bytes)] for c in per_gpu.reserve_components]
    assert rows[3 : 3 + len(components)] == components
    assert rows[-1] == ["KV cache + Mamba state pool", gib(per_gpu.kv_pool_bytes)]


def test_cache_arithmetic_shows_the_geometry_of_the_binding_stage() -> None:
    result = plan_deployment(spec(SUPER_VL_BF16))
    plan, memory = result.plan, result.memory
    rows = {cells(line)[0]: cells(line)[1] for line in cache_arithmetic(result)[1:]}
    binding = memory.binding
    assert rows["KV per token"] == (
        f"{plan.kv_bytes_per_token:,} B ({binding.attention_layers} attention layers × "
        f"{memory.attention_page_per_token} B)"
    )
    mamba_groups = sum(1 for g in memory.groups if g.kind == "mamba")
    attention_groups = len(memory.groups) - mamba_groups
    assert attention_groups >= 1
    assert mamba_groups >= 1
    assert rows["block"] == (
        f"{plan.block_size_tokens} tokens, page {memory.page_bytes:,} B; {plan.kv_cache_groups} "
        f"groups ({attention_groups} attention, {mamba_groups} Mamba) × {plan.layers_per_group} "
        "layers"
    )
    attention_blocks = plan.blocks_per_sequence - mamba_groups * memory.mamba_slots
    assert attention_blocks == -(-plan.max_model_len // plan.block_size_tokens) * attention_groups
    assert rows["blocks per sequence"] == (
        f"{plan.blocks_per_sequence} = {attention_blocks} attention + {mamba_groups} × "
        f"{memory.mamba_slots} Mamba"
    )
    assert rows["Mamba state per sequence"] == (
        f"{plan.mamba_state_bytes_per_sequence / 1e6:.1f} MB raw ({binding.mamba_layers} layers); "
        f"{memory.mamba_slots} slots in padded pages → {plan.mamba_bytes_per_sequence / 1e6:.1f} MB"
    )
    assert rows["bytes per sequence"] == (
        f"{plan.bytes_per_sequence / 1e9:.2f} GB at {plan.max_model_len}"
    )
    assert rows["pool"] == f"{plan.kv_cache_blocks:,} blocks"
    assert rows["max concurrency"] == (
        f"{plan.max_concurrency:.2f} full-length requests; KV capacity "
        f"{plan.kv_cache_tokens:,} tokens"
    )


def test_the_sweep_re_evaluates_the_chosen_layout_at_each_length() -> None:
    result = plan_deployment(spec(NANO_BF16, engine={"maxModelLen": 131072}))
    lines = sweep(result)
    plan = result.plan
    assert lines[0] == (
        f"Context sweep on {plan.gpu_product} TP {plan.tensor_parallel} PP "
        f"{plan.pipeline_parallel}:"
    )
    rows = {cells(line)[0]: cells(line) for line in lines[2:]}
    assert set(rows) == {str(n) for n in SWEEP_LENGTHS}
    at_plan = rows["131072"]
    assert at_plan[1:4] == [
        str(plan.blocks_per_sequence),
        f"{plan.bytes_per_sequence / 1e9:.2f} GB",
        f"{plan.max_concurrency:.2f}",
    ]
    concurrency = [float(rows[str(n)][3]) for n in SWEEP_LENGTHS if n <= 262144]
    assert concurrency == sorted(concurrency, reverse=True)  # longer context, fewer requests
    model = result.model
    assert model.trained_context < 1048576
    assert rows["1048576"][1:] == [f"beyond the trained {model.trained_context}"]


def test_the_sweep_flags_lengths_past_the_config_limit() -> None:
    result = plan_deployment(spec(SUPER_VL_BF16))
    rows = {cells(line)[0]: cells(line) for line in sweep(result)[2:]}
    assert result.model.max_position_embeddings == 262144
    assert rows["1048576"][-1] == "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1"
    assert len(rows["262144"]) == 4  # within the limit: no note


def test_rejected_lines_list_each_layout_and_the_omitted_count(
    super_on_three: PlanResult,
) -> None:
    plan = super_on_three.plan
    assert plan.rejected
    lines = rejected_lines(plan.rejected, 7)
    assert lines[0] == "Rejected layouts:"
    assert cells(lines[1]) == ["GPU", "TP", "PP", "Why not"]
    for line, item in zip(lines[2:-1], plan.rejected, strict=True):
        assert cells(line) == [
            item.gpu_product, str(item.tensor_parallel), str(item.pipeline_parallel), item.reason
        ]  # fmt: skip
    assert lines[-1] == "  ... and 7 more"
    assert rejected_lines(plan.rejected, 0)[-1] != "  ... and 0 more"


def test_the_full_report_orders_its_sections_and_separates_them() -> None:
    result = plan_deployment(spec(SUPER_VL_BF16))
    lines = full_report(result, min_concurrency=2, products=True, with_sweep=True)
    starts = [
        "Model     ",
        "Best layout per GPU product",
        "Chosen    ",
        "Per-GPU memory (GiB)",
        "Cache arithmetic",
        "Context sweep on",
        "Unverified catalog facts about",
    ]
    positions = [next(i for i, line in enumerate(lines) if line.startswith(s)) for s in starts]
    assert positions == sorted(positions)
    for position in positions[1:]:
        assert lines[position - 1] == ""  # one blank line between sections
    assert lines[-1] != ""
    bare = full_report(result, min_concurrency=2, products=False, with_sweep=False)
    assert not any(line.startswith("Best layout per GPU product") for line in bare)
    assert not any(line.startswith("Context sweep on") for line in bare)
    facts = [line for line in lines if line.startswith("  - ")]
    assert all(f"  - {fact}" in facts for fact in result.model.unverified)


def spans(line: str) -> list[tuple[int, int]]:
    """(start, end) of each cell: runs of text separated by two or more spaces."""
    return [m.span() for m in re.finditer(r"\S+(?: \S+)*", line)]


def assert_aligned(lines: list[str], right: set[int], *, indented: bool = False) -> None:
    """Right-aligned columns end together, the others start together, in every full row
    (``indented``: the first column nests sub-items, so only the right-aligned ones count)."""
    width = len(spans(lines[0]))
    rows = [spans(line) for line in lines if len(spans(line)) == width]
    assert len(rows) >= 2
    for column in range(width):
        if indented and column not in right:
            continue
        edge = 1 if column in right else 0
        assert len({row[column][edge] for row in rows}) == 1, (column, lines)


def test_numbers_are_right_aligned_and_names_left_aligned() -> None:
    result = plan_deployment(spec(NANO_BF16, capacity={"gpu": {"products": [H100, B200]}}))
    assert_aligned(per_product(result, 2)[1:], right={1, 2, 3, 5, 6, 7, 8})
    assert_aligned(memory_breakdown(result)[1:], right={1}, indented=True)
    assert_aligned(sweep(result)[1:-1], right={0, 1, 2, 3})  # the last row carries a note
    assert_aligned(rejected_lines(result.plan.rejected, 0)[1:], right={1, 2})


def test_the_sweep_header_and_the_rows_differ_by_length() -> None:
    result = plan_deployment(spec(NANO_BF16, engine={"maxModelLen": 131072}))
    lines = sweep(result)
    assert cells(lines[1]) == ["maxModelLen", "blocks/seq", "bytes/seq", "MaxConc"]
    rows = {cells(line)[0]: cells(line) for line in lines[2:]}
    assert float(rows["32768"][3]) > float(rows["131072"][3]) > float(rows["262144"][3])


def test_expert_parallelism_shows_off_and_on() -> None:
    nano = plan_deployment(spec(NANO_BF16, capacity={"gpu": {"products": [B200]}}))
    assert nano.plan.tensor_parallel == 1
    (row,) = [cells(line) for line in per_product(nano, 2)[2:]]
    assert row[4] == "off"
    assert "EP off" in chosen(nano.plan)[0]
    vl = plan_deployment(spec(SUPER_VL_BF16)).plan
    assert vl.expert_parallel
    assert "EP on" in chosen(vl)[0]


def test_two_products_that_fit_nowhere_both_get_their_row() -> None:
    # One GPU: Super NVFP4's 70 GiB of weights fit a B200, not an L40S (45) or an H100 (80,
    # less the reserve).
    capacity = {"gpu": {"products": [B200, L40S, H100], "count": 1}}
    result = plan_deployment(spec(SUPER_NVFP4, capacity=capacity))
    rows = [cells(line) for line in per_product(result, 2)[2:]]
    failing = [row for row in rows if row[1] == "-"]
    assert [row[0] for row in failing] == [L40S, H100]
    assert all(len(row) == 4 for row in failing)  # name, "-", "does not fit:", the reason


def test_prefix_caching_off_is_said() -> None:
    result = plan_deployment(spec(NANO_BF16, engine={"enablePrefixCaching": False}))
    assert "prefix caching off" in header(result)[2]


def test_notes_and_unverified_facts_get_sections_of_their_own() -> None:
    capacity = {"gpu": {"products": [H100]}}
    result = plan_deployment(spec(SUPER_NVFP4, capacity=capacity))
    lines = full_report(result, min_concurrency=3, products=True, with_sweep=False)
    assert "Best layout per GPU product (fewest GPUs holding minConcurrency 3):" in lines
    notes = lines.index("Notes:")
    facts = next(i for i, line in enumerate(lines) if line.startswith("Unverified catalog facts"))
    assert notes < facts
    # The plan's notes (vLLM rules first, docs/compatibility.md), one per line, in the section.
    section = [line for line in lines[notes + 1 : facts] if line]
    assert all(line.startswith("  - ") for line in section)
    assert any(
        line.startswith("  - NVFP4 on NVIDIA-H100-80GB-HBM3 runs weight-only") for line in section
    )
    assert not any("unverified catalog fact" in line for line in lines[notes:facts])
    assert lines[facts + 1] == f"  - {result.model.unverified[0]}"


def test_the_report_says_how_many_rejections_it_left_out() -> None:
    result = plan_deployment(spec(NANO_BF16))
    plan = result.plan.model_copy(update={"rejected_omitted": 5})
    shown = full_report(
        replace(result, plan=plan), min_concurrency=2, products=False, with_sweep=False
    )
    assert shown[-1] == "  ... and 5 more"


def test_columns_of_different_widths_stay_aligned(super_on_three: PlanResult) -> None:
    lines = per_product(super_on_three, 2)[1:]
    pools = {cells(line)[7] for line in lines[1:]}
    assert len({len(p) for p in pools}) > 1  # widths differ, so alignment shows
    assert_aligned(lines, right={1, 2, 3, 5, 6, 7, 8})
