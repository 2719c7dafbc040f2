"""sizing/lora.py per layer kind, by behaviour: the buffer elements of one layer on one rank are
whole numbers (they are tensor elements), the dense MLP layer ``-`` of Nemotron-H is an ``up_proj``
(column-parallel) and a ``down_proj`` (row-parallel), and a kind vLLM does not wrap holds none
(docs/sizing.md §11). Tensor-parallel sizes that do not divide a dimension are used on purpose:
the rank-local size is the floor, as in the planner's other per-rank terms."""

from __future__ import annotations

from dataclasses import replace

import pytest

from nemotron_operator.catalog import MODELS, ModelEntry
from nemotron_operator.sizing.lora import LoraLimits, layer_elements, lora_buffer_bytes

H8B = next(m for m in MODELS if m.hf_id == "nvidia/Nemotron-H-8B-Base-8K")
SUPER = next(m for m in MODELS if m.hf_id == "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16")


def test_dense_mlp_layer_is_up_and_down_projection() -> None:
    h, inter, r = 4096, 21504, 16  # Nemotron-H-8B: hidden_size, intermediate_size
    for t in (1, 2, 5):
        up = r * (h + inter // t)  # column-parallel: A over the hidden size, B over inter ÷ TP
        down = r * (inter // t + h)  # row-parallel: A over inter ÷ TP, B over the hidden size
        assert layer_elements(H8B, "-", t, False, r) == up + down


def test_a_kind_vllm_does_not_wrap_holds_nothing() -> None:
    assert layer_elements(H8B, "?", 1, False, 16) == 0


@pytest.mark.parametrize("kind", ["*", "M", "-", "E"])
@pytest.mark.parametrize("t", [3, 5])
@pytest.mark.parametrize("ep", [False, True])
def test_elements_are_whole_numbers_at_any_tensor_parallel(kind: str, t: int, ep: bool) -> None:
    model = SUPER if kind == "E" else H8B
    assert type(layer_elements(model, kind, t, ep, 16)) is int


def test_buffer_bytes_are_whole_with_an_lm_head_split_unevenly() -> None:
    got = lora_buffer_bytes(
        H8B,
        {"-": 1},
        tensor_parallel=3,
        expert_parallel=False,
        first_stage=False,
        last_stage=True,
        limits=LoraLimits(max_loras=1, max_lora_rank=8),
    )
    assert type(got) is int


def _with_dims(entry: ModelEntry, **changes: int | None) -> ModelEntry:
    return replace(entry, dims=replace(entry.dims, **changes))


def test_an_architecture_without_an_mlp_width_counts_only_the_hidden_sides() -> None:
    # spec.model.architecture may leave intermediateSize unset (api/model.py); the layer's
    # buffers then span only the hidden size on each side, at TP 1 as at any other.
    unsized = _with_dims(H8B, intermediate_size=None)
    assert layer_elements(unsized, "-", 1, False, 16) == 2 * 16 * 4096


def test_a_shared_expert_without_a_size_holds_no_buffers() -> None:
    unsized = _with_dims(SUPER, moe_shared_expert_intermediate_size=None)
    without = _with_dims(SUPER, moe_shared_expert_intermediate_size=None, n_shared_experts=0)
    assert layer_elements(unsized, "E", 1, False, 16) == layer_elements(without, "E", 1, False, 16)
