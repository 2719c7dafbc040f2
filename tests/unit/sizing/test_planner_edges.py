"""The planner's errors and boundaries, by behaviour: the message names what to change, the
closest layout is the one that holds the most, and each memory rule flips at its exact bound."""

from __future__ import annotations

from dataclasses import replace

import pytest

from nemotron_operator.api import NemotronDeploymentSpec
from nemotron_operator.sizing import LayoutMemory, PlanningError, inventory_from_nodes
from nemotron_operator.sizing.inventory import GpuInventory
from nemotron_operator.sizing.planner import choose, memory_problem, resolve_model, search

from .helpers import H100, NANO_BF16, SUPER_BF16, layout_memory, spec, super_as_architecture
from .test_inventory import node

# GPUs the catalog does not know, described by GPU Feature Discovery labels only.
V100 = "Tesla-V100-SXM2-32GB"
T4 = "Tesla-T4"


def error_of(
    deployment: NemotronDeploymentSpec, inventory: GpuInventory | None = None
) -> PlanningError:
    with pytest.raises(PlanningError) as caught:
        choose(search(deployment, inventory=inventory))
    return caught.value


# --- choose(): InsufficientGPUMemory ---------------------------------------------------------


def test_memory_error_names_the_layout_that_holds_the_most_and_every_remedy() -> None:
    error = error_of(
        spec(NANO_BF16, capacity={"gpu": {"products": [H100]}, "minConcurrency": 100000})
    )
    assert error.reason == "InsufficientGPUMemory"
    # TP8 PP8 holds the most requests (about 525); TP1 PP1 the fewest GPUs: the hint is the former.
    assert (
        f"(closest: {H100} TP8 PP8: holds 525.33 full-length (262144-token) requests"
        in error.message
    )
    assert f"on {H100} holds spec.capacity.minConcurrency" in error.message
    assert error.message.endswith(
        "; add GPUs (spec.capacity.gpu.count or a larger product), lower spec.engine.maxModelLen "
        "or spec.capacity.minConcurrency, or set spec.engine.kvCacheDtype to fp8"
    )
    assert len(error.rejected) == 11  # every layout tried is reported with its reason
    assert all(r.reason for r in error.rejected)


def test_memory_error_lists_the_products_tried_comma_separated() -> None:
    error = error_of(
        spec(
            NANO_BF16,
            capacity={
                "gpu": {"products": [H100, "NVIDIA-H200"], "count": 1},
                "minConcurrency": 100000,
            },
        )
    )
    assert f"on {H100}, NVIDIA-H200 holds" in error.message


def test_memory_beats_parallelism_when_both_were_rejected() -> None:
    # PP 3 on nodes of 8: TP 4 x PP 3 = 12 GPUs would split a TP group across two nodes
    # (parallelism) while TP 1 x PP 3 holds too few requests (memory). The memory error wins.
    found = search(
        spec(
            NANO_BF16,
            capacity={
                "gpu": {"products": [H100]},
                "parallelism": {"pipeline": 3},
                "minConcurrency": 100000,
            },
        )
    )
    assert {e.kind for e in found.evaluations} == {"memory", "parallelism"}
    with pytest.raises(PlanningError) as caught:
        choose(found)
    assert caught.value.reason == "InsufficientGPUMemory"
    assert len(caught.value.rejected) == len(found.evaluations)


# --- choose(): UnsupportedPrecision and InvalidParallelism -----------------------------------

OLD_GPUS = inventory_from_nodes(
    [
        node("v", V100, 8, memory_mib=32768, capability=(7, 0)),
        node("t", T4, 8, memory_mib=16384, capability=(7, 5)),
        node("h", H100, 8),
    ]
)
BF16_NEEDS = "BF16 checkpoints need compute capability 8.0 (vLLM's kernels)"


def test_precision_error_quotes_the_first_product_tried_and_reports_each() -> None:
    error = error_of(
        spec(NANO_BF16, capacity={"gpu": {"products": [V100, T4], "count": 1}}), OLD_GPUS
    )
    assert error.reason == "UnsupportedPrecision"
    assert error.field == "spec.capacity.gpu.products"
    assert f"runs ({BF16_NEEDS}; {V100} has 7.0); choose a newer GPU" in error.message
    assert error.message.endswith("or another precision of the model")
    assert [(r.gpu_product, r.reason) for r in error.rejected] == [
        (V100, f"{BF16_NEEDS}; {V100} has 7.0"),
        (T4, f"{BF16_NEEDS}; {T4} has 7.5"),
    ]


def test_a_product_too_old_for_the_precision_does_not_stop_the_search() -> None:
    found = search(
        spec(NANO_BF16, capacity={"gpu": {"products": [V100, H100]}}), inventory=OLD_GPUS
    )
    assert choose(found).gpu.name == H100


def test_parallelism_error_names_the_explicit_field_and_reports_each_layout() -> None:
    # PP 3 x 12 GPUs on nodes of 8 leaves only TP 4, which would split across two nodes.
    error = error_of(
        spec(
            NANO_BF16,
            capacity={"gpu": {"products": [H100], "count": 12}, "parallelism": {"pipeline": 3}},
        )
    )
    assert error.reason == "InvalidParallelism"
    assert error.field == "spec.capacity.parallelism.pipeline"
    assert error.message == (
        "no layout is valid for nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16: 12 GPUs on 2 nodes of "
        "8 would split a TP 4 group across nodes (vLLM places ranks evenly, node by node); change "
        "spec.capacity.parallelism.pipeline"
    )
    assert [(r.tensor_parallel, r.pipeline_parallel) for r in error.rejected] == [(4, 3)]


def test_a_count_no_layout_can_split_names_gpu_count() -> None:
    error = error_of(
        spec(
            NANO_BF16,
            capacity={"gpu": {"products": [H100], "count": 3}, "parallelism": {"pipeline": 2}},
        )
    )
    assert error.reason == "InvalidParallelism"
    assert error.field == "spec.capacity.gpu.count"
    assert error.message == (
        "spec.capacity.gpu.count cannot be split into a power-of-two tensor-parallel size times "
        "spec.capacity.parallelism.pipeline; make gpu.count equal tensor × pipeline"
    )


# --- search(): the kinds and the stop at the first fitting GPU count --------------------------


def test_search_marks_fitting_and_memory_rejected_layouts() -> None:
    found = search(spec(NANO_BF16, capacity={"gpu": {"products": [H100]}, "minConcurrency": 50}))
    kinds = [(e.layout.gpus, e.kind, e.problem is None) for e in found.evaluations]
    # TP1 holds ~6 and TP2 ~48 requests (below 50); TP4 holds ~68: the first fit ends the search.
    assert kinds == [(1, "memory", False), (2, "memory", False), (4, "fits", True)]


def test_search_tries_every_layout_of_the_first_fitting_gpu_count() -> None:
    # 12 GPUs: TP 2 x PP 6 fits first, TP 1 x PP 12 (same count) is still tried and compared.
    found = search(spec(NANO_BF16, capacity={"gpu": {"products": [H100], "count": 12}}))
    fitting = [
        (e.layout.tensor_parallel, e.layout.pipeline_parallel) for e in found.evaluations if e.fits
    ]
    assert fitting == [(2, 6), (1, 12)]


# --- memory_problem(): each rule at its exact bound ------------------------------------------


def with_stage(memory: LayoutMemory, **stage: int) -> LayoutMemory:
    """``memory`` with its single stage changed (a TP1 PP1 layout has one)."""
    (only,) = memory.stages
    return replace(memory, stages=(replace(only, **stage),))


def test_weights_over_the_usable_memory_name_both_sizes() -> None:
    memory = layout_memory(SUPER_BF16, gpu_name=H100)
    problem = memory_problem(memory, 1)
    assert problem is not None
    assert problem == (
        f"weights need 230.2 GiB per GPU; {H100} has 71.7 GiB usable (0.9 of 79.6 GiB)"
    )


def test_weights_equal_to_the_usable_memory_leave_no_kv_cache() -> None:
    memory = layout_memory(NANO_BF16, gpu_name=H100)
    b = memory.binding
    full = with_stage(memory, weights_bytes=b.usable_bytes)
    assert (memory_problem(full, 1) or "").startswith("weights ")
    assert "leave no KV cache" in (memory_problem(full, 1) or "")


def test_an_empty_pool_is_refused_and_one_byte_is_not() -> None:
    memory = layout_memory(NANO_BF16, gpu_name=H100)
    b = memory.binding
    empty = with_stage(memory, usable_bytes=b.weights_bytes + b.reserve_bytes)
    assert "leave no KV cache" in (memory_problem(empty, 1) or "")
    one_byte = with_stage(memory, usable_bytes=b.weights_bytes + b.reserve_bytes + 1)
    assert "leave no KV cache" not in (memory_problem(one_byte, 1) or "")


def concurrency(memory: LayoutMemory, requests: float) -> LayoutMemory:
    """``memory`` whose pool holds exactly ``requests`` full-length requests."""
    blocks = int(requests * memory.blocks_per_request)
    assert blocks / memory.blocks_per_request == requests
    return replace(with_stage(memory, num_blocks=blocks), max_num_seqs=1)


def test_one_full_request_is_enough_to_start_and_half_is_not() -> None:
    memory = layout_memory(NANO_BF16, gpu_name=H100, max_model_len=8192)
    assert memory_problem(concurrency(memory, 1.0), 1) is None
    assert memory_problem(concurrency(memory, 1.5), 1) is None
    half = memory_problem(concurrency(memory, 0.5), 1) or ""
    assert half.startswith("one 8192-token request needs ")
    assert half.endswith("(vLLM would refuse to start)")


def test_min_concurrency_is_met_when_equal() -> None:
    memory = concurrency(layout_memory(NANO_BF16, gpu_name=H100, max_model_len=8192), 4.0)
    assert memory_problem(memory, 4) is None
    assert memory_problem(memory, 5) == (
        "holds 4.00 full-length (8192-token) requests, below minConcurrency 5"
    )


def test_max_num_seqs_may_equal_the_mamba_blocks() -> None:
    memory = layout_memory(NANO_BF16, gpu_name=H100, max_model_len=8192)
    assert memory.mamba_slots  # a hybrid model
    assert memory.binding.mamba_layers
    blocks = memory.num_blocks
    assert memory_problem(replace(memory, max_num_seqs=blocks), 1) is None
    over = memory_problem(replace(memory, max_num_seqs=blocks + 1), 1) or ""
    assert over.startswith(f"vLLM would refuse to start: maxNumSeqs {blocks + 1} exceeds")


# --- resolve_model() / resolve_products() ----------------------------------------------------


def test_an_explicit_architecture_keeps_the_spec_model_id() -> None:
    deployment = NemotronDeploymentSpec.model_validate(
        {"model": {"id": "example/super-copy", "architecture": super_as_architecture().to_wire()}}
    )
    assert resolve_model(deployment.model).hf_id == "example/super-copy"


def test_a_contradictory_architecture_names_its_field_and_the_fix() -> None:
    deployment = NemotronDeploymentSpec.model_validate(
        {
            "model": {
                "id": "example/broken",
                "architecture": super_as_architecture(n_routed_experts=0).to_wire(),
            }
        }
    )
    with pytest.raises(PlanningError) as caught:
        resolve_model(deployment.model)
    error = caught.value
    assert error.reason == "InvalidArchitecture"
    assert error.field == "spec.model.architecture.nRoutedExperts"
    assert error.message == (
        "the layer pattern has MoE layers (E) but nRoutedExperts is 0; set it from config.json"
    )


def test_an_architecture_error_without_a_field_keeps_its_whole_message(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Every error model_from_architecture raises today starts with its field; one that does not
    # (a helper's "x is needed to count ...") must still reach the user whole, under the
    # architecture's field, not split at its first ": " into a field and an empty message.
    def fail(*_: object) -> None:
        raise ValueError("moe_intermediate_size is needed to count an MoE layer")

    monkeypatch.setattr("nemotron_operator.sizing.planner.model_from_architecture", fail)
    deployment = NemotronDeploymentSpec.model_validate(
        {"model": {"id": "example/x", "architecture": super_as_architecture().to_wire()}}
    )
    with pytest.raises(PlanningError) as caught:
        resolve_model(deployment.model)
    assert caught.value.field == "spec.model.architecture"
    assert caught.value.message == "moe_intermediate_size is needed to count an MoE layer"


def test_an_unknown_model_message_ends_with_the_architecture_field() -> None:
    with pytest.raises(PlanningError) as caught:
        resolve_model(spec("example/unknown").model)
    assert caught.value.message == (
        "example/unknown is not in the model catalog; use a catalog id (nemotron-operator models "
        "lists them) or describe the checkpoint in spec.model.architecture"
    )


def test_an_unknown_product_points_at_an_example_gfd_name() -> None:
    with pytest.raises(PlanningError) as caught:
        search(spec(NANO_BF16, capacity={"gpu": {"products": [H100, "NVIDIA-L4"]}}))
    assert caught.value.field == "spec.capacity.gpu.products[1]"
    assert caught.value.message == (
        "unknown GPU product 'NVIDIA-L4': use a GPU Feature Discovery name "
        "(nvidia.com/gpu.product) that the cluster has or that nemotron-operator gpus lists, "
        "e.g. NVIDIA-H200"
    )


def test_a_cluster_without_gpu_nodes_says_what_to_install() -> None:
    with pytest.raises(PlanningError) as caught:
        search(spec(NANO_BF16), inventory=inventory_from_nodes([node("cpu", None, 0)]))
    assert caught.value.reason == "NoMatchingGPUs"
    assert caught.value.field is None
    assert caught.value.message == (
        "the cluster has no GPU nodes (no node with a nvidia.com/gpu.product label and "
        "allocatable nvidia.com/gpu); install the NVIDIA GPU Operator or device plugin "
        "with GPU Feature Discovery, or add GPU nodes"
    )


# --- which error wins when layouts fail for different reasons --------------------------------


def odd_mamba_groups(**capacity: object) -> NemotronDeploymentSpec:
    """Super with 3 Mamba groups: only TP 1 is valid, and it cannot hold Super's weights on an
    H100."""
    return NemotronDeploymentSpec.model_validate(
        {
            "model": {
                "id": "example/odd",
                "architecture": super_as_architecture(mamba_n_groups=3).to_wire(),
            },
            "capacity": {"gpu": {"products": [H100]}, **capacity},
        }
    )


def test_planned_layouts_rejected_for_parallelism_blame_no_field() -> None:
    found = search(odd_mamba_groups())
    rejected = [e for e in found.evaluations if e.kind == "parallelism"]
    assert rejected  # TP 2, 4, 8 were planned, not asked for: no spec field to blame
    assert {e.field for e in rejected} == {None}
    assert rejected[0].problem == "TP 2 neither divides nor is a multiple of the 3 Mamba groups"
    with pytest.raises(PlanningError) as caught:
        choose(found)
    assert caught.value.reason == "InsufficientGPUMemory"  # TP 1 ran out of memory
    assert "(closest: NVIDIA-H100-80GB-HBM3 TP1 PP1: weights need 230.2 GiB" in caught.value.message


def test_parallelism_wins_over_precision() -> None:
    # V100 cannot run BF16 at all; on the H100 the explicit layout is invalid: fixing the
    # layout is what the user can act on.
    error = error_of(
        spec(
            NANO_BF16,
            capacity={
                "gpu": {"products": [V100, H100], "count": 12},
                "parallelism": {"pipeline": 3},
            },
        ),
        OLD_GPUS,
    )
    assert error.reason == "InvalidParallelism"
    assert error.field == "spec.capacity.parallelism.pipeline"
    assert "12 GPUs on 2 nodes of 8 would split a TP 4 group" in error.message
    assert len(error.rejected) == 2  # both products' layouts are reported


def test_among_layouts_holding_nothing_the_closest_is_the_smallest() -> None:
    # 40 GB GPUs, four per node, PP 1: TP 1, 2 and 4 all leave Super's weights over the usable
    # memory (no request fits in any); the hint shows the one with the fewest GPUs.
    inventory = inventory_from_nodes(
        [node("a", "NVIDIA-A100-SXM4-40GB", 4, memory_mib=40960, capability=(8, 0))]
    )
    found = search(spec(SUPER_BF16, capacity={"parallelism": {"pipeline": 1}}), inventory=inventory)
    assert [
        (e.layout.gpus, e.memory.max_concurrency if e.memory else None) for e in found.evaluations
    ] == [
        (1, 0.0),
        (2, 0.0),
        (4, 0.0),
    ]
    with pytest.raises(PlanningError) as caught:
        choose(found)
    assert "(closest: NVIDIA-A100-SXM4-40GB TP1 PP1: weights need" in caught.value.message
