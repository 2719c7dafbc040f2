"""``PlanMemo``: each deployment's last plan and render, reused while their inputs are equal.

A deployment's plan and children are a pure function of what ``desired.parse`` reads of its
object (``desired.parsed_part``: its spec and identity, not its status), the GPU nodes it plans
on (their products and sizes, not what is in use: ``InventoryReader.planning_view``), whether the
cluster serves DRA and LeaderWorkerSets, and the operator's options, fixed for its life
(``desired.plan_and_render``). The reconciles that follow a deployment's pods (scheduled,
started, Ready, every new metrics sample) see the same inputs: from converged to Ready, 1,000
deployments spent 7-10 % of the operator's CPU samples in ``plan_and_render`` computing again
what they had (docs/benchmarks.md, full run 3 and the quick runs after it; 0 with the memo).
The inputs are compared by value, so a kept result is only ever the one the same call would
compute.

Kept small, because it is kept for every deployment (the RSS targets are 200 MiB at 1,000 and
400 at 3,000): the inputs as the JSON text of the parsed part (~0.3 KiB where the parsed model is
~11), the rendered children as JSON text (8.5 KiB where the dicts are ~20; parsed again on
each use, ~15 µs), and one plan per distinct spec, shared (a plan reads nothing but the spec and
the nodes). A change of the nodes forgets everything kept. Callers build new objects from a
result and never change it (``stamped``, the rollout and download gates copy what they alter).
"""

from __future__ import annotations

import asyncio
import weakref
from dataclasses import dataclass
from typing import Any

from nemotron_operator.api import NemotronDeployment
from nemotron_operator.controller.decide import desired
from nemotron_operator.controller.decide.desired import Planned
from nemotron_operator.controller.queue import Key
from nemotron_operator.controller.settings import OperatorConfig
from nemotron_operator.kube import json_text
from nemotron_operator.sizing import GpuInventory, PlanResult
from nemotron_operator.status import Problem

Result = Planned | Problem


@dataclass(frozen=True)
class _Kept:
    inputs: tuple[bytes, bool, bool]  # the parsed part's JSON, DRA served, LWS served
    found: PlanResult | Problem
    children: bytes  # the rendered children, JSON ("" for a Problem)

    def result(self) -> Result:
        if isinstance(self.found, Problem):
            return self.found
        return Planned(self.found, json_text.loads(self.children))


def _text(value: Any) -> bytes:
    return json_text.dumps(value, sort_keys=True)


class PlanMemo:
    def __init__(self) -> None:
        self._kept: dict[Key, _Kept] = {}
        # One plan per distinct spec (by its JSON), as long as a kept result holds it.
        self._plans: weakref.WeakValueDictionary[bytes, PlanResult] = weakref.WeakValueDictionary()
        self._nodes: GpuInventory | None = None  # what every kept result was planned on
        self.hits = 0  # results returned without computing (the tests read it)

    def __len__(self) -> int:
        return len(self._kept)

    def forget(self, key: Key) -> None:
        self._kept.pop(key, None)

    async def plan(
        self,
        key: Key,
        raw: dict[str, Any],
        deployment: NemotronDeployment,
        nodes: GpuInventory,
        *,
        config: OperatorConfig,
        dra_served: bool,
        leader_worker_set_served: bool,
    ) -> Result:
        """``desired.plan_and_render`` of these inputs (``deployment`` parsed from ``raw``),
        or its result kept for equal ones."""
        if nodes is not self._nodes and nodes != self._nodes:
            self._kept.clear()
            self._plans.clear()
            self._nodes = nodes
        part = desired.parsed_part(raw)
        inputs = (_text(part), dra_served, leader_worker_set_served)
        kept = self._kept.get(key)
        if kept is not None and kept.inputs == inputs:
            self.hits += 1
            return kept.result()
        # Planning and rendering are pure CPU work (tens of milliseconds, more for large
        # searches): off the event loop, so watches, renewals and probes keep their pace.
        found = await asyncio.to_thread(
            desired.plan_and_render,
            deployment,
            nodes,
            allow_remote_code=config.allow_remote_code,
            # The namespace the operator runs in (POD_NAMESPACE in its pod).
            operator_namespace=config.lease_namespace,
            dra=(config.dra, dra_served),
            leader_worker_set_served=leader_worker_set_served,
        )
        if isinstance(found, Problem):
            self._kept[key] = _Kept(inputs, found, b"")
        else:
            plan = self._plans.setdefault(_text(part["spec"]), found.result)
            self._kept[key] = _Kept(inputs, plan, json_text.dumps(found.desired))
        return found
