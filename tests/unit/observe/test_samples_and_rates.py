"""vLLM's exposition → samples → rates, checked against the stand-in vLLM's own registry."""

from __future__ import annotations

import math

import pytest
from prometheus_client.parser import text_string_to_metric_families

from nemotron_operator.observe import samples as s
from nemotron_operator.observe.samples import MetricsParseError, PodSample, parse_pod_metrics
from nemotron_operator.observe.throughput import aggregate, counter_increase, histogram_quantile
from nemotron_sim.vllm.metrics import VllmMetrics


def stand_in(spec_tokens: int = 3) -> VllmMetrics:
    return VllmMetrics("model", max_model_len=4096, spec_tokens=spec_tokens)


def scrape(metrics: VllmMetrics, at: float) -> PodSample:
    metrics.mark_changed()
    return parse_pod_metrics(metrics.exposition().decode(), at)


def test_parse_reads_the_series_the_operator_uses() -> None:
    metrics = stand_in()
    metrics.generation_tokens.inc(120)
    metrics.prompt_tokens.inc(40)
    metrics.num_requests_running.set(3)
    metrics.num_requests_waiting.set(2)
    metrics.kv_cache_usage_perc.set(0.25)
    assert metrics.spec_decode is not None
    metrics.spec_decode.record_draft(2)
    metrics.time_to_first_token.observe(0.05)
    sample = scrape(metrics, 10.0)
    assert sample.counters[s.GENERATION_TOKENS] == 120
    assert sample.counters[s.PROMPT_TOKENS] == 40
    assert sample.counters[s.SPEC_DRAFT_TOKENS] == 3
    assert sample.counters[s.SPEC_ACCEPTED_TOKENS] == 2
    assert sample.gauges == {
        s.REQUESTS_RUNNING: 3,
        s.REQUESTS_WAITING: 2,
        s.KV_CACHE_USAGE: 0.25,
    }
    assert sample.spec_decode
    assert s.GENERATION_TOKENS in sample.created  # prometheus_client exposes _created
    assert dict(sample.ttft_buckets)[0.06] == 1
    assert dict(sample.ttft_buckets)[math.inf] == 1
    assert sample.cache_config is None  # not published before the engine is built


def test_engines_add_up_and_usage_is_their_mean() -> None:
    text = "\n".join(
        [
            "# TYPE vllm:num_requests_waiting gauge",
            'vllm:num_requests_waiting{engine="0",model_name="m"} 2',
            'vllm:num_requests_waiting{engine="1",model_name="m"} 3',
            "# TYPE vllm:kv_cache_usage_perc gauge",
            'vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.2',
            'vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.6',
            "# TYPE vllm:generation_tokens_total counter",
            'vllm:generation_tokens_total{engine="0",model_name="m"} 10',
            'vllm:generation_tokens_total{engine="1",model_name="m"} 5',
            "",
        ]
    )
    sample = parse_pod_metrics(text, 0.0)
    assert sample.gauges[s.REQUESTS_WAITING] == 5
    assert sample.gauges[s.KV_CACHE_USAGE] == pytest.approx(0.4)
    assert sample.counters[s.GENERATION_TOKENS] == 15
    assert not sample.spec_decode


def test_garbage_is_refused() -> None:
    # A broken line of a series the operator reads, and a body that is not an exposition at all
    # (a web page or JSON from the wrong port), are refused with the line that gave it away.
    with pytest.raises(MetricsParseError):
        parse_pod_metrics('vllm:num_requests_running{engine="0 1\n', 0.0)
    for body in ("<!DOCTYPE html>\n<html></html>\n", '{"status": "ok"}\n'):
        with pytest.raises(MetricsParseError, match="line 1"):
            parse_pod_metrics(body, 0.0)


def test_series_the_operator_does_not_read_are_never_parsed() -> None:
    # Only the used series are split into name, labels and value: a value in another series that
    # a parser would refuse does not cost the sample, and the used series read the same.
    metrics = stand_in()
    metrics.generation_tokens.inc(7)
    metrics.time_to_first_token.observe(0.3)
    metrics.publish_cache_config({"block_size": "16"})
    metrics.mark_changed()
    text = metrics.exposition().decode()
    names = {name for name, _, _ in s.used_samples(text)}
    assert names == {
        *s.USED_SERIES,
        *(f"{name}_created" for name in s.COUNTERS),
    }
    # The stand-in publishes vLLM's whole set of latency histograms: most lines are not read.
    assert len(s.used_samples(text)) < len(text.splitlines()) / 3
    unread = 'vllm:request_success_total{engine="0"} not-a-number\n'
    assert parse_pod_metrics(unread + text, 1.0) == parse_pod_metrics(text, 1.0)
    sample = parse_pod_metrics(text, 1.0)
    assert sample.counters[s.GENERATION_TOKENS] == 7
    assert sample.cache_config is not None
    assert sample.cache_config.integer("block_size") == 16


def test_the_used_series_read_as_prometheus_client_reads_them() -> None:
    # prometheus_client's own parser is the reference for the text format: escapes in label
    # values, `}` and `,` inside quotes, a timestamp, blanks and comments between samples.
    metrics = stand_in()
    metrics.generation_tokens.inc(11)
    metrics.prompt_tokens.inc(3)
    metrics.time_to_first_token.observe(0.07)
    metrics.publish_cache_config(
        {"block_size": "16", "odd": 'a "quoted" \\ back}slash,\nnew line', "empty": ""}
    )
    metrics.mark_changed()
    text = metrics.exposition().decode() + (
        "\n# a comment\n  \n"
        'vllm:num_requests_waiting{engine="1",model_name="m}{,"} 4 1700000000000\n'
    )
    reference = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name in {name for name, _, _ in s.used_samples(text)}
    }
    ours = {
        (name, tuple(sorted(s.labels_of(label_text).items()))): value
        for name, label_text, value in s.used_samples(text)
    }
    assert ours == reference
    sample = parse_pod_metrics(text, 1.0)
    assert sample.gauges[s.REQUESTS_WAITING] == 4
    assert sample.cache_config is not None
    assert sample.cache_config.labels["odd"] == 'a "quoted" \\ back}slash,\nnew line'
    assert sample.cache_config.labels["empty"] == ""


@pytest.mark.parametrize(
    "line",
    [
        'vllm:num_requests_running{engine="0"}',  # no value
        'vllm:num_requests_running{engine="0"} 1 2 3',  # more than a timestamp
        "vllm:num_requests_running{engine=0} 1",  # an unquoted label value
        'vllm:time_to_first_token_seconds_bucket{engine="0"} 1',  # a bucket without `le`
        'vllm:time_to_first_token_seconds_bucket{le="x"} 1',  # a bound that is no number
        'vllm:num_requests_running{engine="0"} one',  # a value that is no number
    ],
)
def test_a_broken_line_of_a_used_series_is_refused_with_its_number(line: str) -> None:
    text = f"# TYPE vllm:num_requests_running gauge\nvllm:num_requests_waiting 0\n{line}\n"
    with pytest.raises(MetricsParseError, match=r"line 3: |without `le`|le=.x."):
        parse_pod_metrics(text, 0.0)


def test_a_counter_typed_without_its_total_suffix_still_counts() -> None:
    # The text format lets a counter's family and samples go without `_total`; prometheus_client
    # then names the samples with it, so the TYPE line must reach the parser with them.
    text = '# TYPE vllm:generation_tokens counter\nvllm:generation_tokens{engine="0"} 9\n'
    assert parse_pod_metrics(text, 0.0).counters[s.GENERATION_TOKENS] == 9


def test_rates_over_the_interval_and_mtp_figures() -> None:
    metrics = stand_in()
    before = scrape(metrics, 100.0)
    metrics.generation_tokens.inc(500)
    metrics.prompt_tokens.inc(200)
    assert metrics.spec_decode is not None
    for accepted in (3, 1, 2, 0):  # 4 drafts of 3 tokens, 6 accepted
        metrics.spec_decode.record_draft(accepted)
    after = scrape(metrics, 110.0)
    figures = aggregate({"p": before}, {"p": after})
    assert figures.generation_tokens_per_second == pytest.approx(50.0)
    assert figures.prompt_tokens_per_second == pytest.approx(20.0)
    assert figures.mtp_acceptance_rate == pytest.approx(6 / 12)
    assert figures.mtp_mean_accepted_length == pytest.approx(1 + 6 / 4)
    assert figures.pods_with_rates == 1


def test_a_restarted_pod_never_gives_a_negative_rate() -> None:
    old, new = stand_in(), stand_in()
    old.generation_tokens.inc(10_000)
    before = scrape(old, 0.0)
    new.generation_tokens.inc(300)  # the restarted vLLM counts from zero again
    after = scrape(new, 10.0)
    figures = aggregate({"p": before}, {"p": after})
    assert figures.generation_tokens_per_second == pytest.approx(30.0)


def test_a_restart_seen_through_created_even_when_the_counter_climbed_past() -> None:
    before = PodSample(0.0, {s.GENERATION_TOKENS: 100.0}, {s.GENERATION_TOKENS: 1.0}, {})
    after = PodSample(10.0, {s.GENERATION_TOKENS: 150.0}, {s.GENERATION_TOKENS: 5.0}, {})
    figures = aggregate({"p": before}, {"p": after})
    assert figures.generation_tokens_per_second == pytest.approx(15.0)  # 150 new, not 50


def test_counter_increase() -> None:
    assert counter_increase(10, 25) == 15
    assert counter_increase(25, 10) == 10
    assert counter_increase(10, 25, restarted=True) == 25


def test_pods_add_up_a_new_pod_gives_no_rate_yet_and_silent_pods_are_listed() -> None:
    a, b = stand_in(0), stand_in(0)
    first = {"a": scrape(a, 0.0)}
    a.generation_tokens.inc(100)
    a.num_requests_waiting.set(4)
    b.num_requests_waiting.set(1)
    a.kv_cache_usage_perc.set(0.5)
    second = {"a": scrape(a, 10.0), "b": scrape(b, 10.0)}
    figures = aggregate(first, second, unresponsive=["c", "0"])
    assert figures.generation_tokens_per_second == pytest.approx(10.0)
    assert figures.requests_waiting == 5
    assert figures.kv_cache_usage == pytest.approx(0.25)
    assert figures.mtp_acceptance_rate is None  # no speculative decoding: no ratio
    assert (figures.pods_sampled, figures.pods_with_rates) == (2, 1)
    assert figures.unresponsive_pods == ("0", "c")


def test_ttft_quantiles_come_from_the_interval_not_the_lifetime() -> None:
    metrics = stand_in(0)
    for _ in range(100):
        metrics.time_to_first_token.observe(5.0)  # old, slow requests
    before = scrape(metrics, 0.0)
    for _ in range(100):
        metrics.time_to_first_token.observe(0.03)  # in the (0.02, 0.04] bucket
    figures = aggregate({"p": before}, {"p": scrape(metrics, 10.0)})
    assert figures.ttft_seconds_p50 == pytest.approx(0.03)
    assert figures.ttft_seconds_p95 == pytest.approx(0.02 + 0.02 * 0.95)


@pytest.mark.parametrize(
    ("quantile", "buckets", "expected"),
    [
        # Prometheus's own examples: linear inside the bucket, 0 as the lowest bucket's start.
        (0.5, [(1.0, 10.0), (2.0, 20.0), (math.inf, 20.0)], 1.0),
        (0.75, [(1.0, 10.0), (2.0, 20.0), (math.inf, 20.0)], 1.5),
        (0.25, [(1.0, 10.0), (2.0, 20.0), (math.inf, 20.0)], 0.5),
        # A rank in the +Inf bucket: the highest finite bound.
        (0.99, [(1.0, 10.0), (2.0, 20.0), (math.inf, 40.0)], 2.0),
        (0.5, [(1.0, 0.0), (math.inf, 0.0)], None),  # empty
        (0.5, [(1.0, 3.0)], None),  # no +Inf bucket
    ],
)
def test_histogram_quantile_matches_prometheus(
    quantile: float, buckets: list[tuple[float, float]], expected: float | None
) -> None:
    assert histogram_quantile(quantile, buckets) == expected


def test_a_refusal_quotes_the_offending_line_alone_with_its_number() -> None:
    text = "vllm:num_requests_waiting 0\n<p> not metrics\nvllm:num_requests_running 1\n"
    with pytest.raises(MetricsParseError) as refused:
        parse_pod_metrics(text, 0.0)
    assert str(refused.value).endswith("line 2: '<p> not metrics'")
    broken = 'vllm:num_requests_waiting 0\nvllm:num_requests_running{engine="0"} one\n'
    with pytest.raises(MetricsParseError) as refused:
        parse_pod_metrics(broken, 0.0)
    assert str(refused.value).endswith("""line 2: 'vllm:num_requests_running{engine="0"} one'""")
    unquoted = "vllm:num_requests_waiting 0\nvllm:num_requests_running{engine=0} 1\n"
    with pytest.raises(MetricsParseError) as refused:
        parse_pod_metrics(unquoted, 0.0)
    assert str(refused.value).endswith("line 2: 'vllm:num_requests_running{engine=0} 1'")


def test_a_sample_without_labels_and_a_last_line_without_a_newline() -> None:
    text = "vllm:num_requests_waiting 2\nvllm:num_requests_running 3"
    assert s.used_samples(text) == [
        ("vllm:num_requests_waiting", "", 2.0),
        ("vllm:num_requests_running", "", 3.0),
    ]


def test_a_refusal_counts_an_empty_first_line_and_cuts_a_long_line_at_60() -> None:
    with pytest.raises(MetricsParseError) as refused:
        parse_pod_metrics("\n<p>\n", 0.0)
    assert "line 2: '<p>'" in str(refused.value)
    long = "<" + "x" * 100
    with pytest.raises(MetricsParseError) as refused:
        parse_pod_metrics(long + "\n", 0.0)
    assert str(refused.value).endswith(f"line 1: {long[:60]!r}")


def test_an_unknown_escape_in_a_label_is_kept_as_written() -> None:
    assert s.labels_of('{a="x\\qy",b="1\\n2"}') == {"a": "x\\qy", "b": "1\n2"}


def test_engines_histograms_add_up_and_the_latest_start_is_the_pods() -> None:
    text = "\n".join(
        [
            'vllm:time_to_first_token_seconds_bucket{engine="0",le="0.1"} 3',
            'vllm:time_to_first_token_seconds_bucket{engine="1",le="0.1"} 4',
            'vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf"} 5',
            'vllm:time_to_first_token_seconds_bucket{engine="1",le="+Inf"} 6',
            'vllm:generation_tokens_created{engine="0"} 1700000009',
            'vllm:generation_tokens_created{engine="1"} 1700000001',
            "",
        ]
    )
    sample = parse_pod_metrics(text, 0.0)
    assert dict(sample.ttft_buckets) == {0.1: 7.0, math.inf: 11.0}
    assert sample.created[s.GENERATION_TOKENS] == 1700000009
