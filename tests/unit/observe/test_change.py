"""The meaningful-change rule that keeps a busy deployment from rewriting status every tick."""

from __future__ import annotations

import dataclasses

import pytest

from nemotron_operator.observe.change import changed_figures, meaningful_change, to_status
from nemotron_operator.observe.throughput import ThroughputFigures

BASE = ThroughputFigures(
    generation_tokens_per_second=1000.0,
    prompt_tokens_per_second=200.0,
    requests_running=20,
    requests_waiting=4,
    kv_cache_usage=0.40,
    mtp_acceptance_rate=0.70,
    mtp_mean_accepted_length=2.1,
    ttft_seconds_p50=0.20,
    ttft_seconds_p95=0.80,
    pods_sampled=2,
    pods_with_rates=2,
    unresponsive_pods=(),
)
OLD = to_status(BASE, "2026-12-02T10:00:00Z")


def status_with(**changes: object) -> object:
    return to_status(dataclasses.replace(BASE, **changes), "2026-12-02T10:00:30Z")


def test_the_first_figures_are_always_written() -> None:
    assert changed_figures(None, OLD) == ("throughput",)


def test_noise_and_a_new_sampled_at_write_nothing() -> None:
    new = status_with(
        generation_tokens_per_second=1090.0,  # +9 %
        prompt_tokens_per_second=200.9,
        requests_running=22,  # +10 %, not more
        kv_cache_usage=0.44,
        mtp_acceptance_rate=0.715,
        ttft_seconds_p50=0.21,
    )
    assert not meaningful_change(OLD, new)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("change", "figure"),
    [
        ({"generation_tokens_per_second": 1101.0}, "generation_tokens_per_second"),
        ({"prompt_tokens_per_second": 0.0}, "prompt_tokens_per_second"),
        ({"requests_waiting": 5}, "requests_waiting"),  # a count under 10: any change
        ({"kv_cache_usage": 0.46}, "kv_cache_usage"),
        ({"mtp_acceptance_rate": None}, "mtp_acceptance_rate"),
        ({"mtp_mean_accepted_length": 2.2}, "mtp_mean_accepted_length"),
        ({"ttft_seconds_p95": 0.95}, "ttft_seconds_p95"),
        ({"unresponsive_pods": ("pod-1",)}, "unresponsive_pods"),
        ({"pods_sampled": 1}, "pods_sampled"),
    ],
)
def test_a_meaningful_change_names_its_figure(change: dict[str, object], figure: str) -> None:
    new = status_with(**change)
    assert changed_figures(OLD, new) == (figure,)  # type: ignore[arg-type]
    assert meaningful_change(OLD, new)  # type: ignore[arg-type]


def test_idle_to_idle_stays_quiet() -> None:
    idle = dataclasses.replace(
        BASE,
        generation_tokens_per_second=0.0,
        prompt_tokens_per_second=0.0,
        requests_running=0,
        requests_waiting=0,
        mtp_acceptance_rate=None,
        ttft_seconds_p50=None,
    )
    before = to_status(idle, "2026-12-02T10:00:00Z")
    after = to_status(dataclasses.replace(idle, generation_tokens_per_second=0.4), "later")
    assert not meaningful_change(before, after)


def test_status_figures_are_rounded() -> None:
    shown = to_status(
        dataclasses.replace(BASE, generation_tokens_per_second=12.3456, kv_cache_usage=0.123456),
        "2026-12-02T10:00:00Z",
    )
    assert (shown.generation_tokens_per_second, shown.kv_cache_usage) == (12.3, 0.123)


def test_status_rounds_each_figure_to_what_a_reader_needs() -> None:
    shown = to_status(
        dataclasses.replace(
            BASE,
            generation_tokens_per_second=1234.5678,
            prompt_tokens_per_second=98.7654,
            kv_cache_usage=0.123456,
            mtp_acceptance_rate=0.654321,
            mtp_mean_accepted_length=2.345678,
            ttft_seconds_p50=0.1234567,
            ttft_seconds_p95=0.9876543,
        ),
        "t",
    )
    assert (shown.generation_tokens_per_second, shown.prompt_tokens_per_second) == (1234.6, 98.8)
    assert shown.kv_cache_usage == 0.123
    assert (shown.mtp_acceptance_rate, shown.mtp_mean_accepted_length) == (0.654, 2.346)
    assert (shown.ttft_seconds_p50, shown.ttft_seconds_p95) == (0.1235, 0.9877)
