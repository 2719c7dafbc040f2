"""The compact per-deployment series expose exactly what prometheus_client's own labelled Gauge
and Histogram would, for any sequence of updates."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, Gauge, Histogram, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from nemotron_operator.telemetry.compact_series import (
    CompactSeries,
    GaugeFamily,
    HistogramFamily,
)

BASE = ("namespace", "name", "gpu_product")
GAUGES = (
    GaugeFamily("t_plain", "A plain gauge."),
    GaugeFamily("t_by_component", "A gauge with a component.", ("component",)),
)
HISTOGRAM = HistogramFamily("t_seconds", "A histogram.", "phase", (5.0, 60.0, 3600.0))
KEYS = st.sampled_from([("a", "x"), ("a", "y"), ("b", "x")])
PRODUCTS = st.sampled_from(["NVIDIA-H200", "NVIDIA-B200"])
UPDATE = st.one_of(
    st.tuples(st.just("set"), KEYS, PRODUCTS, st.sampled_from(["", "weights", "kvPool"]),
              st.floats(-1e12, 1e12, allow_nan=False)),
    st.tuples(st.just("clear"), KEYS, PRODUCTS, st.sampled_from(["", "weights"]), st.just(0.0)),
    st.tuples(st.just("observe"), KEYS, PRODUCTS, st.sampled_from(["loading", "total"]),
              st.sampled_from([0.0, 5.0, 5.1, 60.0, 3600.0, 3600.5, 1e6])),
    st.tuples(st.just("forget"), KEYS, PRODUCTS, st.just(""), st.just(0.0)),
)  # fmt: skip


class Reference:
    """The same series with prometheus_client's labelled metrics (what the operator used)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.gauges = {
            g.name: Gauge(g.name, g.documentation, (*BASE, *g.extra_labels), registry=self.registry)
            for g in GAUGES
        }
        self.histogram = Histogram(
            HISTOGRAM.name,
            HISTOGRAM.documentation,
            (*BASE, HISTOGRAM.extra_label),
            buckets=HISTOGRAM.buckets,
            registry=self.registry,
        )
        self.product: dict[tuple[str, str], str] = {}
        self.set_series: dict[tuple[str, str], set[tuple[str, tuple[str, ...]]]] = {}
        self.observed: dict[tuple[str, str], set[str]] = {}

    def ensure(self, key: tuple[str, str], product: str) -> None:
        if self.product.get(key, product) != product:
            self.forget(key)
        self.product[key] = product

    def forget(self, key: tuple[str, str]) -> None:
        product = self.product.pop(key, None)
        for metric, extra in self.set_series.pop(key, set()):
            self.gauges[metric].remove(*key, product, *extra)
        for phase in self.observed.pop(key, set()):
            self.histogram.remove(*key, product, phase)

    def apply(self, op: str, key: tuple[str, str], product: str, label: str, value: float) -> None:
        metric = "t_by_component" if label else "t_plain"
        extra = (label,) if label else ()
        if op == "set":
            self.ensure(key, product)
            self.gauges[metric].labels(*key, product, *extra).set(value)
            self.set_series.setdefault(key, set()).add((metric, extra))
        elif op == "clear" and (metric, extra) in self.set_series.get(key, set()):
            self.gauges[metric].remove(*key, self.product[key], *extra)
            self.set_series[key].discard((metric, extra))
        elif op == "observe":
            self.ensure(key, product)
            self.histogram.labels(*key, product, label).observe(value)
            self.observed.setdefault(key, set()).add(label)
        elif op == "forget":
            self.forget(key)


Update = tuple[str, tuple[str, str], str, str, float]  # op, key, product, label, value


def apply(series: CompactSeries, update: Update) -> None:
    op, key, product, label, value = update
    metric = "t_by_component" if label else "t_plain"
    extra = (label,) if label else ()
    if op == "set":
        series.set(key, product, metric, value, *extra)
    elif op == "clear":
        series.clear(key, metric, *extra)
    elif op == "observe":
        series.observe(key, product, label, value)
    elif op == "forget":
        series.forget(key)


Sample = tuple[str, tuple[tuple[str, str], ...], float]


def samples(registry: CollectorRegistry) -> tuple[list[str], set[Sample]]:
    text = generate_latest(registry).decode()
    families = list(text_string_to_metric_families(text))
    return (
        [
            f"{f.name} {f.type} {f.documentation}"
            for f in families
            if not f.name.endswith("_created")
        ],
        {
            (s.name, tuple(sorted(s.labels.items())), s.value)
            for f in families
            for s in f.samples
            if not s.name.endswith("_created")
        },
    )


def compact() -> tuple[CompactSeries, CollectorRegistry]:
    registry = CollectorRegistry()
    series = CompactSeries(BASE, GAUGES, HISTOGRAM)
    registry.register(series)
    return series, registry


@given(st.lists(UPDATE, max_size=30))
def test_the_exposition_is_prometheus_clients_for_any_updates(
    updates: list[Update],
) -> None:
    series, registry = compact()
    reference = Reference()
    for update in updates:
        apply(series, update)
        reference.apply(*update)
    assert samples(registry) == samples(reference.registry)
    assert series.deployments() == frozenset(reference.product)


def test_a_value_lands_in_the_first_bucket_whose_bound_holds_it() -> None:
    series, registry = compact()
    for seconds in (5.0, 5.1, 4000.0):
        series.observe(("a", "x"), "NVIDIA-H200", "total", seconds)
    found = {(name, dict(labels).get("le")): value for name, labels, value in samples(registry)[1]}
    assert found[("t_seconds_bucket", "5.0")] == 1
    assert found[("t_seconds_bucket", "60.0")] == 2
    assert found[("t_seconds_bucket", "3600.0")] == 2
    assert found[("t_seconds_bucket", "+Inf")] == 3
    assert found[("t_seconds_count", None)] == 3
    assert found[("t_seconds_sum", None)] == 4010.1


def test_a_metric_given_the_wrong_labels_is_refused() -> None:
    series, _ = compact()
    with pytest.raises(ValueError, match="t_by_component takes the labels"):
        series.set(("a", "x"), "NVIDIA-H200", "t_by_component", 1.0)
