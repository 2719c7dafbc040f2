"""spec.gateway in the reconcile: whether its objects can be applied here, and if not, what is
missing (the InferenceGateway condition). Nothing of the gateway is applied unless all of it can
be: an endpoint picker without its InferencePool would only crash-loop looking for it."""

from __future__ import annotations

from typing import Any

from nemotron_operator.api import NemotronDeployment
from nemotron_operator.kube.resources import HTTP_ROUTES, INFERENCE_POOLS, Resource
from nemotron_operator.render import names as n
from nemotron_operator.status.compute import GATEWAY_CONDITION

APPLIED = "Applied"
NOT_ENABLED = "OperatorNotEnabled"
CRD_NOT_INSTALLED = "CRDNotInstalled"
GATEWAY_COMPONENTS = frozenset({n.COMPONENT_GATEWAY, n.COMPONENT_ENDPOINT_PICKER})
__all__ = ["GATEWAY_CONDITION", "assess", "without_gateway"]


def assess(
    deployment: NemotronDeployment | None,
    served: frozenset[Resource],
    *,
    enabled_in_operator: bool,
    names: n.Names,
) -> tuple[str, str, str] | None:
    """The InferenceGateway condition (status, reason, message); None when the spec does not
    ask for a gateway."""
    if deployment is None or not deployment.spec.gateway.enabled:
        return None
    if not enabled_in_operator:
        return (
            "False",
            NOT_ENABLED,
            "spec.gateway.enabled needs the operator to run with --inference-gateway: upgrade "
            "its chart with --set rbac.inferenceGateway=true (it grants the kinds the gateway "
            "needs); nothing of the gateway is created until then",
        )
    missing = [
        f"{r.kind} ({r.plural}.{r.group}, {r.version})"
        for r in _needed(deployment)
        if r not in served
    ]
    if missing:
        return (
            "False",
            CRD_NOT_INSTALLED,
            f"the cluster does not serve {' and '.join(missing)}: install the CRDs of the "
            "Gateway API Inference Extension (InferencePool) and of the Gateway API (HTTPRoute, "
            "for spec.gateway.httpRoute); nothing of the gateway is created until then",
        )
    route = " and HTTPRoute " + names.http_route if deployment.spec.gateway.http_route else ""
    return (
        "True",
        APPLIED,
        f"InferencePool {names.inference_pool} selects the serving leaders; endpoint picker "
        f"{names.endpoint_picker}{route}",
    )


def _needed(deployment: NemotronDeployment) -> list[Resource]:
    if deployment.spec.gateway.http_route is not None:
        return [INFERENCE_POOLS, HTTP_ROUTES]
    return [INFERENCE_POOLS]


def without_gateway(desired: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``desired`` less the gateway's objects (when they cannot all be applied)."""
    return [
        obj
        for obj in desired
        if ((obj.get("metadata") or {}).get("labels") or {}).get(n.COMPONENT)
        not in GATEWAY_COMPONENTS
    ]
