"""The operator's metric definitions: names, labels, values, and a deleted deployment's series
going away."""

from __future__ import annotations

import dataclasses

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from nemotron_operator.status import startup
from nemotron_operator.telemetry import OperatorMetrics
from nemotron_operator.telemetry.deployment_series import DeploymentSeries
from tests.unit.status import startup_pods as starting
from tests.unit.telemetry.populated import FIGURES, populate


def series(metrics: OperatorMetrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = generate_latest(metrics.registry).decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def deployment_series(metrics: OperatorMetrics, name: str) -> dict[str, float]:
    return {
        metric + str(dict(labels)): value
        for (metric, labels), value in series(metrics).items()
        if ("name", name) in labels
    }


def test_every_deployment_series_carries_bounded_labels_and_follows_the_naming_rules() -> None:
    metrics = OperatorMetrics()
    populate(metrics, "a")
    metrics.reconcile_finished("success", 0.2)
    metrics.api_request("PATCH", 200)
    metrics.watch_restarted("nemotrondeployments")
    metrics.scrape_finished("timeout")
    metrics.verification_finished("reasoning", "failed")
    metrics.startup_observed(("ai", "a"), "NVIDIA-H200", "loading", 42.0)
    found = series(metrics)
    extra_labels = {"component", "quantile", "figure", "phase", "le"}  # le: histogram buckets
    for name, labels in found:
        assert name.startswith("nemotron_"), name
        keys = {k for k, _ in labels}
        if name.startswith("nemotron_deployment_"):
            assert {"namespace", "name", "gpu_product"} <= keys, name
            assert keys - {"namespace", "name", "gpu_product"} <= extra_labels, name
    names = {name for name, _ in found}
    for counter in (
        "nemotron_operator_reconciles_total",
        "nemotron_operator_api_requests_total",
        "nemotron_operator_watch_restarts_total",
        "nemotron_operator_pod_scrapes_total",
        "nemotron_operator_verification_checks_total",
    ):
        assert counter in names
    assert "nemotron_operator_reconcile_duration_seconds_bucket" in names


def test_values_are_the_figures_given() -> None:
    metrics = OperatorMetrics()
    plan = populate(metrics, "a")
    got = series(metrics)
    base = (("gpu_product", "NVIDIA-H200"), ("name", "a"), ("namespace", "ai"))
    assert got[("nemotron_deployment_generation_tokens_per_second", base)] == 812.5
    assert got[("nemotron_deployment_mtp_acceptance_ratio", base)] == 0.66
    assert got[("nemotron_deployment_replicas_desired", base)] == 2
    assert got[("nemotron_deployment_ready", base)] == 0
    assert got[("nemotron_deployment_pods_unresponsive", base)] == 1
    assert got[("nemotron_deployment_planned_kv_cache_blocks", base)] == 6000
    assert got[("nemotron_deployment_observed_kv_cache_blocks", base)] == 5400
    assert got[("nemotron_deployment_plan_accurate", base)] == 0
    weights = ("nemotron_deployment_planned_memory_bytes", (("component", "weights"), *base))
    assert got[weights] == plan.per_gpu.weights_bytes
    deviation = (
        "nemotron_deployment_plan_deviation_ratio",
        (("figure", "kvCacheBlocks"), *base),
    )
    assert round(got[deviation], 6) == -0.1
    p95 = tuple(sorted((*base, ("quantile", "0.95"))))
    assert got[("nemotron_deployment_ttft_seconds", p95)] == 0.5


def test_a_deleted_deployment_leaves_no_series_and_others_stay() -> None:
    metrics = OperatorMetrics()
    populate(metrics, "a")
    populate(metrics, "b")
    before_b = deployment_series(metrics, "b")
    metrics.forget("ai", "a")
    assert deployment_series(metrics, "a") == {}
    assert deployment_series(metrics, "b") == before_b
    metrics.forget("ai", "a")  # twice is harmless
    assert metrics.deployments() == frozenset({("ai", "b")})


def test_a_figure_that_disappears_is_removed_not_left_stale() -> None:
    metrics = OperatorMetrics()
    populate(metrics, "a")
    quiet = dataclasses.replace(FIGURES, mtp_acceptance_rate=None, ttft_seconds_p95=None)
    metrics.set_throughput("ai", "a", "NVIDIA-H200", quiet)
    left = deployment_series(metrics, "a")
    assert not any(key.startswith("nemotron_deployment_mtp_acceptance_ratio{") for key in left)
    assert not any("'0.95'" in key for key in left)
    assert any("'0.5'" in key for key in left)


def test_a_new_gpu_product_replaces_the_old_series() -> None:
    metrics = OperatorMetrics()
    populate(metrics, "a", "NVIDIA-H200")
    populate(metrics, "a", "NVIDIA-B200")
    products = {key for key in deployment_series(metrics, "a") if "NVIDIA-H200" in key}
    assert products == set()


def test_each_pod_start_is_observed_once_by_phase_and_goes_with_its_deployment() -> None:
    metrics = OperatorMetrics()
    tracked = DeploymentSeries(metrics)
    key, product = ("ai", "a"), "NVIDIA-H200"
    ready_first = starting.ready("a-0", "u0")
    # Ready before the operator saw the deployment: its start is not observed (a restart of the
    # operator must not count every running pod again).
    tracked.started(key, product, startup.assess_startup([ready_first]))
    assert not any("startup" in k for k in deployment_series(metrics, "a"))
    second = starting.ready("a-1", "u1", gate=True)
    for _ in range(2):  # the same start seen by two reconciles counts once
        tracked.started(key, product, startup.assess_startup([ready_first, second]))
    found = deployment_series(metrics, "a")
    labels = "'gpu_product': 'NVIDIA-H200', 'name': 'a', 'namespace': 'ai', 'phase': '{}'"
    for phase, seconds in (("loading", 60.0), ("verifying", 6.0), ("total", 100.0)):
        assert found["nemotron_deployment_startup_seconds_sum{" + labels.format(phase) + "}"] == (
            seconds
        )
        assert found["nemotron_deployment_startup_seconds_count{" + labels.format(phase) + "}"] == 1
    tracked.forget(key)
    assert deployment_series(metrics, "a") == {}


def test_a_watched_resource_has_its_restarts_series_at_zero_from_its_first_stream() -> None:
    """A labelled counter has no series until a child exists: without this the dashboard's
    watch-restarts panel returned no data from a real Prometheus for a healthy operator."""
    metrics = OperatorMetrics()
    assert not [s for s in series(metrics) if s[0] == "nemotron_operator_watch_restarts_total"]
    metrics.watch_opened("pods")
    assert ("nemotron_operator_watch_restarts_total", (("resource", "pods"),)) in series(metrics)
    value = metrics.registry.get_sample_value(
        "nemotron_operator_watch_restarts_total", {"resource": "pods"}
    )
    assert value == 0
    metrics.watch_restarted("pods")
    assert (
        metrics.registry.get_sample_value(
            "nemotron_operator_watch_restarts_total", {"resource": "pods"}
        )
        == 1
    )
