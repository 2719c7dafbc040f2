"""Per-deployment series kept as plain numbers and exposed by a collector when scraped.

prometheus_client's labelled ``Gauge`` and ``Histogram`` keep one child object per series, each
with its own lock and value objects: about 1 KB a gauge series and 3 KB a histogram series. At
45 series per deployment that was 42 MiB of the operator's heap for 1,000 deployments
(tracemalloc; docs/benchmarks.md, run 2). Here one deployment's series are one dict of floats
(and, for the start-up histogram, one list of bucket counts per phase): about 4 KB a deployment.
The exposition is the same text: the same names, help, types, labels and values; a histogram
series has no ``_created`` sample.

The controller updates these from the event loop and ``/metrics`` reads them from the same
loop, so no lock is needed (a thread that wrote here would need one).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from prometheus_client.metrics_core import GaugeMetricFamily, HistogramMetricFamily, Metric

Key = tuple[str, str]  # (namespace, name)
SeriesKey = tuple[str, tuple[str, ...]]  # (metric, values of its extra labels)


@dataclass(frozen=True)
class GaugeFamily:
    name: str
    documentation: str
    extra_labels: tuple[str, ...] = ()  # after namespace, name, gpu_product


@dataclass(frozen=True)
class HistogramFamily:
    name: str
    documentation: str
    extra_label: str
    buckets: tuple[float, ...]  # upper bounds, ascending; +Inf is added


@dataclass
class _Counts:
    buckets: list[int]  # per bucket (not cumulative), the last one +Inf
    total: float = 0.0


@dataclass
class _Deployment:
    gpu_product: str
    values: dict[SeriesKey, float] = field(default_factory=dict)
    observed: dict[str, _Counts] = field(default_factory=dict)  # histogram label value → counts


class CompactSeries:
    """The per-deployment gauges and one histogram, for a ``CollectorRegistry``."""

    def __init__(
        self,
        base_labels: tuple[str, ...],
        gauges: Sequence[GaugeFamily],
        histogram: HistogramFamily,
    ) -> None:
        self.base_labels = base_labels
        self.gauges = {g.name: g for g in gauges}
        self.histogram = histogram
        self._deployments: dict[Key, _Deployment] = {}
        self._keys: dict[SeriesKey, SeriesKey] = {}  # one shared tuple per distinct series key

    # -- updates ------------------------------------------------------------------------------
    def gpu_product(self, key: Key) -> str | None:
        found = self._deployments.get(key)
        return None if found is None else found.gpu_product

    def ensure(self, key: Key, gpu_product: str) -> None:
        """Start keeping ``key``'s series under ``gpu_product``; another product drops the old
        ones (a re-planned deployment's series would otherwise linger under the old label)."""
        found = self._deployments.get(key)
        if found is None or found.gpu_product != gpu_product:
            self._deployments[key] = _Deployment(gpu_product)

    def set(self, key: Key, gpu_product: str, metric: str, value: float, *extra: str) -> None:
        family = self.gauges[metric]
        if len(extra) != len(family.extra_labels):
            raise ValueError(f"{metric} takes the labels {family.extra_labels}, got {extra}")
        self.ensure(key, gpu_product)
        series = (metric, extra)
        self._deployments[key].values[self._keys.setdefault(series, series)] = float(value)

    def clear(self, key: Key, metric: str, *extra: str) -> None:
        found = self._deployments.get(key)
        if found is not None:
            found.values.pop((metric, extra), None)

    def observe(self, key: Key, gpu_product: str, label: str, value: float) -> None:
        self.ensure(key, gpu_product)
        observed = self._deployments[key].observed
        counts = observed.get(label)
        if counts is None:
            counts = observed[label] = _Counts([0] * (len(self.histogram.buckets) + 1))
        index = next(
            (i for i, bound in enumerate(self.histogram.buckets) if value <= bound),
            len(self.histogram.buckets),
        )
        counts.buckets[index] += 1
        counts.total += value

    def forget(self, key: Key) -> bool:
        """Drop every series of ``key``; False when there were none."""
        return self._deployments.pop(key, None) is not None

    def deployments(self) -> frozenset[Key]:
        return frozenset(self._deployments)

    # -- the collector protocol -----------------------------------------------------------------
    def describe(self) -> Iterable[Metric]:
        return list(self._families())

    def collect(self) -> Iterable[Metric]:
        families = {f.name: f for f in self._families()}
        histogram = families[self.histogram.name]
        assert isinstance(histogram, HistogramMetricFamily)
        bounds = [_le(b) for b in (*self.histogram.buckets, math.inf)]
        for (namespace, name), deployment in list(self._deployments.items()):
            base = (namespace, name, deployment.gpu_product)
            for (metric, extra), value in list(deployment.values.items()):
                family = families[metric]
                assert isinstance(family, GaugeMetricFamily)
                family.add_metric([*base, *extra], value)
            for label, counts in list(deployment.observed.items()):
                cumulative, running = [], 0
                for bound, count in zip(bounds, counts.buckets, strict=True):
                    running += count
                    cumulative.append((bound, float(running)))
                histogram.add_metric([*base, label], cumulative, counts.total)
        return list(families.values())

    def _families(self) -> Iterator[Metric]:
        for gauge in self.gauges.values():
            yield GaugeMetricFamily(
                gauge.name, gauge.documentation, labels=[*self.base_labels, *gauge.extra_labels]
            )
        yield HistogramMetricFamily(
            self.histogram.name,
            self.histogram.documentation,
            labels=[*self.base_labels, self.histogram.extra_label],
        )


def _le(bound: float) -> str:
    """A bucket's ``le`` as prometheus_client writes it (``5.0``, ``+Inf``)."""
    return "+Inf" if bound == math.inf else repr(float(bound))
