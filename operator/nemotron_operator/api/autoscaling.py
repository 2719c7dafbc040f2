"""``spec.autoscaling``: the operator scales replicas from the vLLM figures it scrapes.

No Prometheus adapter is needed: the same scrape that fills ``status.throughput`` drives the
decision (``nemotron_operator.observe.autoscale``; rules in docs/observability.md). Users who
prefer HPA or KEDA leave this unset and target the scale subresource instead.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from nemotron_operator.api.base import ApiModel, cel, validations

MAX_AUTOSCALE_REPLICAS = 64  # spec.replicas' own bound
DEFAULT_WAITING_PER_REPLICA = 4.0
DEFAULT_SCALE_UP_STABILIZATION_SECONDS = 60
# A replica takes minutes to load 100+ GB of weights; giving one back only after ten quiet minutes
# avoids paying that again for a short lull.
DEFAULT_SCALE_DOWN_DELAY_SECONDS = 600
# minReplicas 0: give the GPUs back after half an hour without a request (waking costs a start).
DEFAULT_IDLE_SECONDS = 1800

TargetMetric = Literal["requestsWaitingPerReplica", "kvCacheUsage"]


class AutoscalingTarget(ApiModel):
    """The figure the autoscaler holds near a value."""

    model_config = ApiModel.model_config | {
        "json_schema_extra": validations(
            cel(
                "self.metric != 'kvCacheUsage' || self.value <= 1.0",
                "autoscaling.target.value is a fraction (0-1] for kvCacheUsage, e.g. 0.8",
                ".value",
            ),
        )
    }

    metric: TargetMetric = Field(
        default="requestsWaitingPerReplica",
        description="requestsWaitingPerReplica (vllm:num_requests_waiting per ready replica) or "
        "kvCacheUsage (mean vllm:kv_cache_usage_perc, 0-1).",
    )
    value: float = Field(
        default=DEFAULT_WAITING_PER_REPLICA,
        gt=0,
        le=10000,
        description="Target value: waiting requests per replica, or a KV usage fraction.",
    )


class AutoscalingSpec(ApiModel):
    """Load-based scaling between minReplicas and maxReplicas."""

    model_config = ApiModel.model_config | {
        "json_schema_extra": validations(
            cel(
                "self.minReplicas <= self.maxReplicas",
                "autoscaling.minReplicas must not exceed autoscaling.maxReplicas",
                ".minReplicas",
            ),
            cel(
                "!has(self.idleSeconds) || self.minReplicas == 0",
                "autoscaling.idleSeconds applies only with autoscaling.minReplicas: 0 (scale to "
                "zero): remove idleSeconds or set minReplicas to 0",
                ".idleSeconds",
            ),
        )
    }

    min_replicas: int = Field(
        default=1,
        ge=0,
        le=MAX_AUTOSCALE_REPLICAS,
        description="Fewest replicas. 0: scale to zero after idleSeconds without a request "
        "(phase Idle; the plan, the claims and the caches are kept); a scale-up of the scale "
        "subresource (kubectl scale, an HPA, KEDA) wakes it.",
    )
    max_replicas: int = Field(ge=1, le=MAX_AUTOSCALE_REPLICAS, description="Most replicas.")
    target: AutoscalingTarget = Field(
        default_factory=AutoscalingTarget, description="The figure to hold near a value."
    )
    scale_up_stabilization_seconds: int = Field(
        default=DEFAULT_SCALE_UP_STABILIZATION_SECONDS,
        ge=0,
        le=3600,
        description="How long the figure must stay above target before adding replicas.",
    )
    scale_down_delay_seconds: int = Field(
        default=DEFAULT_SCALE_DOWN_DELAY_SECONDS,
        ge=0,
        le=86400,
        description="How long the figure must stay below target (with one replica fewer) "
        "before removing a replica.",
    )
    idle_seconds: int | None = Field(
        default=None,
        ge=10,
        le=604800,
        description="With minReplicas 0: scale to zero after this long without a request (none "
        "running or waiting and vLLM's token counters unchanged on every ready replica). "
        f"Default {DEFAULT_IDLE_SECONDS}. Only with minReplicas 0.",
    )

    @property
    def idle_window(self) -> int | None:
        """Seconds without a request before scaling to zero; None: never to zero."""
        if self.min_replicas != 0:
            return None
        return self.idle_seconds if self.idle_seconds is not None else DEFAULT_IDLE_SECONDS
