"""Sizing rules at their edges, each written from the rule rather than from what the code printed:
found by mutation testing (docs/testing.md), where a changed comparison or constant survived."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from nemotron_operator.api import NemotronDeploymentSpec
from nemotron_operator.api.plan import MAX_REJECTED, RejectedLayout
from nemotron_operator.sizing import Layout, PlanningError, plan_deployment
from nemotron_operator.sizing.layouts import (
    MAX_PLANNED_PIPELINE,
    candidates,
    expert_parallel_default,
    precision_note,
    structural_problem,
)
from nemotron_operator.sizing.planner import _clip, choose, search
from nemotron_operator.sizing.reserve import vision_encoder_bytes
from nemotron_operator.sizing.result import build_plan, nodes_for, notes_for

from .helpers import (
    H8B,
    H100,
    NANO_BF16,
    SUPER_BF16,
    SUPER_FP8,
    SUPER_VL_BF16,
    gpu,
    model,
    spec,
    super_as_architecture,
)

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
A100 = "NVIDIA-A100-SXM4-80GB"
B200 = "NVIDIA-B200"
SUPER_NVFP4 = "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4"


def test_expert_parallelism_by_default_only_for_moe_models_with_tensor_parallel_ranks() -> None:
    assert not expert_parallel_default(model(NANO_BF16), 1)  # one rank: nothing to spread
    assert expert_parallel_default(model(NANO_BF16), 2)
    assert not expert_parallel_default(model(H8B), 2)  # dense: no experts


def test_explicit_fields_name_what_fixed_the_layout() -> None:
    entry, h100 = model(SUPER_BF16), gpu(H100)
    pipeline = spec(SUPER_BF16, capacity={"parallelism": {"pipeline": 2}}).capacity
    found = candidates(entry, h100, pipeline)
    assert {c.explicit_fields for c in found} == {("spec.capacity.parallelism.pipeline",)}
    assert all(c.layout.pipeline_parallel == 2 for c in found)
    expert = spec(SUPER_BF16, capacity={"parallelism": {"expert": False}}).capacity
    found = candidates(entry, h100, expert)
    assert {c.explicit_fields for c in found} == {("spec.capacity.parallelism.expert",)}
    assert not any(c.layout.expert_parallel for c in found)
    planned = candidates(entry, h100, spec(SUPER_BF16).capacity)
    assert {c.explicit_fields for c in planned} == {()}


def test_planned_pipelines_go_up_to_the_limit_and_no_further() -> None:
    found = candidates(model(SUPER_BF16), gpu(H100), spec(SUPER_BF16).capacity)
    assert max(c.layout.pipeline_parallel for c in found) == MAX_PLANNED_PIPELINE == 8
    assert {c.layout.pipeline_parallel for c in found} == set(range(1, 9))


def test_an_awkward_gpu_count_tries_the_fewest_pipeline_stages_first() -> None:
    # 12 GPUs on 8-GPU nodes cannot keep TP inside a node with whole-node stages, so every split
    # of 12 is tried, fewest stages first.
    capacity = spec(SUPER_BF16, capacity={"gpu": {"count": 12}}).capacity
    found = [c.layout for c in candidates(model(SUPER_BF16), gpu(H100), capacity)]
    assert [(lay.tensor_parallel, lay.pipeline_parallel) for lay in found] == [
        (4, 3), (2, 6), (1, 12),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("hf_id", "product", "expected"),
    [
        (
            SUPER_NVFP4,
            H100,
            "NVFP4 on NVIDIA-H100-80GB-HBM3 runs weight-only (Marlin W4A16): no FP4 tensor "
            "cores, so memory is saved but not compute; a Blackwell GPU runs it natively",
        ),
        (SUPER_NVFP4, B200, None),
        (SUPER_FP8, A100, f"FP8 on {A100} runs weight-only (Marlin W8A16): no FP8 tensor cores"),
        (SUPER_FP8, H100, None),
        (SUPER_BF16, A100, None),
    ],
)
def test_precision_notes_only_where_the_gpu_lacks_the_tensor_cores(
    hf_id: str, product: str, expected: str | None
) -> None:
    assert precision_note(model(hf_id), gpu(product)) == expected


def test_a_planning_error_names_its_field_in_its_text() -> None:
    error = PlanningError("InvalidParallelism", "TP 3 does not divide", field="spec.x")
    assert str(error) == "spec.x: TP 3 does not divide"
    assert (error.reason, error.message, error.field) == (
        "InvalidParallelism",
        "TP 3 does not divide",
        "spec.x",
    )
    assert (error.rejected, error.rejected_omitted) == ([], 0)
    bare = PlanningError("X", "no field")
    assert str(bare) == "no field"
    item = RejectedLayout(gpu_product=H100, tensor_parallel=1, pipeline_parallel=1, reason="r")
    listed = PlanningError("X", "m", rejected=(item,), rejected_omitted=3)
    assert (listed.rejected, listed.rejected_omitted) == ([item], 3)


def test_clip_keeps_short_text_and_cuts_long_text_to_the_limit_with_an_ellipsis() -> None:
    assert _clip("x" * 512) == "x" * 512
    assert _clip("x" * 513) == "x" * 511 + "…"
    assert len(_clip("y" * 2000)) == 512
    assert _clip("abcdef", limit=4) == "abc…"


@pytest.mark.parametrize(
    ("replicas", "per_replica", "per_node", "expected"),
    [
        (5, 2, 8, (1, 2)),  # four replicas share a node
        (5, 8, 8, (1, 5)),  # exactly a node each
        (3, 16, 8, (2, 6)),  # two whole nodes each
        (0, 16, 8, (2, 0)),
        (4, 3, 8, (1, 2)),  # two replicas of 3 per 8-GPU node
    ],
)
def test_nodes_for_packs_small_replicas_and_gives_large_ones_whole_nodes(
    replicas: int, per_replica: int, per_node: int, expected: tuple[int, int]
) -> None:
    found = nodes_for(replicas, per_replica, per_node)
    assert found == expected
    assert all(isinstance(n, int) for n in found)


def test_the_vision_encoder_reserve_of_super_vl_by_hand() -> None:
    # budget max(8192, 3328) tokens: encoder cache 8192 × 4096 × 2 B = 67,108,864 B; two whole
    # 3328-token images fit, each 13,312 patches × 1280 wide × 2 B, eight live tensors:
    # 2 × 13,312 × 1280 × 2 × 8 = 545,259,520 B.
    assert vision_encoder_bytes(model(SUPER_VL_BF16), 8192) == 67_108_864 + 545_259_520
    # Below one image's tokens the budget is one image: 3328 × 4096 × 2 + 13,312 × 1280 × 2 × 8.
    assert vision_encoder_bytes(model(SUPER_VL_BF16), 100) == 27_262_976 + 272_629_760


def test_rejections_list_the_chosen_products_failures_first_then_why_others_lost() -> None:
    result = plan_deployment(spec(SUPER_BF16, capacity={"gpu": {"products": [H100, B200]}}))
    plan = result.plan
    assert plan.gpu_product == B200
    products = [r.gpu_product for r in plan.rejected]
    first_other = products.index(H100)
    assert first_other > 0  # B200's own failures (one GPU cannot hold the weights) come first
    assert all(p == B200 for p in products[:first_other])
    lost = [r for r in plan.rejected if r.reason.startswith("fits on")]
    assert len(lost) == 1
    assert lost[0].gpu_product == H100
    assert "but needs more GPUs than NVIDIA-B200 TP" in lost[0].reason


def test_at_equal_gpus_the_loser_holds_fewer_requests() -> None:
    capacity = {"gpu": {"products": [H100, "NVIDIA-H200"], "count": 8}}
    plan = plan_deployment(spec(SUPER_VL_BF16, capacity=capacity)).plan
    (lost,) = [r for r in plan.rejected if r.reason.startswith("fits on")]
    assert lost.gpu_product == H100
    assert "but holds fewer full-length requests than NVIDIA-H200 TP8 PP1" in lost.reason


def test_a_pool_larger_than_the_scheduler_says_so_only_when_it_is() -> None:
    roomy = plan_deployment(spec(NANO_BF16, engine={"maxModelLen": 8192, "maxNumSeqs": 16})).plan
    assert roomy.max_concurrency > 16
    assert any("vLLM schedules at most maxNumSeqs=16" in n for n in roomy.notes)
    tight = plan_deployment(spec(NANO_BF16, engine={"maxModelLen": 262144})).plan
    assert tight.max_concurrency < tight.max_num_seqs
    assert not any("schedules at most" in n for n in tight.notes)


def _explicit(capacity: dict[str, object], **changes: object) -> PlanningError:
    arch = super_as_architecture(**changes).to_wire()
    body = {"model": {"id": "example/custom", "architecture": arch}, "capacity": capacity}
    with pytest.raises(PlanningError) as caught:
        plan_deployment(NemotronDeploymentSpec.model_validate(body))
    return caught.value


def test_tensor_parallelism_must_fit_the_mamba_groups_the_experts_and_the_expert_width() -> None:
    tp4 = {"parallelism": {"tensor": 4}, "gpu": {"products": [H100]}}
    groups = _explicit(tp4, mamba_n_groups=6)
    assert "TP 4 neither divides nor is a multiple of the 6 Mamba groups" in groups.message
    experts = _explicit({**tp4, "parallelism": {"tensor": 4, "expert": True}}, n_routed_experts=510)
    assert "expert parallelism over 4 ranks does not divide the 510 experts" in experts.message
    width = _explicit(
        {**tp4, "parallelism": {"tensor": 4, "expert": False}}, moe_intermediate_size=2690
    )
    assert "TP 4 does not divide the expert width 2690" in width.message


def test_expert_parallelism_on_a_dense_model_is_refused_with_the_field_to_unset() -> None:
    problem = structural_problem(model(H8B), gpu(H100), Layout(2, 1, True))
    assert (
        problem == "expert parallelism needs an MoE model; unset spec.capacity.parallelism.expert"
    )


def test_one_layer_per_stage_is_allowed_but_not_fewer() -> None:
    nano = model(NANO_BF16)
    layers = nano.num_hidden_layers
    b200 = gpu(B200)
    at_limit = structural_problem(nano, b200, Layout(1, layers, False))
    assert at_limit is None or "exceeds" not in at_limit
    assert structural_problem(nano, b200, Layout(1, layers + 1, False)) == (
        f"PP {layers + 1} exceeds the {layers} layers"
    )


def test_a_straddling_group_is_explained_in_full() -> None:
    problem = structural_problem(model(SUPER_BF16), gpu(H100), Layout(4, 3, True))
    assert problem == (
        "12 GPUs on 2 nodes of 8 would split a TP 4 group across nodes (vLLM places ranks "
        "evenly, node by node)"
    )


def test_the_long_context_note_names_the_switch_and_the_trained_length() -> None:
    plan = plan_deployment(spec(SUPER_VL_BF16, engine={"maxModelLen": 1048576})).plan
    assert (
        "maxModelLen 1048576 exceeds the config's max_position_embeddings 262144: the server "
        "runs with VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (the model was trained to 1048576 tokens)"
    ) in plan.notes


def test_the_plan_rounds_concurrency_to_two_decimals() -> None:
    result = plan_deployment(spec(SUPER_VL_BF16))
    exact = result.memory.max_concurrency
    assert round(exact, 3) != round(exact, 2)  # a third decimal to lose
    assert result.plan.max_concurrency == round(exact, 2)


def test_tensor_parallelism_must_divide_a_dense_mlp_width() -> None:
    # examples/custom-architecture.yaml (a Nemotron-H 8B layout with '-' MLP layers), with a
    # width no TP size above 1 divides.
    example = yaml.safe_load((EXAMPLES / "custom-architecture.yaml").read_text(encoding="utf-8"))
    spec_body = example["spec"]
    spec_body["model"]["architecture"]["intermediateSize"] = 21505
    spec_body["capacity"] = {"parallelism": {"tensor": 2}, "gpu": {"products": [H100]}}
    with pytest.raises(PlanningError) as caught:
        plan_deployment(NemotronDeploymentSpec.model_validate(spec_body))
    assert "TP 2 does not divide the MLP width 21505" in caught.value.message


def test_the_scheduler_note_only_when_the_pool_holds_strictly_more_than_max_num_seqs() -> None:
    result = plan_deployment(spec(NANO_BF16, engine={"maxModelLen": 8192, "maxNumSeqs": 16}))
    # One block per request: the pool holds exactly num_blocks full-length requests.
    pool = dataclasses.replace(result.memory, blocks_per_request=1)
    holds = pool.num_blocks

    def says_so(max_num_seqs: int) -> bool:
        memory = dataclasses.replace(pool, max_num_seqs=max_num_seqs)
        notes = notes_for(result.model, result.gpu, memory, result.settings)
        return any(f"schedules at most maxNumSeqs={max_num_seqs}" in n for n in notes)

    assert says_so(holds - 1)
    assert not says_so(holds)  # equal: every request the pool holds can be scheduled


def test_a_note_is_cut_at_512_characters() -> None:
    result = plan_deployment(spec(NANO_BF16))
    entry = dataclasses.replace(result.model, notes=("n" * 600,), unverified=())
    notes = notes_for(entry, result.gpu, result.memory, result.settings)
    assert notes[-1] == "n" * 512


def test_the_plan_counts_the_rejections_it_leaves_out() -> None:
    wanted = spec(SUPER_BF16, capacity={"gpu": {"products": [H100]}})
    found = search(wanted)
    chosen = choose(found)
    failed = next(e for e in found.evaluations if not e.fits)
    extra = MAX_REJECTED + 5
    crowded = dataclasses.replace(found, evaluations=found.evaluations + (failed,) * extra)
    listed = len(build_plan(wanted, found, chosen).rejected)
    plan = build_plan(wanted, crowded, chosen)
    assert len(plan.rejected) == MAX_REJECTED
    assert plan.rejected_omitted == listed + extra - MAX_REJECTED
