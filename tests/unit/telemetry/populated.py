"""The operator's metrics filled for one deployment (metrics and dashboard tests)."""

from __future__ import annotations

from nemotron_operator.api import Plan
from nemotron_operator.observe.plan_check import compare, observed_cache
from nemotron_operator.observe.samples import CacheConfigInfo
from nemotron_operator.observe.throughput import ThroughputFigures
from nemotron_operator.telemetry import DeploymentFigures, OperatorMetrics, PlanFigures
from tests.status_objects import full_status

FIGURES = ThroughputFigures(
    generation_tokens_per_second=812.5,
    prompt_tokens_per_second=90.0,
    requests_running=7,
    requests_waiting=3,
    kv_cache_usage=0.42,
    mtp_acceptance_rate=0.66,
    mtp_mean_accepted_length=2.3,
    ttft_seconds_p50=0.12,
    ttft_seconds_p95=0.5,
    pods_sampled=2,
    pods_with_rates=2,
    unresponsive_pods=("b-1",),
)


def populate(metrics: OperatorMetrics, name: str, product: str = "NVIDIA-H200") -> Plan:
    plan = Plan.model_validate(full_status()["plan"] | {"kvCacheBlocks": 6000})
    metrics.set_readiness("ai", name, product, DeploymentFigures(2, 1, False, 412.0))
    metrics.set_plan("ai", name, product, PlanFigures.from_plan(plan))
    metrics.set_throughput("ai", name, product, FIGURES)
    observed = observed_cache("p", CacheConfigInfo({"num_gpu_blocks": "5400"}), plan)
    assert observed is not None
    result = compare(plan, [observed])
    assert result is not None
    metrics.set_plan_check("ai", name, product, result)
    return plan
