"""PodDisruptionBudget status, as the disruption controller computes it (no eviction API)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from nemotron_sim.apiserver.selectors import selector_to_string
from nemotron_sim.apiserver.store import Store
from nemotron_sim.controllers.kinds import PDBS, PODS, STATEFULSETS
from nemotron_sim.controllers.runtime import WorkQueue, now_rfc3339
from nemotron_sim.controllers.selector_index import SelectorIndex
from nemotron_sim.controllers.statefulset import is_ready, is_terminating
from nemotron_sim.kubeapi.resources import WatchEvent

Key = tuple[str, str]


def _scaled(value: Any, total: int) -> int:
    """An int-or-percent against ``total``, rounding up (intstr.GetScaledValueFromIntOrPercent)."""
    if isinstance(value, str) and value.endswith("%"):
        return math.ceil(int(value[:-1]) * total / 100)
    return int(value)


def pdb_status(
    pdb: Mapping[str, Any], pods: list[dict[str, Any]], now: str, scale: int | None = None
) -> dict[str, Any]:
    """``scale``: the replicas the pods' controllers want; as in the disruption controller it
    is the expected count for ``maxUnavailable`` and percentage ``minAvailable``, so a pod that
    is missing counts as unavailable."""
    spec = pdb.get("spec") or {}
    live = [p for p in pods if not is_terminating(p)]
    min_available = spec.get("minAvailable")
    by_count = isinstance(min_available, int) or scale is None
    expected = len(live) if by_count or scale is None else scale
    healthy = sum(1 for p in live if is_ready(p))
    if spec.get("minAvailable") is not None:
        desired = _scaled(spec["minAvailable"], expected)
    elif spec.get("maxUnavailable") is not None:
        desired = max(0, expected - _scaled(spec["maxUnavailable"], expected))
    else:
        desired = expected
    allowed = max(0, healthy - desired)
    previous = {c.get("type"): c for c in (pdb.get("status") or {}).get("conditions") or []}.get(
        "DisruptionAllowed"
    )
    value = "True" if allowed > 0 else "False"
    since = previous["lastTransitionTime"] if previous and previous.get("status") == value else now
    return {
        "observedGeneration": pdb.get("metadata", {}).get("generation", 1),
        "expectedPods": expected,
        "currentHealthy": healthy,
        "desiredHealthy": desired,
        "disruptionsAllowed": allowed,
        "conditions": [
            {
                "type": "DisruptionAllowed",
                "status": value,
                "reason": "SufficientPods" if allowed > 0 else "InsufficientPods",
                "message": "",
                "lastTransitionTime": since,
                "observedGeneration": pdb.get("metadata", {}).get("generation", 1),
            }
        ],
    }


class DisruptionController:
    def __init__(self, store: Store) -> None:
        self._store = store
        self.queue: WorkQueue[Key] = WorkQueue("poddisruptionbudgets", self.reconcile)
        self._selectors: dict[str, SelectorIndex[str]] = {}  # by namespace, of budgets

    def observe(self, event: WatchEvent) -> None:
        md = event.obj.get("metadata", {})
        namespace, name = md.get("namespace", ""), md.get("name", "")
        if event.key == PDBS:
            budgets = self._selectors.setdefault(namespace, SelectorIndex())
            if event.type == "DELETED":
                budgets.discard(name)
                return
            budgets.set(name, (event.obj.get("spec") or {}).get("selector") or {})
            self.queue.add((namespace, name))
        elif event.key == PODS:
            index = self._selectors.get(namespace)
            if index:
                for budget in index.matching(md.get("labels") or {}):
                    self.queue.add((namespace, budget))

    def _scale(self, namespace: str, pods: list[dict[str, Any]]) -> int | None:
        owners = {
            ref["name"]
            for pod in pods
            for ref in pod.get("metadata", {}).get("ownerReferences") or []
            if ref.get("controller") and ref.get("kind") == "StatefulSet"
        }
        if not owners:
            return None
        total = 0
        for name in owners:
            sts = self._store.peek(STATEFULSETS, namespace, name)
            total += int(((sts or {}).get("spec") or {}).get("replicas", 1))
        return total

    def reconcile(self, key: Key) -> None:
        pdb = self._store.peek(PDBS, *key)
        if pdb is None:
            return
        selector = selector_to_string((pdb.get("spec") or {}).get("selector"))
        pods = self._store.scan(PODS, key[0], label_selector=selector or None)
        status = pdb_status(pdb, pods, now_rfc3339(), self._scale(key[0], pods))
        current = pdb.get("status") or {}
        if {k: v for k, v in current.items() if k != "conditions"} != {
            k: v for k, v in status.items() if k != "conditions"
        } or [c.get("status") for c in current.get("conditions") or []] != [
            c["status"] for c in status["conditions"]
        ]:
            self._store.merge_patch(
                PDBS, *key, {"status": status}, subresource="status", copy=False
            )
