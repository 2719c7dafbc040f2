"""What a NemotronDeployment asks for, as the reconcile reads it: the spec parsed with the API
models (with the operator's ``--default-image`` where the spec keeps the API's default), planned
against the cluster's GPU inventory and rendered into its children. Pure CPU work (the reconcile
runs it off the event loop); an invalid or infeasible spec is a :class:`Problem`, not an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from nemotron_operator.api import DEFAULT_IMAGE, NemotronDeployment, NemotronDeploymentStatus
from nemotron_operator.api.errors import parse_deployment
from nemotron_operator.render import RenderError, RenderOptions, render_all
from nemotron_operator.render.inputs import Owner
from nemotron_operator.sizing import GpuInventory, PlanningError, PlanResult, plan_deployment
from nemotron_operator.status import Problem

INVALID_SPEC = "InvalidSpec"
DRA_NOT_AVAILABLE = "DRANotAvailable"


@dataclass(frozen=True)
class Planned:
    """A spec that could be planned and rendered."""

    result: PlanResult
    desired: list[dict[str, Any]]  # the rendered children, in apply order


def parsed_part(raw: dict[str, Any]) -> dict[str, Any]:
    """What :func:`parse` reads of the stored object (not its status, not the other metadata)."""
    metadata = raw.get("metadata") or {}
    keep = {
        k: metadata[k]
        for k in ("name", "namespace", "labels", "generation", "uid")
        if k in metadata
    }
    return {
        "apiVersion": raw.get("apiVersion"),
        "kind": raw.get("kind"),
        "metadata": keep,
        "spec": raw.get("spec"),
    }


def parse(raw: dict[str, Any], *, default_image: str) -> NemotronDeployment:
    """The object as the API models read it; raises ``SpecError`` naming each bad field."""
    deployment = parse_deployment(parsed_part(raw))
    engine = deployment.spec.engine
    if engine.image != DEFAULT_IMAGE or default_image == DEFAULT_IMAGE:
        return deployment
    engine = engine.model_copy(update={"image": default_image})
    spec = deployment.spec.model_copy(update={"engine": engine})
    return deployment.model_copy(update={"spec": spec})


def stored_status(raw: dict[str, Any]) -> NemotronDeploymentStatus | None:
    """The status stored in the object, or None when it does not parse."""
    try:
        return NemotronDeploymentStatus.model_validate(raw.get("status") or {})
    except ValidationError:
        return None


def own_kind(inventory: GpuInventory, deployment: NemotronDeployment | None) -> GpuInventory:
    """The GPUs a deployment can get: those of its ``capacity.gpu.allocation``."""
    if deployment is None:
        return inventory
    return inventory.for_allocation(deployment.spec.capacity.gpu.allocation)


def dra_unavailable(allocation: str, enabled: bool, served: bool) -> Problem | None:
    """Why ``capacity.gpu.allocation: DRA`` cannot be served: the operator runs without --dra
    (its chart's rbac.dra grants the DRA kinds), or the cluster lacks resource.k8s.io/v1."""
    if allocation != "DRA" or (enabled and served):
        return None
    if not enabled:
        change = (
            "the operator runs without --dra: upgrade its chart with --set rbac.dra=true (it "
            "grants ResourceClaimTemplates, ResourceClaims and ResourceSlices), or set "
            "allocation: DevicePlugin"
        )
    else:
        change = (
            "the cluster does not serve resource.k8s.io/v1 (DRA is GA since Kubernetes 1.34): "
            "upgrade it, or set allocation: DevicePlugin"
        )
    return Problem(DRA_NOT_AVAILABLE, f"spec.capacity.gpu.allocation: DRA, but {change}")


def plan_and_render(
    deployment: NemotronDeployment,
    inventory: GpuInventory,
    *,
    allow_remote_code: bool,
    operator_namespace: str | None = None,
    dra: tuple[bool, bool] = (False, False),
    leader_worker_set_served: bool = False,
) -> Planned | Problem:
    """The plan and the children it renders, or why there are none (the planner's reason, or
    ``InvalidSpec`` for a field the renderer refuses). ``dra``: whether the operator runs with
    --dra, and whether the cluster serves DRA. ``leader_worker_set_served``: the cluster
    serves LWS's CRD (a multi-node replica then runs on a LeaderWorkerSet unless
    spec.multiNode.backend says otherwise). A deployment plans on the nodes whose GPUs it
    asks for its way (``capacity.gpu.allocation``) only."""
    allocation = deployment.spec.capacity.gpu.allocation
    problem = dra_unavailable(allocation, *dra)
    if problem is not None:
        return problem
    try:
        result = plan_deployment(deployment.spec, inventory=own_kind(inventory, deployment))
    except PlanningError as exc:
        where = f"{exc.field}: " if exc.field else ""
        return Problem(exc.reason, where + exc.message)
    metadata = deployment.metadata
    options = RenderOptions(
        owner=Owner(name=metadata.name, uid=metadata.uid or ""),
        allow_remote_code=allow_remote_code,
        operator_namespace=operator_namespace,
        leader_worker_set_served=leader_worker_set_served,
    )
    try:
        return Planned(result, render_all(deployment, result, options))
    except RenderError as exc:
        return Problem(INVALID_SPEC, "; ".join(str(e) for e in exc.errors))
