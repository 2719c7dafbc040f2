"""The stand-in exposes vLLM's metric names and types exactly (model-facts.md §4)."""

from __future__ import annotations

import time

from prometheus_client.parser import text_string_to_metric_families

from nemotron_sim.vllm.metrics import VllmMetrics, one_two_five_buckets
from nemotron_sim.vllm.server import StubVllm

# Name as scraped -> Prometheus type, from vLLM's v1/metrics/loggers.py and spec_decode/metrics.py.
VLLM_SERIES = {
    "vllm:num_requests_running": "gauge",
    "vllm:num_requests_waiting": "gauge",
    "vllm:kv_cache_usage_perc": "gauge",
    "vllm:prompt_tokens_total": "counter",
    "vllm:generation_tokens_total": "counter",
    "vllm:prompt_tokens_cached_total": "counter",
    "vllm:request_success_total": "counter",
    "vllm:num_preemptions_total": "counter",
    "vllm:prefix_cache_queries_total": "counter",
    "vllm:prefix_cache_hits_total": "counter",
    "vllm:time_to_first_token_seconds_count": "histogram",
    "vllm:inter_token_latency_seconds_count": "histogram",
    "vllm:request_time_per_output_token_seconds_count": "histogram",
    "vllm:e2e_request_latency_seconds_count": "histogram",
    "vllm:request_queue_time_seconds_count": "histogram",
    "vllm:request_prefill_time_seconds_count": "histogram",
    "vllm:request_decode_time_seconds_count": "histogram",
    "vllm:request_prompt_tokens_count": "histogram",
    "vllm:request_generation_tokens_count": "histogram",
    "vllm:iteration_tokens_total_count": "histogram",
}
SPEC_SERIES = {
    "vllm:spec_decode_num_drafts_total": "counter",
    "vllm:spec_decode_num_draft_tokens_total": "counter",
    "vllm:spec_decode_num_accepted_tokens_total": "counter",
    "vllm:spec_decode_num_accepted_tokens_per_pos_total": "counter",
}


def exposed(metrics: VllmMetrics) -> dict[str, tuple[str, dict[str, str]]]:
    """Every exposed sample name -> (its family's type, its labels)."""
    samples = {}
    for family in text_string_to_metric_families(metrics.exposition().decode()):
        for sample in family.samples:
            samples[sample.name] = (family.type, sample.labels)
    return samples


def test_series_have_vllm_names_types_and_labels() -> None:
    samples = exposed(VllmMetrics("super", max_model_len=1000, spec_tokens=0))
    for name, kind in VLLM_SERIES.items():
        assert name in samples, name
        family_type, labels = samples[name]
        assert family_type == kind, name
        assert labels["model_name"] == "super"
        assert labels["engine"] == "0"
    assert not any(name.startswith("vllm:spec_decode") for name in samples)
    assert "vllm:gpu_cache_usage_perc" not in samples  # gone from vLLM (model-facts.md §4)


def test_speculative_series_exist_only_with_a_speculative_config() -> None:
    samples = exposed(VllmMetrics("super", max_model_len=1000, spec_tokens=3))
    for name, kind in SPEC_SERIES.items():
        assert samples[name][0] == kind, name
    text = VllmMetrics("m", max_model_len=10, spec_tokens=3).exposition().decode()
    positions = {
        sample.labels["position"]
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "vllm:spec_decode_num_accepted_tokens_per_pos_total"
    }
    assert positions == {"0", "1", "2"}


def test_draft_accounting_adds_up() -> None:
    metrics = VllmMetrics("m", max_model_len=10, spec_tokens=3)
    assert metrics.spec_decode is not None
    metrics.spec_decode.record_draft(2)
    metrics.spec_decode.record_draft(0)
    text = metrics.exposition().decode()
    assert 'vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 2.0' in text
    assert 'vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="m"} 6.0' in text
    assert 'vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 2.0' in text


def test_length_buckets_follow_vllms_1_2_5_rule() -> None:
    assert one_two_five_buckets(100) == (1, 2, 5, 10, 20, 50, 100)
    assert one_two_five_buckets(4) == (1, 2)


def test_created_is_the_given_time_for_every_counter_and_histogram() -> None:
    metrics = VllmMetrics("m", max_model_len=100, spec_tokens=2, created=1234.5)
    families = list(text_string_to_metric_families(metrics.exposition().decode()))
    created = [s for f in families for s in f.samples if s.name.endswith("_created")]
    timed = {f.name for f in families if f.type in ("counter", "histogram")}
    assert len(timed) > 20  # spec-decode ones included
    assert {s.name for s in created} == {f"{name}_created" for name in timed}
    assert {s.value for s in created} == {1234.5}


def test_a_stand_in_builds_its_series_when_first_used_dated_at_its_creation() -> None:
    before = time.time()
    stub = StubVllm(["vllm", "serve", "nvidia/some-model", "--max-model-len", "100"])
    after = time.time()
    assert "metrics" not in vars(stub)  # nothing built by the constructor
    text = stub.metrics.exposition().decode()
    created = [
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name.endswith("_created")
    ]
    assert created
    assert all(before <= value <= after for value in created)
