"""The plan checked against vllm:cache_config_info."""

from __future__ import annotations

import pytest

from nemotron_operator.api import Plan
from nemotron_operator.observe.plan_check import compare, observed_cache, to_status
from nemotron_operator.observe.samples import CacheConfigInfo
from tests.unit.observe.plans import plan


def info(blocks: int, **extra: str) -> CacheConfigInfo:
    return CacheConfigInfo({"num_gpu_blocks": str(blocks), "block_size": "1056", **extra})


def test_published_figures_are_taken_as_vllm_reports_them() -> None:
    observed = observed_cache(
        "p-0",
        info(6000, kv_cache_size_tokens="10485760", kv_cache_max_concurrency="40.0"),
        plan(),
    )
    assert observed is not None
    assert (observed.kv_cache_tokens, observed.max_concurrency, observed.derived) == (
        10485760,
        40.0,
        (),
    )
    result = compare(plan(), [observed])
    assert result is not None
    assert result.accurate
    assert result.reason == "WithinTolerance"


def test_missing_figures_are_derived_from_blocks_and_the_plan() -> None:
    observed = observed_cache("p-0", info(3000, kv_cache_size_tokens="None"), plan())
    assert observed is not None
    assert observed.max_concurrency == pytest.approx(3000 / 150)
    assert observed.kv_cache_tokens == int(20.0 * 262144)
    assert observed.derived == ("maxConcurrency", "kvCacheTokens")


def test_no_blocks_yet_means_nothing_to_compare() -> None:
    assert observed_cache("p-0", CacheConfigInfo({"num_gpu_blocks": "None"}), plan()) is None
    assert compare(plan(), []) is None


def test_a_ten_percent_shortfall_is_named_and_the_worst_pod_reported() -> None:
    pods = [
        observed_cache(name, info(blocks), plan())
        for name, blocks in (("p-0", 6000), ("p-1", 5400), ("p-2", 5950))
    ]
    result = compare(plan(), [p for p in pods if p is not None])
    assert result is not None
    assert not result.accurate
    assert result.reason == "LessThanPlanned"
    assert result.observed.pod == "p-1"
    assert result.deviation("kvCacheBlocks") == pytest.approx(-0.10)
    assert {d.figure for d in result.shortfalls} == {
        "kvCacheBlocks",
        "kvCacheTokens",
        "maxConcurrency",
    }
    assert "kvCacheBlocks planned 6,000, vLLM allocated 5,400 (-10.0%)" in result.message
    assert "on pod p-1" in result.message
    shown = to_status(result, "2026-12-02T10:00:00Z")
    assert (shown.kv_cache_blocks, shown.blocks_deviation, shown.pods_checked) == (5400, -0.1, 3)


def test_the_threshold_is_configurable_and_more_than_planned_is_not_a_fault() -> None:
    observed = observed_cache("p-0", info(5760), plan())  # -4 %
    assert observed is not None
    default = compare(plan(), [observed])
    strict = compare(plan(), [observed], threshold=0.03)
    assert default is not None
    assert strict is not None
    assert default.accurate
    assert not strict.accurate
    generous = observed_cache("p-0", info(7000), plan())
    assert generous is not None
    more = compare(plan(), [generous])
    assert more is not None
    assert (more.accurate, more.reason) == (True, "MoreThanPlanned")


def test_status_carries_every_figure_of_the_worst_pod_rounded_for_reading() -> None:
    observed = observed_cache(
        "p-1",
        info(5555, kv_cache_size_tokens="9700001", kv_cache_max_concurrency="37.0333333"),
        plan(),
    )
    assert observed is not None
    result = compare(plan(), [observed])
    assert result is not None
    shown = to_status(result, "2026-12-05T21:00:00Z")
    assert shown.kv_cache_blocks == 5555
    assert shown.kv_cache_tokens == 9700001
    assert shown.max_concurrency == 37.033  # three decimals
    assert shown.block_size_tokens == 1056
    # observed / planned - 1, four decimals: 5555/6000, 9700001/10485760, 37.0333333/40
    assert shown.blocks_deviation == -0.0742
    assert shown.tokens_deviation == -0.0749
    assert shown.concurrency_deviation == -0.0742
    assert shown.derived == []
    assert (shown.pod, shown.pods_checked, shown.checked_at) == ("p-1", 1, "2026-12-05T21:00:00Z")
    derived = observed_cache("p-2", info(3000), plan())
    assert derived is not None
    again = compare(plan(), [derived])
    assert again is not None
    assert to_status(again, "t").derived == ["maxConcurrency", "kvCacheTokens"]


def test_without_blocks_per_sequence_in_the_plan_no_concurrency_is_derived() -> None:
    wire = plan().model_dump(by_alias=True)
    wire.update(blocksPerSequence=0)
    observed = observed_cache("p-0", info(3000), Plan.model_validate(wire))
    assert observed is not None
    assert observed.max_concurrency == 0.0
    assert observed.kv_cache_tokens == 0


def test_a_message_shows_whole_figures_without_decimals_and_others_with_two() -> None:
    observed = observed_cache("p-0", info(5400), plan())  # 36.0 requests derived: 5400 / 150
    assert observed is not None
    result = compare(plan(), [observed])
    assert result is not None
    assert "maxConcurrency planned 40, vLLM allocated 36 (-10.0%)" in result.message
    odd = observed_cache("p-0", info(5401, kv_cache_max_concurrency="36.0066"), plan())
    assert odd is not None
    odd_result = compare(plan(), [odd])
    assert odd_result is not None
    assert "vLLM allocated 36.01 (" in odd_result.message


def test_a_missing_block_size_reads_as_zero_and_an_infinite_label_as_missing() -> None:
    observed = observed_cache("p-0", CacheConfigInfo({"num_gpu_blocks": "6000"}), plan())
    assert observed is not None
    assert observed.block_size_tokens == 0
    assert CacheConfigInfo({"x": "inf"}).number("x") is None
    assert CacheConfigInfo({"x": "nan"}).number("x") is None


def planned_pool(blocks: int = 6000, bytes_per_block: int = 131072) -> Plan:
    """The test plan with a per-GPU pool of ``blocks`` blocks of ``bytes_per_block``."""
    wire = plan(blocks).model_dump(by_alias=True)
    wire["perGPU"]["kvPoolBytes"] = blocks * bytes_per_block
    return Plan.model_validate(wire)


def shortfall_message(observed_blocks: int, **labels: str) -> str:
    observed = observed_cache("p-0", info(observed_blocks, **labels), planned_pool())
    assert observed is not None
    result = compare(planned_pool(), [observed])
    assert result is not None
    assert result.reason == "LessThanPlanned"
    return result.message


def test_the_planned_pool_holding_half_the_blocks_names_the_layout_not_the_reserves() -> None:
    """As the real engine showed with a checkpoint of two KV heads described as one: vLLM got
    exactly the planned bytes, in pages twice the plan's."""
    message = shortfall_message(3000, kv_cache_memory_bytes=str(6000 * 131072))
    assert (
        f"vLLM was given the planned pool ({6000 * 131072:,} bytes) but fits fewer blocks in "
        "it: about 262,144 bytes per block where the plan has 131,072" in message
    )
    assert "spec.model.architecture against the checkpoint's config.json" in message
    assert "reserves" not in message


def test_a_pool_smaller_than_the_one_passed_is_named_as_an_override() -> None:
    message = shortfall_message(3000, kv_cache_memory_bytes=str(3000 * 131072))
    assert (
        f"vLLM was given a pool of {3000 * 131072:,} bytes where the plan passes "
        f"{6000 * 131072:,} (-50.0%): something overrode --kv-cache-memory-bytes" in message
    )


def test_the_planned_blocks_with_fewer_requests_name_the_blocks_per_request() -> None:
    """Blocks as planned, concurrency 24 instead of 40: 250 blocks a request, not 150 (a pod
    started with another --max-model-len, e.g. the old one during a rollout)."""
    message = shortfall_message(
        6000, kv_cache_memory_bytes=str(6000 * 131072), kv_cache_max_concurrency="24"
    )
    assert "a full-length request takes more of them: about 250.0 where the plan has 150" in (
        message
    )


def test_a_pool_vllm_measured_itself_leaves_the_reserves_as_the_suspect() -> None:
    message = shortfall_message(3000, kv_cache_memory_bytes="None")
    assert "so the catalog's reserves can be calibrated" in message
    assert "was given" not in message
