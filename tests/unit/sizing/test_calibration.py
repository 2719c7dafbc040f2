"""The planner against vLLM's own startup logs (tests/unit/sizing/calibration_points.py).

Tolerances, and why:
- concurrency and KV tokens: exact up to the log's rounding — vLLM prints the pool to 0.01 GiB,
  so the block count is known to ±(0.005 GiB ÷ block bytes); the cache arithmetic mirrors vLLM.
- weights per GPU: ±2.5 %. The goal is ±2 %; Lightning's mixed-precision checkpoint loads 17.85
  GiB where NVIDIA's published NVFP4 recipe gives 18.25 GiB (+2.2 %, docs/sizing.md §9).
- KV pool: ±5 %, the issue's goal; the reserve terms were fitted to these logs.
- a layout a log shows refusing to start is never planned as fitting, unless docs/sizing.md §9
  records the disagreement (GB10's unified memory), and then the plan must carry GB10's warning.
"""

from __future__ import annotations

import math

import pytest

from nemotron_operator.api import EngineSpec
from nemotron_operator.catalog import lookup_model
from nemotron_operator.catalog.gpus import GIB
from nemotron_operator.sizing import Layout, LayoutMemory, evaluate, resolve_settings
from nemotron_operator.sizing.cache import num_blocks
from nemotron_operator.sizing.layouts import precision_problem, structural_problem
from nemotron_operator.sizing.planner import memory_problem

from .calibration_points import POINTS, LogPoint
from .helpers import FACTS_IMAGE

LOG_ROUNDING_GIB = 0.005
WEIGHTS_TOLERANCE = 0.025
POOL_TOLERANCE = 0.05
# Refusals the arithmetic cannot see: docs/sizing.md §9 records each.
DOCUMENTED_DISAGREEMENTS = frozenset(
    {"Ultra NVFP4, 4xGB10 TP4, 95 GiB, MTP 3", "Ultra NVFP4, 4xGB10 TP4, 95 GiB, no MTP"}
)


def memory_of(point: LogPoint) -> LayoutMemory:
    model = lookup_model(point.model_id)
    assert model is not None
    # The logs predate 0.31 (block size 16, utilization-based pool): the 0.31 profile is theirs.
    engine = {"image": FACTS_IMAGE, **point.engine}
    settings = resolve_settings(EngineSpec.model_validate(engine), model)
    layout = Layout(point.tensor_parallel, 1, model.is_moe and point.tensor_parallel > 1)
    return evaluate(model, point.gpu, layout, settings)


def ids(points: list[LogPoint]) -> list[str]:
    return [p.name for p in points]


WITH_POOL = [p for p in POINTS if p.kv_gib is not None]
SAME_CHECKPOINT = [p for p in POINTS if p.same_checkpoint and p.weights_gib is not None]


def test_the_table_has_at_least_five_logged_points() -> None:
    assert len(POINTS) >= 5
    assert all(p.source and p.vllm for p in POINTS)


@pytest.mark.parametrize("point", WITH_POOL, ids=ids(WITH_POOL))
def test_cache_arithmetic_turns_the_logged_pool_into_the_logged_concurrency(
    point: LogPoint,
) -> None:
    memory = memory_of(point)
    group = memory.binding.layers_per_group
    assert point.kv_gib is not None
    assert point.concurrency is not None
    low, high = ((point.kv_gib + d * LOG_ROUNDING_GIB) * GIB for d in (-1, 1))
    blocks = range(
        num_blocks(int(low), memory.page_bytes, group),
        num_blocks(int(high), memory.page_bytes, group) + 1,
    )
    concurrencies = [b / memory.blocks_per_request for b in blocks]
    assert any(round(c, 2) == point.concurrency for c in concurrencies)
    length = memory.settings.max_model_len
    assert point.kv_tokens in {int(c * length) for c in concurrencies}


@pytest.mark.parametrize("point", SAME_CHECKPOINT, ids=ids(SAME_CHECKPOINT))
def test_weights_per_gpu_match_model_loading_took(point: LogPoint) -> None:
    weights = memory_of(point).binding.weights_bytes / GIB
    assert weights == pytest.approx(point.weights_gib, rel=WEIGHTS_TOLERANCE)


COMPARABLE_POOL = [p for p in WITH_POOL if p.pool_comparable]


@pytest.mark.parametrize("point", COMPARABLE_POOL, ids=ids(COMPARABLE_POOL))
def test_kv_pool_matches_available_kv_cache_memory(point: LogPoint) -> None:
    memory = memory_of(point)
    binding = memory.binding
    assert point.weights_gib is not None
    assert point.kv_gib is not None
    # A community quantization's weights are the log's; the reserve is the planner's either way.
    weights = binding.weights_bytes if point.same_checkpoint else point.weights_gib * GIB
    pool = (binding.usable_bytes - weights - binding.reserve_bytes) / GIB
    assert pool == pytest.approx(point.kv_gib, rel=POOL_TOLERANCE)


def verdict(point: LogPoint) -> str | None:
    """The planner's judgement of the logged layout (None: it fits), checked the way
    plan_deployment checks an explicit layout; minConcurrency 1 because vLLM starts as soon as one
    full-length request fits."""
    memory = memory_of(point)
    model, gpu, layout = memory.model, memory.gpu, memory.layout
    return (
        structural_problem(model, gpu, layout)
        or precision_problem(model, gpu)
        or memory_problem(memory, 1)
    )


@pytest.mark.parametrize("point", POINTS, ids=ids(POINTS))
def test_the_planner_never_fits_what_vllm_refused(point: LogPoint) -> None:
    problem = verdict(point)
    if point.started:
        assert problem is None, f"{point.name} started in the log but the planner says {problem}"
    elif point.name in DOCUMENTED_DISAGREEMENTS:
        assert problem is None  # if this fails, the disagreement is gone: update docs/sizing.md §9
        assert point.gpu.note is not None
        assert "unified memory" in point.gpu.note  # the plan carries this warning into its notes
    else:
        assert problem is not None, f"{point.name}: vLLM refused ({point.why}), planner fits it"


def test_fitted_reserve_reproduces_the_measured_reserve_of_the_5090_log() -> None:
    # usable − weights − pool is everything vLLM held besides weights and cache.
    point = next(p for p in POINTS if p.gpu.name == "NVIDIA-GeForce-RTX-5090")
    memory = memory_of(point)
    assert point.weights_gib is not None
    assert point.kv_gib is not None
    measured = memory.binding.usable_bytes / GIB - point.weights_gib - point.kv_gib
    assert memory.binding.reserve_bytes / GIB == pytest.approx(measured, abs=0.1)
    assert math.isclose(measured, 4.81, abs_tol=0.01)
