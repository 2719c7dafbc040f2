"""``PlanMemo``: each deployment's last plan and render, reused while their inputs are equal.

A deployment's plan and children are a pure function of its parsed object, the GPU nodes it plans
on (their products and sizes, not what is in use: ``InventoryReader.planning_view``) and the
operator's options (``desired.plan_and_render``). The reconciles that follow its
pods' steps (scheduled, started, Ready) and every other deployment's writes see the same inputs:
from converged to Ready, 1,000 deployments spent 22.9 % of the operator's CPU planning and
rendering again what they had (docs/benchmarks.md, full run 3). The inputs are compared by value,
so a kept result is only ever the one the same call would compute; one result per deployment,
forgotten with it. Callers build new objects from the result and never change it (``stamped``,
the rollout and download gates copy what they alter).
"""

from __future__ import annotations

import asyncio

from nemotron_operator.api import NemotronDeployment
from nemotron_operator.controller.decide import desired
from nemotron_operator.controller.decide.desired import Planned
from nemotron_operator.controller.queue import Key
from nemotron_operator.controller.settings import OperatorConfig
from nemotron_operator.sizing import GpuInventory
from nemotron_operator.status import Problem

Result = Planned | Problem


class PlanMemo:
    def __init__(self) -> None:
        self._kept: dict[Key, tuple[object, Result]] = {}
        self.hits = 0
        self.misses = 0

    def get(self, key: Key, inputs: object) -> Result | None:
        """The result kept for ``key`` if it was computed from ``inputs`` (equal by value)."""
        kept = self._kept.get(key)
        if kept is not None and kept[0] == inputs:
            self.hits += 1
            return kept[1]
        self.misses += 1
        return None

    def keep(self, key: Key, inputs: object, result: Result) -> Result:
        self._kept[key] = (inputs, result)
        return result

    def forget(self, key: Key) -> None:
        self._kept.pop(key, None)

    async def plan(
        self,
        key: Key,
        deployment: NemotronDeployment,
        nodes: GpuInventory,
        *,
        config: OperatorConfig,
        dra_served: bool,
        leader_worker_set_served: bool,
    ) -> Result:
        """``desired.plan_and_render`` of these inputs, or its result kept for equal ones."""
        inputs = (deployment, nodes, dra_served, leader_worker_set_served)
        found = self.get(key, inputs)
        if found is not None:
            return found
        # Planning and rendering are pure CPU work (tens of milliseconds, more for large
        # searches): off the event loop, so watches, renewals and probes keep their pace.
        result = await asyncio.to_thread(
            desired.plan_and_render,
            deployment,
            nodes,
            allow_remote_code=config.allow_remote_code,
            # The namespace the operator runs in (POD_NAMESPACE in its pod).
            operator_namespace=config.lease_namespace,
            dra=(config.dra, dra_served),
            leader_worker_set_served=leader_worker_set_served,
        )
        return self.keep(key, inputs, result)
