"""The stand-in vLLM's own KV cache accounting, against the operator's plan.

The stand-in may not import the planner, so it keeps a second account of vLLM's startup arithmetic;
with zero bias it must land on the plan's blocks for every catalog model in the examples, so the
operator's plan check passes there, and a bias must move it by that fraction.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml

from nemotron_operator.api import NemotronDeployment, Plan
from nemotron_operator.observe.plan_check import compare, observed_cache
from nemotron_operator.observe.samples import CacheConfigInfo
from nemotron_operator.render import render_all
from nemotron_operator.sizing import plan_deployment
from nemotron_sim.vllm.args import StubVllmArgumentError, parse_serve_argv
from nemotron_sim.vllm.kv_cache import CacheAllocation, allocate, info_labels, parse_bias

ROOT = Path(__file__).resolve().parents[3]
CATALOG_CASES = [
    "examples/minimal.yaml",
    "examples/nano-bf16.yaml",
    "examples/super-nvfp4-b200.yaml",
    "examples/super-vl-bf16-h200.yaml",
    "tests/golden/inputs/karpenter-h200.yaml",
    "tests/golden/inputs/multi-node-h100.yaml",
]


def stand_in_for(
    path: str, bias: float = 0.0, *, planned: bool = False
) -> tuple[Plan, CacheAllocation, dict[str, str]]:
    body = yaml.safe_load((ROOT / path).read_text())
    if planned:
        body["spec"].setdefault("engine", {})["kvCacheMemory"] = "Planned"
    deployment = NemotronDeployment.model_validate(body)
    result = plan_deployment(deployment.spec)
    objects = render_all(deployment, result)
    container = next(o for o in objects if o["kind"] == "StatefulSet")["spec"]["template"]["spec"][
        "containers"
    ][0]
    config = parse_serve_argv([*container["command"], *container["args"]])
    allocation = allocate(
        config.model,
        config.options,
        max_model_len=config.max_model_len,
        max_num_seqs=config.max_num_seqs if "--max-num-seqs" in config.options else None,
        spec_tokens=config.num_speculative_tokens,
        gpu_product=result.plan.gpu_product,
        bias=bias,
    )
    return result.plan, allocation, info_labels(allocation, config.options)


@pytest.mark.parametrize("path", CATALOG_CASES)
def test_zero_bias_agrees_with_the_plan(path: str) -> None:
    plan, allocation, labels = stand_in_for(path)
    assert allocation.num_gpu_blocks == plan.kv_cache_blocks
    assert allocation.block_size == plan.block_size_tokens
    assert allocation.blocks_per_request == plan.blocks_per_sequence
    assert allocation.kv_cache_size_tokens == plan.kv_cache_tokens
    observed = observed_cache("pod-0", CacheConfigInfo(labels), plan)
    assert observed is not None
    assert observed.derived == ()
    result = compare(plan, [observed])
    assert result is not None
    assert result.accurate


def test_a_ten_percent_shortfall_is_caught_by_the_plan_check() -> None:
    plan, allocation, labels = stand_in_for("examples/super-vl-bf16-h200.yaml", bias=-0.10)
    assert allocation.num_gpu_blocks == math.floor(plan.kv_cache_blocks * 0.9)
    observed = observed_cache("pod-0", CacheConfigInfo(labels), plan)
    assert observed is not None
    result = compare(plan, [observed])
    assert result is not None
    assert not result.accurate
    assert result.deviation("kvCacheBlocks") == pytest.approx(-0.10, abs=0.001)


def test_labels_are_vllm_cache_config_fields() -> None:
    _, _, labels = stand_in_for("examples/nano-bf16.yaml")
    expected = {"num_gpu_blocks", "block_size", "kv_cache_size_tokens", "kv_cache_max_concurrency"}
    expected |= {"gpu_memory_utilization", "enable_prefix_caching", "cache_dtype"}
    assert expected <= set(labels)
    assert labels["num_cpu_blocks"] == "None"


def test_unknown_model_or_gpu_falls_back_to_a_small_pool() -> None:
    allocation = allocate(
        "/models/weights", {}, max_model_len=4096, max_num_seqs=None, spec_tokens=0,
        gpu_product=None,
    )  # fmt: skip
    assert allocation.max_concurrency == 4.0


@pytest.mark.parametrize("text", ["x", "-1", "nan"])
def test_a_bad_bias_is_refused_naming_its_source(text: str) -> None:
    with pytest.raises(StubVllmArgumentError, match="NEMOTRON_SIM_VLLM_KV_CACHE_BIAS"):
        parse_bias("NEMOTRON_SIM_VLLM_KV_CACHE_BIAS", text)


@pytest.mark.parametrize("path", CATALOG_CASES)
def test_a_planned_pool_is_allocated_as_planned_whatever_the_measurement(path: str) -> None:
    # --kv-cache-memory-bytes replaces the measured pool: a stand-in that would measure 10 % less
    # still allocates the plan's blocks (with pipeline stages too: every worker gets the pool).
    plan, allocation, labels = stand_in_for(path, bias=-0.10, planned=True)
    assert allocation.num_gpu_blocks == plan.kv_cache_blocks
    assert allocation.kv_cache_size_tokens == plan.kv_cache_tokens
    assert labels["kv_cache_memory_bytes"] == str(plan.per_gpu.kv_pool_bytes)
