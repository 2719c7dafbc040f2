"""``spec.autoscaling``: the operator scales replicas from the vLLM figures it scrapes, or
(``provider: KEDA``) renders a KEDA ScaledObject that does.

No Prometheus adapter is needed for the built-in autoscaler: the same scrape that fills
``status.throughput`` drives the decision (``nemotron_operator.autoscale``; rules in
docs/observability.md). With ``provider: KEDA`` the operator renders a ``keda.sh/v1alpha1``
ScaledObject on the NemotronDeployment's scale subresource with the Prometheus trigger the user
names (``render/scaledobject.py``) and does not scale itself: one writer of ``spec.replicas``.
Users who prefer their own HPA leave this unset and target the scale subresource instead.
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
# With KEDA the stabilization windows become the HPA's (KEDA creates one); kube-apiserver refuses
# a window over an hour (k8s.io/kubernetes v1.37.2 pkg/apis/autoscaling/validation:
# MaxStabilizationWindowSeconds = 3600).
MAX_HPA_STABILIZATION_SECONDS = 3600

TargetMetric = Literal["requestsWaitingPerReplica", "kvCacheUsage"]
AutoscalingProvider = Literal["Operator", "KEDA"]


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


class PrometheusTrigger(ApiModel):
    """KEDA's ``prometheus`` trigger (keda v2.20.2 pkg/scalers/prometheus_scaler.go): the query
    KEDA runs against the user's Prometheus, and the value it holds the result near."""

    server_address: str = Field(
        min_length=8,
        max_length=2048,
        pattern=r"^https?://\S+$",
        description="Prometheus' address, e.g. http://prometheus.monitoring.svc:9090 (KEDA's "
        "serverAddress).",
    )
    query: str = Field(
        min_length=1,
        max_length=4096,
        description="PromQL returning one value: the demand (KEDA's query). It must measure "
        "requests while no replica runs (at zero replicas vLLM exports nothing), e.g. a "
        "gateway's or ingress's request rate for this deployment.",
    )
    threshold: float = Field(
        gt=0,
        le=100_000,
        description="The value per replica KEDA holds the query near (its threshold; metric "
        "type AverageValue).",
    )
    activation_threshold: float | None = Field(
        default=None,
        ge=0,
        le=100_000,
        description="KEDA wakes the deployment from zero when the query exceeds this, and "
        "counts it idle while it does not (its activationThreshold; KEDA's default 0).",
    )


class KedaSpec(ApiModel):
    """How KEDA scales the NemotronDeployment (provider KEDA only)."""

    prometheus: PrometheusTrigger = Field(description="The Prometheus trigger KEDA polls.")
    polling_interval_seconds: int | None = Field(
        default=None,
        ge=1,
        le=3600,
        description="How often KEDA runs the query (its pollingInterval; KEDA's default 30).",
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
            cel(
                "self.provider != 'KEDA' || has(self.keda)",
                "autoscaling.keda is required when autoscaling.provider is KEDA: name the "
                "Prometheus trigger (keda.prometheus.serverAddress, query and threshold)",
                ".keda",
            ),
            cel(
                "!has(self.keda) || self.provider == 'KEDA'",
                "autoscaling.keda is set but autoscaling.provider is Operator: set provider: "
                "KEDA or remove autoscaling.keda",
                ".provider",
            ),
            cel(
                "self.provider != 'KEDA' || (self.target.metric == 'requestsWaitingPerReplica' "
                f"&& self.target.value == {DEFAULT_WAITING_PER_REPLICA!r})",
                "autoscaling.target is the built-in autoscaler's figure; with provider KEDA the "
                "trigger's autoscaling.keda.prometheus.threshold is the target: remove "
                "autoscaling.target",
                ".target",
            ),
            cel(
                f"self.provider != 'KEDA' || self.scaleDownDelaySeconds <= "
                f"{MAX_HPA_STABILIZATION_SECONDS}",
                "with provider KEDA autoscaling.scaleDownDelaySeconds is the HPA's scale-down "
                f"stabilization window, at most {MAX_HPA_STABILIZATION_SECONDS} seconds in "
                "Kubernetes: lower it",
                ".scaleDownDelaySeconds",
            ),
        )
    }

    provider: AutoscalingProvider = Field(
        default="Operator",
        description="Operator: the operator's own autoscaler sets spec.replicas from the vLLM "
        "figures it scrapes. KEDA: the operator renders a KEDA ScaledObject on this "
        "deployment's scale subresource with the Prometheus trigger in autoscaling.keda (KEDA "
        "must be installed) and does not scale itself.",
    )

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
        description="How long the figure must stay above target before adding replicas (with "
        "provider KEDA: the HPA's scale-up stabilization window).",
    )
    scale_down_delay_seconds: int = Field(
        default=DEFAULT_SCALE_DOWN_DELAY_SECONDS,
        ge=0,
        le=86400,
        description="How long the figure must stay below target (with one replica fewer) "
        "before removing a replica (with provider KEDA: the HPA's scale-down stabilization "
        "window, at most 3600).",
    )
    idle_seconds: int | None = Field(
        default=None,
        ge=10,
        le=604800,
        description="With minReplicas 0: scale to zero after this long without a request (none "
        "running or waiting and vLLM's token counters unchanged on every ready replica). "
        f"Default {DEFAULT_IDLE_SECONDS}. Only with minReplicas 0. With provider KEDA: "
        "KEDA's cooldownPeriod (how long the trigger stays inactive before zero).",
    )
    keda: KedaSpec | None = Field(
        default=None, description="The KEDA ScaledObject's trigger (provider KEDA only)."
    )

    @property
    def built_in(self) -> bool:
        """The operator's own autoscaler sets spec.replicas (provider Operator)."""
        return self.provider == "Operator"

    @property
    def idle_window(self) -> int | None:
        """Seconds without a request before scaling to zero; None: never to zero."""
        if self.min_replicas != 0:
            return None
        return self.idle_seconds if self.idle_seconds is not None else DEFAULT_IDLE_SECONDS
