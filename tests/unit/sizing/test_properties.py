"""Properties of the memory model and the planner, checked over generated inputs."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from nemotron_operator.api import EngineSpec
from nemotron_operator.catalog import GPUS, MODELS, GpuProduct, ModelEntry
from nemotron_operator.sizing import (
    Layout,
    PlanningError,
    evaluate,
    plan_deployment,
    resolve_settings,
)
from nemotron_operator.sizing.layouts import structural_problem

from .helpers import spec

PROPERTY_SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

models = st.sampled_from(MODELS)
gpus = st.sampled_from(GPUS)
engines = st.fixed_dictionaries(
    {
        "kv_cache_dtype": st.sampled_from(["auto", "fp8"]),
        "mamba_ssm_cache_dtype": st.sampled_from(["float32", "float16"]),
        "enable_prefix_caching": st.booleans(),
        "gpu_memory_utilization": st.sampled_from([0.8, 0.9, 0.95]),
    }
)


def _settings(model: ModelEntry, engine: dict[str, object], length: int, draft: int) -> object:
    spec_decoding = {"method": "mtp", "num_speculative_tokens": draft} if draft else None
    if not model.mtp_layers:
        spec_decoding = None
    values = {**engine, "max_model_len": min(length, model.trained_context)}
    if spec_decoding:
        values["speculative_decoding"] = spec_decoding
    return resolve_settings(EngineSpec.model_validate(values), model)


def _valid(model: ModelEntry, gpu: GpuProduct, layout: Layout) -> bool:
    return structural_problem(model, gpu, layout) is None


@PROPERTY_SETTINGS
@given(
    st.tuples(models, gpus, engines),
    st.tuples(st.sampled_from([1, 2, 4]), st.sampled_from([1, 2, 3])),
    st.integers(1024, 1 << 20),
    st.integers(0, 3),
)
def test_more_gpus_never_lower_concurrency(
    setup: tuple[ModelEntry, GpuProduct, dict[str, object]],
    sizes: tuple[int, int],
    length: int,
    draft: int,
) -> None:
    model, gpu, engine = setup
    tp, pp = sizes
    current = _settings(model, engine, length, draft)
    base = Layout(tp, pp, model.is_moe and tp > 1)
    wider = Layout(tp * 2, pp, model.is_moe)
    deeper = Layout(tp, pp + 1, base.expert_parallel)
    assume(_valid(model, gpu, base))
    before = evaluate(model, gpu, base, current).max_concurrency  # type: ignore[arg-type]
    for more in (wider, deeper):
        if _valid(model, gpu, more):
            after = evaluate(model, gpu, more, current).max_concurrency  # type: ignore[arg-type]
            assert after >= before, (model.hf_id, gpu.name, base, more)


@PROPERTY_SETTINGS
@given(models, gpus, engines, st.integers(1024, 1 << 20), st.integers(1024, 1 << 20))
def test_longer_context_never_raises_concurrency(
    model: ModelEntry, gpu: GpuProduct, engine: dict[str, object], a: int, b: int
) -> None:
    short, long = sorted((min(a, model.trained_context), min(b, model.trained_context)))
    layout = Layout(min(2, gpu.gpus_per_node), 1, model.is_moe and gpu.gpus_per_node > 1)
    assume(_valid(model, gpu, layout))
    base = _settings(model, engine, short, 1)
    at_short = evaluate(model, gpu, layout, base)  # type: ignore[arg-type]
    at_long = evaluate(model, gpu, layout, replace(base, max_model_len=long))  # type: ignore[type-var]
    assert at_long.max_concurrency <= at_short.max_concurrency
    assert at_long.bytes_per_sequence >= at_short.bytes_per_sequence


@PROPERTY_SETTINGS
@given(models, gpus, engines, st.sampled_from([1, 2, 4, 8]), st.integers(1024, 1 << 20))
def test_fp8_kv_never_lowers_concurrency(
    model: ModelEntry, gpu: GpuProduct, engine: dict[str, object], tp: int, length: int
) -> None:
    layout = Layout(tp, 1, model.is_moe and tp > 1)
    assume(_valid(model, gpu, layout))
    bf16 = _settings(model, {**engine, "kv_cache_dtype": "auto"}, length, 1)
    fp8 = replace(bf16, kv_cache_dtype="fp8")  # type: ignore[type-var]
    assert (
        evaluate(model, gpu, layout, fp8).max_concurrency  # type: ignore[arg-type]
        >= evaluate(model, gpu, layout, bf16).max_concurrency  # type: ignore[arg-type]
    )


spec_inputs = st.fixed_dictionaries(
    {
        "model": models,
        "products": st.lists(gpus, max_size=3, unique=True),
        "length": st.sampled_from([4096, 8192, 32768, 131072, 262144, 1048576]),
        "min_concurrency": st.integers(1, 64),
        "replicas": st.integers(0, 5),
        "kv": st.sampled_from(["auto", "fp8"]),
    }
)


def _spec(values: dict[str, object], capacity_extra: dict[str, object] | None = None) -> object:
    model = values["model"]
    assert isinstance(model, ModelEntry)
    products = values["products"]
    assert isinstance(products, list)
    length = values["length"]
    assert isinstance(length, int)
    capacity: dict[str, object] = {
        "minConcurrency": values["min_concurrency"],
        "gpu": {"products": [g.name for g in products]},
        **(capacity_extra or {}),
    }
    return spec(
        model.hf_id,
        engine={"maxModelLen": min(length, model.trained_context), "kvCacheDtype": values["kv"]},
        capacity=capacity,
        replicas=values["replicas"],
    )


@PROPERTY_SETTINGS
@given(spec_inputs)
def test_a_chosen_plan_always_fits(values: dict[str, object]) -> None:
    deployment = _spec(values)
    try:
        result = plan_deployment(deployment)  # type: ignore[arg-type]
    except PlanningError as error:
        reason: str | None = error.reason
    else:
        reason = None
    if reason is not None:
        assert reason in {"InsufficientGPUMemory", "InvalidParallelism"}
        return
    plan = result.plan
    per_gpu = plan.per_gpu
    assert per_gpu.weights_bytes + per_gpu.reserve_bytes < per_gpu.usable_bytes
    assert per_gpu.kv_pool_bytes == (
        per_gpu.usable_bytes - per_gpu.weights_bytes - per_gpu.reserve_bytes
    )
    assert per_gpu.usable_bytes <= plan.gpu_memory_bytes
    assert plan.max_concurrency >= values["min_concurrency"]  # type: ignore[operator]
    assert plan.kv_cache_blocks * plan.layers_per_group * result.memory.page_bytes <= (
        per_gpu.kv_pool_bytes
    )
    assert plan.gpus_per_replica == plan.tensor_parallel * plan.pipeline_parallel
    assert plan.tensor_parallel <= plan.gpus_per_node
    assert plan.total_gpus == plan.replicas * plan.gpus_per_replica
    assert plan.nodes * plan.gpus_per_node >= plan.total_gpus
    if values["products"]:
        assert plan.gpu_product in {g.name for g in values["products"]}  # type: ignore[attr-defined]


@PROPERTY_SETTINGS
@given(
    spec_inputs,
    st.one_of(st.none(), st.sampled_from([1, 2, 4, 8])),
    st.one_of(st.none(), st.integers(1, 4)),
    st.one_of(st.none(), st.booleans()),
)
def test_explicit_choices_are_never_changed(
    values: dict[str, object], tensor: int | None, pipeline: int | None, expert: bool | None
) -> None:
    parallelism = {
        k: v
        for k, v in (("tensor", tensor), ("pipeline", pipeline), ("expert", expert))
        if v is not None
    }
    deployment = _spec(values, {"parallelism": parallelism})
    try:
        plan = plan_deployment(deployment).plan  # type: ignore[arg-type]
    except PlanningError:
        return
    if tensor is not None:
        assert plan.tensor_parallel == tensor
    if pipeline is not None:
        assert plan.pipeline_parallel == pipeline
    if expert is not None:
        assert plan.expert_parallel == expert
    assert plan.replicas == values["replicas"]


@PROPERTY_SETTINGS
@given(spec_inputs, st.sampled_from([1, 2, 4, 8, 16]))
def test_explicit_gpu_count_is_never_changed(values: dict[str, object], count: int) -> None:
    deployment = _spec(values, {"gpu": {"count": count, "products": []}})
    try:
        plan = plan_deployment(deployment).plan  # type: ignore[arg-type]
    except PlanningError:
        return
    assert plan.gpus_per_replica == count


def test_planning_is_deterministic() -> None:
    deployment = spec("nvidia/NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-BF16")
    assert plan_deployment(deployment).plan == plan_deployment(deployment).plan
