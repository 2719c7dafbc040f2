"""``spec.rollout`` in the reconcile: assess the rollout (``status/rollout.py``) and hold back
what must not change yet (docs/controller.md, "Rollouts").

- A replica on one node: one StatefulSet whose ``partition`` and ``maxUnavailable`` come from the
  renderer (the canary's partition); when the rollout stalls the partition is raised to the
  lowest ordinal already on the new revision, so the StatefulSet controller replaces no further
  pod.
- A multi-node replica: a leader and a worker StatefulSet per replica. The operator applies the
  new template to at most ``maxUnavailable`` replicas whose pods are not all Ready on it (the
  highest-numbered first, never below the canary's line, none while stalled); the StatefulSets
  of the replicas held back are neither applied nor pruned, so their pods keep the old revision.

A progress deadline passing changes nothing the watches see, so :meth:`Rollouts.due` is part of
the reconcile's fingerprint: when a waiting pod's deadline passes, the next resync runs the
reconcile.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nemotron_operator.api import NemotronDeploymentStatus
from nemotron_operator.api.rollout import RolloutSpec
from nemotron_operator.kube.resources import (
    LEADER_WORKER_SETS,
    STATEFULSETS,
    Resource,
    resource_of,
)
from nemotron_operator.render import names as n
from nemotron_operator.status.readiness import pod_ready
from nemotron_operator.status.rollout import RolloutState, assess_rollout, template_hash

Key = tuple[str, str]


@dataclass(frozen=True)
class Held:
    """The children to apply, the ones left as they are, and the rollout's state."""

    desired: list[dict[str, Any]]
    keep: frozenset[tuple[Resource, str]]
    state: RolloutState | None


def _plan_accuracy(
    previous: NemotronDeploymentStatus | None,
) -> tuple[tuple[str, str, str] | None, str | None]:
    if previous is None:
        return None, None
    found = next((c for c in previous.conditions if c.type == "PlanAccurate"), None)
    accurate = (found.status, found.reason, found.message) if found is not None else None
    return accurate, previous.plan_check.pod if previous.plan_check is not None else None


class Rollouts:
    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self._deadlines: dict[Key, float] = {}

    def revision(self, key: Key) -> bool:
        """Whether a new pod's progress deadline has passed since the last reconcile
        (``DeploymentPart``: the reconcile's fingerprint)."""
        deadline = self._deadlines.get(key)
        return deadline is not None and self.clock() >= deadline

    def forget(self, key: Key) -> None:
        self._deadlines.pop(key, None)

    def hold(
        self,
        key: Key,
        rollout: RolloutSpec | None,
        desired: list[dict[str, Any]],
        *,
        live_statefulsets: Sequence[Mapping[str, Any]],
        pods: Sequence[Mapping[str, Any]],
        replicas: int,
        nodes_per_replica: int,
        previous: NemotronDeploymentStatus | None,
    ) -> Held:
        self._deadlines.pop(key, None)
        if rollout is None or any(resource_of(o) == LEADER_WORKER_SETS for o in desired):
            # A LeaderWorkerSet rolls its groups itself (maxUnavailable, maxSurge, partition).
            return Held(desired, frozenset(), None)
        rendered = {
            o["metadata"]["name"]: h
            for o in desired
            if resource_of(o) == STATEFULSETS and (h := template_hash(o)) is not None
        }
        accurate, checked_pod = _plan_accuracy(previous)
        state = assess_rollout(
            rollout,
            rendered=rendered,
            pods=pods,
            replicas=replicas,
            plan_accurate=accurate,
            plan_check_pod=checked_pod,
            now=self.clock(),
        )
        if state.next_deadline is not None:
            self._deadlines[key] = state.next_deadline
        if nodes_per_replica <= 1:
            return Held(_frozen(desired, state), frozenset(), state)
        live = {str(s["metadata"]["name"]): s for s in live_statefulsets}
        return _hold_replicas(desired, live, pods, rollout, state, replicas, nodes_per_replica)


def _frozen(desired: list[dict[str, Any]], state: RolloutState) -> list[dict[str, Any]]:
    """A stalled single-node rollout: the partition at the lowest ordinal already updated."""
    if state.stall is None or state.lowest_new_ordinal is None:
        return desired
    out = []
    for obj in desired:
        strategy = (obj.get("spec") or {}).get("updateStrategy") or {}
        rolling = strategy.get("rollingUpdate")
        if resource_of(obj) == STATEFULSETS and rolling is not None:
            partition = max(int(rolling.get("partition", 0)), state.lowest_new_ordinal)
            strategy = {**strategy, "rollingUpdate": {**rolling, "partition": partition}}
            out.append({**obj, "spec": {**obj["spec"], "updateStrategy": strategy}})
        else:
            out.append(obj)
    return out


def _hold_replicas(  # noqa: PLR0917 (one call site, every argument named there)
    desired: list[dict[str, Any]],
    live: Mapping[str, Mapping[str, Any]],
    pods: Sequence[Mapping[str, Any]],
    rollout: RolloutSpec,
    state: RolloutState,
    replicas: int,
    nodes: int,
) -> Held:
    """Multi-node replicas: which replicas' StatefulSets take the new template now."""
    by_name = {o["metadata"]["name"]: o for o in desired if resource_of(o) == STATEFULSETS}
    pairs: dict[int, list[str]] = {}
    for name, obj in by_name.items():
        replica = (obj["spec"]["template"]["metadata"].get("labels") or {}).get(n.REPLICA)
        if replica is not None:
            pairs.setdefault(int(replica), []).append(name)

    def updated(replica: int) -> bool:
        return all(
            name not in live or template_hash(live[name]) == template_hash(by_name[name])
            for name in pairs[replica]
        )

    def ready_on_new(replica: int) -> bool:
        group = [
            p
            for p in pods
            if (p.get("metadata") or {}).get("labels", {}).get(n.REPLICA) == str(replica)
        ]
        hashes = {name: template_hash(by_name[name]) for name in pairs[replica]}
        return len(group) >= nodes and all(
            pod_ready(p)
            and (p.get("metadata") or {}).get("annotations", {}).get(n.CONFIG_HASH)
            in hashes.values()
            for p in group
        )

    floor = replicas - rollout.canary.replicas if rollout.canary is not None else 0
    busy = sum(1 for r in pairs if updated(r) and not ready_on_new(r))
    budget = 0 if state.stall is not None else max(0, rollout.max_unavailable - busy)
    held: set[str] = set()
    for replica in sorted(pairs, reverse=True):
        if updated(replica):
            continue
        if replica >= floor and budget > 0:
            budget -= 1
            continue
        held.update(pairs[replica])
    return Held(
        [o for o in desired if o["metadata"]["name"] not in held or resource_of(o) != STATEFULSETS],
        frozenset((STATEFULSETS, name) for name in held),
        state,
    )
