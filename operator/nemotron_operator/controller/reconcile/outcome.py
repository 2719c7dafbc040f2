"""What one reconcile read (``ReadState``) and what it did (``Outcome``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nemotron_operator.api import NemotronDeployment, NemotronDeploymentStatus
from nemotron_operator.controller.decide.desired import Planned
from nemotron_operator.render import names as n
from nemotron_operator.sizing import GpuInventory
from nemotron_operator.status import Problem, startup


@dataclass
class Outcome:
    """What one reconcile did (for logs, metrics and tests)."""

    result: str  # "ok", "infeasible", "unchanged" (skipped), "gone", "finalizing", "finalized"
    applied: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    status_written: bool = False
    status: NemotronDeploymentStatus | None = None
    retry_after: float | None = None  # re-queue sooner than the resync (e.g. finalizing)
    created: str | None = None  # metadata.creationTimestamp (time-to-ready metric)
    backoff: float | None = None  # re-queue no sooner than this (a refused apply)
    startup: startup.Startup | None = None  # the serving pods' starts (the start-up histogram)


@dataclass(frozen=True)
class ReadState:
    """What one reconcile read and decided before touching the children."""

    raw: dict[str, Any]
    names: n.Names
    previous: NemotronDeploymentStatus | None  # the status stored, as the models read it
    deployment: NemotronDeployment | None  # None: the spec does not parse
    inventory: GpuInventory
    planned: Planned | None
    problem: Problem | None  # why there is no plan

    @property
    def key(self) -> tuple[str, str]:
        return self.names.namespace, self.names.deployment

    @property
    def karpenter(self) -> bool:
        spec = self.deployment.spec if self.deployment is not None else None
        return spec is not None and spec.node_pool.provisioner == "Karpenter"
