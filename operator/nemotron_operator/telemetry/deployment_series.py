"""The per-deployment readiness and plan series, from the status each reconcile computed; removed
once the deployment is gone."""

from __future__ import annotations

from nemotron_operator.api import NemotronDeploymentStatus
from nemotron_operator.kube.timestamps import seconds_between
from nemotron_operator.status import startup
from nemotron_operator.telemetry.metrics import (
    DeploymentFigures,
    Key,
    OperatorMetrics,
    PlanFigures,
)


class DeploymentSeries:
    def __init__(self, metrics: OperatorMetrics) -> None:
        self.metrics = metrics
        self._timed: set[Key] = set()  # time to first Ready recorded (once per deployment)
        # Per deployment, the uids of the Ready pods whose start was observed (or that were Ready
        # already when the operator first saw them: their start is not observed again).
        self._started: dict[Key, set[str]] = {}

    def started(self, key: Key, gpu_product: str, found: startup.Startup | None) -> None:
        """One ``nemotron_deployment_startup_seconds`` observation per phase and pod start."""
        if found is None:
            return
        ready = {p.uid: p for p in found.pods if p.phase == startup.READY and p.uid}
        seen = self._started.get(key)
        if seen is not None:
            for uid, pod in ready.items():
                if uid in seen or pod.total_seconds is None:
                    continue
                for phase, seconds in pod.seconds.items():
                    self.metrics.startup_observed(key, gpu_product, phase.lower(), seconds)
                self.metrics.startup_observed(key, gpu_product, "total", pod.total_seconds)
        self._started[key] = set(ready)

    def reconciled(
        self,
        key: Key,
        status: NemotronDeploymentStatus | None,
        created: str | None,
        found: startup.Startup | None = None,
    ) -> None:
        """Readiness and plan series from the status the reconcile computed (``created``: the
        object's creationTimestamp, for the time to first Ready), and the start-up histogram
        from the serving pods' starts (``found``)."""
        if status is None or status.plan is None:
            return
        product = status.plan.gpu_product
        self.started(key, product, found)
        ready_condition = next((c for c in status.conditions if c.type == "Ready"), None)
        is_ready = ready_condition is not None and ready_condition.status == "True"
        seconds = None
        if ready_condition is not None and is_ready and key not in self._timed:
            seconds = seconds_between(created, ready_condition.last_transition_time)
            if seconds is not None:
                self._timed.add(key)
        self.metrics.set_readiness(
            key[0],
            key[1],
            product,
            DeploymentFigures(
                desired_replicas=status.replicas or 0,
                ready_replicas=status.ready_replicas or 0,
                ready=is_ready,
                seconds_to_first_ready=seconds,
            ),
        )
        self.metrics.set_plan(key[0], key[1], product, PlanFigures.from_plan(status.plan))

    def forget(self, key: Key) -> None:
        """The deployment is gone: no series."""
        self._timed.discard(key)
        self._started.pop(key, None)
        self.metrics.forget(*key)
