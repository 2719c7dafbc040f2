"""``Parts``: the per-deployment parts the ``Controller`` builds and the ``Reconciler`` consults
(each a ``DeploymentPart``, ``controller/part.py``)."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

from nemotron_operator.controller.decide.rollout import Rollouts
from nemotron_operator.controller.part import DeploymentPart
from nemotron_operator.controller.pods.adapters import AdapterSync
from nemotron_operator.controller.pods.autoscaler import Autoscaler
from nemotron_operator.controller.pods.scraper import Scraper
from nemotron_operator.controller.pods.verifier import Verifier
from nemotron_operator.controller.queue import Key
from nemotron_operator.controller.reconcile.progress_hold import ProgressHold


@dataclass(frozen=True)
class Parts:
    scraper: Scraper  # /metrics of the serving pods: throughput, the plan check
    autoscaler: Autoscaler  # spec.replicas from the scraped figures
    verifier: Verifier  # the behavioural check before a pod takes traffic (its readiness gate)
    adapters: AdapterSync  # LoRA adapters loaded at run time
    rollouts: Rollouts  # spec.rollout: the progress deadlines
    progress: ProgressHold  # status writes of progress steps that may still wait

    def all(self) -> tuple[DeploymentPart, ...]:
        return (
            self.scraper, self.autoscaler, self.verifier, self.adapters, self.rollouts,
            self.progress,
        )  # fmt: skip

    def revisions(self, key: Key) -> tuple[Hashable, ...]:
        """What every part adds to ``key``'s status, as versions (for the fingerprint)."""
        return tuple(part.revision(key) for part in self.all())

    def forget(self, key: Key) -> None:
        for part in self.all():
            part.forget(key)
