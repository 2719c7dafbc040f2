"""Metric definitions and the one object the controller updates them through.

Naming follows Prometheus conventions: a ``nemotron_`` prefix, the unit in the name
(``_seconds``, ``_bytes``, ``_tokens``, ``_ratio``), ``_total`` for counters. Per-deployment
series carry ``namespace``, ``name`` and ``gpu_product`` only — bounded by the number of
deployments — plus, on a few, one label with a small fixed set of values (``component`` of the
planned memory, ``quantile`` of TTFT, ``figure`` of the plan check). ``forget`` removes every
series of a deleted deployment. docs/observability.md lists each metric with its meaning.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Histogram

from nemotron_operator.api.plan import Plan
from nemotron_operator.observe.plan_check import PlanCheckResult
from nemotron_operator.observe.throughput import ThroughputFigures
from nemotron_operator.telemetry.compact_series import CompactSeries, GaugeFamily, HistogramFamily

DEPLOYMENT_LABELS = ("namespace", "name", "gpu_product")
# A serving pod's start: seconds for a small model on a warm cache to hours for a cold 550 GB one.
STARTUP_BUCKETS = (
    5.0,
    15.0,
    30.0,
    60.0,
    120.0,
    300.0,
    600.0,
    900.0,
    1200.0,
    1800.0,
    3600.0,
    7200.0,
)
RECONCILE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

Key = tuple[str, str]  # (namespace, name)


@dataclass(frozen=True)
class PlanFigures:
    """The plan's figures for the metrics (from ``status.plan``)."""

    gpus_per_replica: int
    total_gpus: int
    memory_bytes: Mapping[str, int]  # component → bytes per GPU
    max_concurrency: float
    kv_cache_tokens: int
    kv_cache_blocks: int

    @classmethod
    def from_plan(cls, plan: Plan) -> PlanFigures:
        per_gpu = plan.per_gpu
        memory = {
            "usable": per_gpu.usable_bytes,
            "weights": per_gpu.weights_bytes,
            "reserve": per_gpu.reserve_bytes,
            "kvPool": max(0, per_gpu.kv_pool_bytes),
        }
        memory.update({f"reserve.{c.name}": c.bytes for c in per_gpu.reserve_components})
        return cls(
            gpus_per_replica=plan.gpus_per_replica,
            total_gpus=plan.total_gpus,
            memory_bytes=memory,
            max_concurrency=plan.max_concurrency,
            kv_cache_tokens=plan.kv_cache_tokens,
            kv_cache_blocks=plan.kv_cache_blocks,
        )


@dataclass(frozen=True)
class DeploymentFigures:
    """Readiness of one deployment."""

    desired_replicas: int
    ready_replicas: int
    ready: bool
    seconds_to_first_ready: float | None = None


class OperatorMetrics:
    """Every metric the operator exports, in its own registry (the controller serves it)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self._gauges: list[GaugeFamily] = []
        d = DEPLOYMENT_LABELS
        self._gauge("nemotron_deployment_replicas_desired", "Replicas the spec asks for.", d)
        self._gauge("nemotron_deployment_replicas_ready", "Serving replicas that are Ready.", d)
        self._gauge("nemotron_deployment_ready", "1 when every desired replica is Ready.", d)
        self._gauge(
            "nemotron_deployment_time_to_ready_seconds",
            "Seconds from the object's creation to its first Ready.",
            d,
        )
        self._gauge("nemotron_deployment_gpus_per_replica", "GPUs per replica (plan).", d)
        self._gauge("nemotron_deployment_gpus", "GPUs for all replicas (plan).", d)
        self._gauge(
            "nemotron_deployment_planned_memory_bytes",
            "Planned bytes per GPU by component (usable, weights, reserve, kvPool, reserve.*).",
            (*d, "component"),
        )
        self._gauge(
            "nemotron_deployment_planned_max_concurrency",
            "Full-length sequences a replica holds at once (plan).",
            d,
        )
        self._gauge(
            "nemotron_deployment_planned_kv_cache_tokens", "KV cache capacity per replica.", d
        )
        self._gauge(
            "nemotron_deployment_planned_kv_cache_blocks", "KV cache blocks per replica.", d
        )
        self._gauge(
            "nemotron_deployment_generation_tokens_per_second", "Output tokens/s, all pods.", d
        )
        self._gauge("nemotron_deployment_prompt_tokens_per_second", "Prompt tokens/s, all pods.", d)
        self._gauge("nemotron_deployment_requests_running", "Requests running, all pods.", d)
        self._gauge("nemotron_deployment_requests_waiting", "Requests waiting, all pods.", d)
        self._gauge("nemotron_deployment_kv_cache_usage_ratio", "Mean KV cache usage (0-1).", d)
        self._gauge("nemotron_deployment_mtp_acceptance_ratio", "Accepted / drafted MTP tokens.", d)
        self._gauge(
            "nemotron_deployment_mtp_mean_accepted_tokens",
            "Tokens per MTP verification step (1 + accepted / drafts).",
            d,
        )
        self._gauge(
            "nemotron_deployment_ttft_seconds",
            "Time to first token over the last scrape interval, by quantile (0.5, 0.95).",
            (*d, "quantile"),
        )
        self._gauge("nemotron_deployment_pods_sampled", "Serving pods whose /metrics answered.", d)
        self._gauge(
            "nemotron_deployment_pods_unresponsive", "Ready serving pods that did not answer.", d
        )
        self._gauge(
            "nemotron_deployment_observed_kv_cache_blocks",
            "KV cache blocks vLLM allocated (vllm:cache_config_info num_gpu_blocks).",
            d,
        )
        self._gauge(
            "nemotron_deployment_observed_kv_cache_tokens", "KV cache tokens vLLM reports.", d
        )
        self._gauge(
            "nemotron_deployment_observed_max_concurrency", "Max concurrency vLLM reports.", d
        )
        self._gauge(
            "nemotron_deployment_plan_deviation_ratio",
            "Observed / planned − 1 by figure (kvCacheBlocks, kvCacheTokens, maxConcurrency).",
            (*d, "figure"),
        )
        self._gauge("nemotron_deployment_plan_accurate", "1 unless vLLM got materially less.", d)
        # Per-deployment series: plain numbers, exposed by a collector (compact_series.py).
        self._series = CompactSeries(
            DEPLOYMENT_LABELS,
            self._gauges,
            HistogramFamily(
                "nemotron_deployment_startup_seconds",
                "Seconds a serving pod's start took, by phase (scheduling, downloading, loading, "
                "verifying) and total (creation to Ready); one observation per pod start.",
                "phase",
                STARTUP_BUCKETS,
            ),
        )
        self.registry.register(self._series)
        self.reconciles = Counter(
            "nemotron_operator_reconciles",
            "Reconciles by result: ok, unchanged (skipped: its inputs had not changed), "
            "infeasible, gone, finalizing, finalized, error.",
            ("result",),
            registry=self.registry,
        )
        self.reconcile_duration = Histogram(
            "nemotron_operator_reconcile_duration_seconds",
            "Seconds one reconcile took.",
            buckets=RECONCILE_BUCKETS,
            registry=self.registry,
        )
        self.api_requests = Counter(
            "nemotron_operator_api_requests",
            "Kubernetes API requests by verb and HTTP status code.",
            ("verb", "code"),
            registry=self.registry,
        )
        self.watch_restarts = Counter(
            "nemotron_operator_watch_restarts",
            "The operator's own watch streams re-opened, by resource (kopf's are not counted).",
            ("resource",),
            registry=self.registry,
        )
        self.verification_checks = Counter(
            "nemotron_operator_verification_checks",
            "Behavioural checks of serving pods before they take traffic, by check (chat, "
            "reasoning, tool-call, json-schema; all: the whole check of a pod) and result "
            "(passed, failed). Which deployment and pod: the Verified condition and its Event.",
            ("check", "result"),
            registry=self.registry,
        )
        self.scrapes = Counter(
            "nemotron_operator_pod_scrapes",
            "Scrapes of serving pods' /metrics by result (ok, error, timeout).",
            ("result",),
            registry=self.registry,
        )

    def _gauge(self, name: str, documentation: str, labels: tuple[str, ...]) -> None:
        self._gauges.append(GaugeFamily(name, documentation, labels[len(DEPLOYMENT_LABELS) :]))

    # Per-deployment series -------------------------------------------------------------------

    def _set(self, key: Key, gpu_product: str, name: str, value: float, *extra: str) -> None:
        self._series.set(key, gpu_product, name, value, *extra)

    def _clear(self, key: Key, name: str, *extra: str) -> None:
        self._series.clear(key, name, *extra)

    def set_readiness(
        self, namespace: str, name: str, gpu_product: str, figures: DeploymentFigures
    ) -> None:
        key = (namespace, name)
        self._set(
            key, gpu_product, "nemotron_deployment_replicas_desired", figures.desired_replicas
        )
        self._set(key, gpu_product, "nemotron_deployment_replicas_ready", figures.ready_replicas)
        self._set(key, gpu_product, "nemotron_deployment_ready", 1.0 if figures.ready else 0.0)
        if figures.seconds_to_first_ready is not None:
            self._set(
                key,
                gpu_product,
                "nemotron_deployment_time_to_ready_seconds",
                figures.seconds_to_first_ready,
            )

    def set_plan(self, namespace: str, name: str, gpu_product: str, plan: PlanFigures) -> None:
        key = (namespace, name)
        self._set(key, gpu_product, "nemotron_deployment_gpus_per_replica", plan.gpus_per_replica)
        self._set(key, gpu_product, "nemotron_deployment_gpus", plan.total_gpus)
        for component, size in sorted(plan.memory_bytes.items()):
            self._set(key, gpu_product, "nemotron_deployment_planned_memory_bytes", size, component)
        self._set(
            key, gpu_product, "nemotron_deployment_planned_max_concurrency", plan.max_concurrency
        )
        self._set(
            key, gpu_product, "nemotron_deployment_planned_kv_cache_tokens", plan.kv_cache_tokens
        )
        self._set(
            key, gpu_product, "nemotron_deployment_planned_kv_cache_blocks", plan.kv_cache_blocks
        )

    def set_throughput(
        self, namespace: str, name: str, gpu_product: str, figures: ThroughputFigures
    ) -> None:
        key = (namespace, name)
        values: dict[str, float | None] = {
            "nemotron_deployment_generation_tokens_per_second": (
                figures.generation_tokens_per_second
            ),
            "nemotron_deployment_prompt_tokens_per_second": figures.prompt_tokens_per_second,
            "nemotron_deployment_requests_running": figures.requests_running,
            "nemotron_deployment_requests_waiting": figures.requests_waiting,
            "nemotron_deployment_kv_cache_usage_ratio": figures.kv_cache_usage,
            "nemotron_deployment_mtp_acceptance_ratio": figures.mtp_acceptance_rate,
            "nemotron_deployment_mtp_mean_accepted_tokens": figures.mtp_mean_accepted_length,
            "nemotron_deployment_pods_sampled": figures.pods_sampled,
            "nemotron_deployment_pods_unresponsive": len(figures.unresponsive_pods),
        }
        for metric, value in values.items():
            if value is None:
                self._clear(key, metric)  # no drafts this interval: no ratio, not a stale one
            else:
                self._set(key, gpu_product, metric, value)
        ttft = {"0.5": figures.ttft_seconds_p50, "0.95": figures.ttft_seconds_p95}
        for quantile, seconds in ttft.items():
            if seconds is None:
                self._clear(key, "nemotron_deployment_ttft_seconds", quantile)
            else:
                self._set(key, gpu_product, "nemotron_deployment_ttft_seconds", seconds, quantile)

    def set_plan_check(
        self, namespace: str, name: str, gpu_product: str, result: PlanCheckResult
    ) -> None:
        key = (namespace, name)
        observed = result.observed
        self._set(
            key, gpu_product, "nemotron_deployment_observed_kv_cache_blocks",
            observed.kv_cache_blocks,
        )  # fmt: skip
        self._set(
            key, gpu_product, "nemotron_deployment_observed_kv_cache_tokens",
            observed.kv_cache_tokens,
        )  # fmt: skip
        self._set(
            key, gpu_product, "nemotron_deployment_observed_max_concurrency",
            observed.max_concurrency,
        )  # fmt: skip
        for deviation in result.deviations:
            self._set(
                key, gpu_product, "nemotron_deployment_plan_deviation_ratio",
                deviation.deviation, deviation.figure,
            )  # fmt: skip
        self._set(
            key, gpu_product, "nemotron_deployment_plan_accurate", 1.0 if result.accurate else 0.0
        )

    def startup_observed(self, key: Key, gpu_product: str, phase: str, seconds: float) -> None:
        self._series.observe(key, gpu_product, phase, seconds)

    def forget(self, namespace: str, name: str) -> None:
        """Remove every series of a deleted deployment."""
        self._series.forget((namespace, name))

    def deployments(self) -> frozenset[Key]:
        return self._series.deployments()

    # The operator itself ---------------------------------------------------------------------

    def reconcile_finished(self, result: str, seconds: float) -> None:
        self.reconciles.labels(result).inc()
        self.reconcile_duration.observe(seconds)

    def api_request(self, verb: str, code: int) -> None:
        self.api_requests.labels(verb.lower(), str(code)).inc()

    def watch_restarted(self, resource: str) -> None:
        self.watch_restarts.labels(resource).inc()

    def watch_opened(self, resource: str) -> None:
        """The resource's restarts series exists from its first stream, at 0: a labelled
        counter has no series until created, and the dashboard's watch-restarts panel (increase
        over the range) showed no data for a healthy operator in a real Prometheus."""
        self.watch_restarts.labels(resource)

    def scrape_finished(self, result: str) -> None:
        self.scrapes.labels(result).inc()

    def verification_finished(self, check: str, result: str) -> None:
        self.verification_checks.labels(check, result).inc()
