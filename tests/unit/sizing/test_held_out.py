"""The reserve checked out of sample (issue 26): fit on some logged points, judge on the others.

test_calibration.py checks the planner on the same two logs the fitted reserve terms came from.
Here the fit is redone (calibration_fit.py) and each logged pool is predicted by a fit that never
saw it (leave one out); the multi-GPU logs, none of which took part in any fit, are judged by
their verdicts and by the one bound their numbers allow. docs/sizing.md §9 shows the errors.
"""

from __future__ import annotations

import pytest

from nemotron_operator.api import EngineSpec
from nemotron_operator.catalog import lookup_model
from nemotron_operator.catalog.gpus import GIB
from nemotron_operator.sizing import Layout, evaluate, resolve_settings
from nemotron_operator.sizing.reserve import CUDA_GRAPHS_BYTES, PROFILE_BASE_BYTES

from .calibration_fit import Fit, fit, pool_error
from .calibration_points import POINTS, LogPoint
from .test_calibration import memory_of, verdict

# The pool goal of docs/sizing.md §9, now out of sample.
HELD_OUT_TOLERANCE = 0.05
FIT_POINTS = [p for p in POINTS if p.kv_gib is not None and "cudaGraphGiB" in p.extra]
MULTI_GPU = [p for p in POINTS if p.tensor_parallel > 1]


def ids(points: list[LogPoint]) -> list[str]:
    return [p.name for p in points]


def test_the_fit_has_points_to_leave_out_and_the_multi_gpu_logs_are_never_fitted() -> None:
    assert len(FIT_POINTS) >= 2
    assert all(p.tensor_parallel == 1 and p.pool_comparable for p in FIT_POINTS)
    assert len(MULTI_GPU) >= 6
    assert not set(ids(MULTI_GPU)) & set(ids(FIT_POINTS))


def test_the_code_carries_the_fit_of_every_logged_point() -> None:
    found = fit([(p, memory_of(p)) for p in FIT_POINTS])
    # profileBase is the fit to 10 MiB; cudaGraphs the logged pools rounded up to 0.5 GiB.
    assert abs(PROFILE_BASE_BYTES - found.profile_base_bytes) <= 10 * 2**20
    assert found.cuda_graphs_bytes <= CUDA_GRAPHS_BYTES < found.cuda_graphs_bytes + 0.1 * GIB


@pytest.mark.parametrize("point", FIT_POINTS, ids=ids(FIT_POINTS))
def test_in_sample_pool_error_with_the_codes_constants(point: LogPoint) -> None:
    memory = memory_of(point)
    error = pool_error(point, memory, Fit(PROFILE_BASE_BYTES, CUDA_GRAPHS_BYTES))
    assert abs(error) <= HELD_OUT_TOLERANCE


@pytest.mark.parametrize("point", FIT_POINTS, ids=ids(FIT_POINTS))
def test_held_out_pool_error(point: LogPoint) -> None:
    others = [(p, memory_of(p)) for p in FIT_POINTS if p is not point]
    fitted = fit(others)
    error = pool_error(point, memory_of(point), fitted)
    assert abs(error) <= HELD_OUT_TOLERANCE, f"{point.name}: {error:+.1%} out of sample"


@pytest.mark.parametrize("point", MULTI_GPU, ids=ids(MULTI_GPU))
def test_multi_gpu_logs_held_out_verdicts(point: LogPoint) -> None:
    """No multi-GPU log took part in the fit: whether the planner admits what vLLM started and
    refuses what it refused is an out-of-sample check (GB10's unified-memory refusals are the
    documented exception, test_calibration.py)."""
    problem = verdict(point)
    if point.started:
        assert problem is None
        memory = memory_of(point)
        assert memory.max_concurrency >= 1  # at least one full-length request, as vLLM did


def test_the_multi_gpu_reserve_is_not_above_what_the_lora_log_held() -> None:
    """Ultra BF16 on 8×B200 is the one multi-GPU log with a pool; planned without its LoRA
    settings, everything vLLM held besides weights and cache (25.4 GiB per GPU, LoRA included)
    must be at least the planner's reserve (the comparison with them is the test below)."""
    point = next(p for p in POINTS if p.tensor_parallel == 8 and p.kv_gib is not None)
    memory = memory_of(point)
    assert point.kv_gib is not None
    held = memory.binding.usable_bytes - memory.binding.weights_bytes - point.kv_gib * GIB
    assert memory.binding.reserve_bytes <= held
    assert held / GIB == pytest.approx(25.36, abs=0.01)


# Point 10's log, section 2 and §5: the LoRA settings of its launch (max_loras 1, rank 64, no
# --enable-expert-parallel) and the pool the same launch printed with PIECEWISE-only graphs.
POINT_10_LORA = {"maxLoras": 1, "maxLoraRank": 64}
POINT_10_PIECEWISE_KV_GIB = 11.07


def test_multi_gpu_held_out_pool_error_of_the_lora_log() -> None:
    """Ultra BF16 on 8×B200 TP8 with its LoRA buffers modelled (docs/sizing.md §9, §11): held
    out, since the code's constants are the fit on the two one-GPU logs. The planner's pool is
    +35 % (2.97 GiB per GPU) above the logged 8.49 GiB — outside ±5 %, pinned here so the figure in
    the docs moves with the code — and within 5 % of the same launch's PIECEWISE-only pool: the
    difference is the LoRA-specialized FULL decode graphs, which the fitted terms do not scale
    to."""
    point = next(p for p in MULTI_GPU if p.kv_gib is not None)
    assert point not in FIT_POINTS
    assert point.kv_gib is not None
    model = lookup_model(point.model_id)
    assert model is not None
    engine = EngineSpec.model_validate({**point.engine, "lora": POINT_10_LORA})
    layout = Layout(point.tensor_parallel, 1, False)
    binding = evaluate(model, point.gpu, layout, resolve_settings(engine, model)).binding
    pool_gib = (binding.usable_bytes - binding.weights_bytes - binding.reserve_bytes) / GIB
    error = pool_gib / point.kv_gib - 1
    assert error == pytest.approx(0.35, abs=0.01)
    assert 0 < pool_gib - point.kv_gib < 3.1  # optimistic, by less than the unmodelled graphs
    assert abs(pool_gib / POINT_10_PIECEWISE_KV_GIB - 1) <= HELD_OUT_TOLERANCE
