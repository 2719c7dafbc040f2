"""The NodePool finalizer: a cluster-scoped NodePool cannot have a namespaced owner, so the
NemotronDeployment that asked for one carries ``serving.nemotron.io/node-pool-cleanup`` until the
pool is deleted (``Reconciler._finalize``). Set and removed with a JSON patch guarded by the
object's resourceVersion (``kube.writes.set_finalizers``); the answer goes into the store."""

from __future__ import annotations

from typing import Any

from nemotron_operator.controller.watch.deployment_store import DeploymentStore
from nemotron_operator.kube import KubeClient, writes
from nemotron_operator.render import names as n

FINALIZER = f"{n.DOMAIN}/node-pool-cleanup"


def holds(raw: dict[str, Any]) -> bool:
    return FINALIZER in (raw["metadata"].get("finalizers") or [])


async def hold(
    kube: KubeClient, deployments: DeploymentStore, raw: dict[str, Any], wanted: bool
) -> None:
    """Add (``wanted``) or remove the finalizer when it is not so already; ``raw`` gets the
    answer's metadata."""
    current = list(raw["metadata"].get("finalizers") or [])
    if (FINALIZER in current) == wanted:
        return
    value = [*current, FINALIZER] if wanted else [f for f in current if f != FINALIZER]
    updated = await writes.set_finalizers(kube, raw, value)
    deployments.written(updated)
    raw["metadata"] = updated.get("metadata", raw["metadata"])
