"""The operator's own Prometheus metrics (effectful: a prometheus_client registry)."""

from nemotron_operator.telemetry.metrics import (
    DeploymentFigures,
    OperatorMetrics,
    PlanFigures,
)

__all__ = ["DeploymentFigures", "OperatorMetrics", "PlanFigures"]
