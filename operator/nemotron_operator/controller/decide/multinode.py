"""spec.multiNode in the reconcile: which layout a replica across nodes runs on, and why (the
MultiNodeBackend condition), and a switch of layout on a live deployment, which is refused.

Switching between a LeaderWorkerSet and leader/worker StatefulSets cannot be rolled: the new
layout's pods are other pods, under other names, and applying it while pruning the old one would
take every replica down at once. So while the children of one layout exist, the other is not
applied and the condition says how to switch (recreate the deployment) or stay (name the
running layout in spec.multiNode.backend). docs/rendering.md, "A replica across nodes"."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nemotron_operator.api import NemotronDeployment, Plan
from nemotron_operator.kube.resources import LEADER_WORKER_SETS, STATEFULSETS, Resource, resource_of

CONDITION = "MultiNodeBackend"
NOT_SERVED = "LeaderWorkerSetNotServed"
SWITCH_REFUSED = "SwitchRefused"


def lws_by_default(
    served: frozenset[Resource],
    statefulsets: list[dict[str, Any]],
    leader_worker_sets: list[dict[str, Any]],
) -> bool:
    """Whether a deployment that names no backend renders a LeaderWorkerSet: where LWS's CRD is
    served, unless the deployment already runs on StatefulSets (and on no LeaderWorkerSet). LWS
    installed after a deployment started must not turn its default into a refused switch."""
    if LEADER_WORKER_SETS not in served:
        return False
    return bool(leader_worker_sets) or not statefulsets


@dataclass(frozen=True)
class Layout:
    desired: list[dict[str, Any]]
    keep: frozenset[tuple[Resource, str]]
    condition: tuple[str, str, str] | None


def decide(
    deployment: NemotronDeployment | None,
    plan: Plan,
    desired: list[dict[str, Any]],
    live: Mapping[tuple[Resource, str], Any],
    served: frozenset[Resource],
) -> Layout:
    """The children to apply (the other layout's, while it runs, kept), and the condition."""
    if deployment is None or plan.nodes_per_replica <= 1:
        return Layout(desired, frozenset(), None)
    wants_lws = any(resource_of(o) == LEADER_WORKER_SETS for o in desired)
    chosen = "LeaderWorkerSet" if wants_lws else "StatefulSet"
    named = deployment.spec.multi_node.backend is not None
    old = [key for key in live if key[0] == (STATEFULSETS if wants_lws else LEADER_WORKER_SETS)]
    if old:
        running = "StatefulSet" if wants_lws else "LeaderWorkerSet"
        new_kind = LEADER_WORKER_SETS if wants_lws else STATEFULSETS
        why = "spec.multiNode.backend" if named else "the default (LWS's CRD served or not)"
        message = (
            f"the replicas run on {running}s and {why} now wants {chosen}: switching would take "
            "every replica down at once, so it is not done. To switch, delete and recreate the "
            f"NemotronDeployment; to stay, set spec.multiNode.backend: {running}"
        )
        kept = [o for o in desired if resource_of(o) != new_kind]
        return Layout(kept, frozenset(old), ("False", SWITCH_REFUSED, message))
    if wants_lws and LEADER_WORKER_SETS not in served:
        return Layout(
            desired,
            frozenset(),
            (
                "False",
                NOT_SERVED,
                "spec.multiNode.backend is LeaderWorkerSet but the cluster serves no "
                "leaderworkersets.leaderworkerset.x-k8s.io: install LWS (sigs.k8s.io/lws), or set "
                "spec.multiNode.backend: StatefulSet; until then no serving pod is created",
            ),
        )
    size = plan.nodes_per_replica
    if wants_lws:
        how = f"one LeaderWorkerSet, a group of {size} pods per replica, recreated whole"
        why = "spec.multiNode.backend says so" if named else "the cluster serves LWS's CRD"
    else:
        how = f"a leader and a worker StatefulSet per replica ({size} nodes)"
        if named:
            why = "spec.multiNode.backend says so"
        elif LEADER_WORKER_SETS in served:
            why = (
                "the default keeps the layout the replicas ran on before LWS's CRD was served "
                "(to move to LeaderWorkerSet, set spec.multiNode.backend and recreate the "
                "NemotronDeployment)"
            )
        else:
            why = "the cluster serves no LWS CRD"
    return Layout(desired, frozenset(), ("True", chosen, f"{how}: {why}"))
