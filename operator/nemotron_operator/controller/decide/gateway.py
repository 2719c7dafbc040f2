"""spec.gateway in the reconcile: whether its objects can be applied here, and if not, what is
missing (the InferenceGateway condition). Nothing of the gateway is applied unless all of it can
be: an endpoint picker without its InferencePool would only crash-loop looking for it."""

from __future__ import annotations

from typing import Any

from nemotron_operator.api import NemotronDeployment
from nemotron_operator.controller.settings import OperatorConfig
from nemotron_operator.kube.resources import HTTP_ROUTES, INFERENCE_POOLS, Resource
from nemotron_operator.render import names as n
from nemotron_operator.status.compute import GATEWAY_CONDITION

APPLIED = "Applied"
NOT_ENABLED = "OperatorNotEnabled"
CRD_NOT_INSTALLED = "CRDNotInstalled"
PICKER_UNAVAILABLE = "EndpointPickerUnavailable"
GATEWAY_COMPONENTS = frozenset({n.COMPONENT_GATEWAY, n.COMPONENT_ENDPOINT_PICKER})
DEFAULT_PORTS = {"http": 80, "https": 443}
__all__ = [
    "GATEWAY_CONDITION",
    "assess",
    "is_gateway_object",
    "reads_a_gateway",
    "with_picker_readiness",
    "without_gateway",
]


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


def with_picker_readiness(
    state: tuple[str, str, str] | None, picker: dict[str, Any] | None, names: n.Names
) -> tuple[str, str, str] | None:
    """``state`` (applied) is True only once the picker's Deployment has an available replica:
    until then a Gateway cannot ask it, and with FailClose refuses the pool's requests."""
    if state is None or state[0] != "True":
        return state
    available = int(((picker or {}).get("status") or {}).get("availableReplicas") or 0)
    if available >= 1:
        return state
    return (
        "False",
        PICKER_UNAVAILABLE,
        f"the endpoint picker Deployment {names.endpoint_picker} has no available replica yet "
        f"(kubectl describe deployment/{names.endpoint_picker}); until it has, the Gateway's "
        "requests to this pool follow spec.gateway.endpointPicker.failureMode",
    )


def _needed(deployment: NemotronDeployment) -> list[Resource]:
    if deployment.spec.gateway.http_route is not None:
        return [INFERENCE_POOLS, HTTP_ROUTES]
    return [INFERENCE_POOLS]


def is_gateway_object(obj: dict[str, Any]) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return labels.get(n.COMPONENT) in GATEWAY_COMPONENTS


def without_gateway(desired: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``desired`` less the gateway's objects (when they cannot all be applied)."""
    return [obj for obj in desired if not is_gateway_object(obj)]


def reads_a_gateway(raw: dict[str, Any], config: OperatorConfig) -> bool:
    """Whether a reconcile of ``raw`` reads a Gateway (for status.endpoint), an input no watch
    follows: such a reconcile is never skipped as unchanged (controller/reconcile/unchanged.py)."""
    spec = (raw.get("spec") or {}).get("gateway") or {}
    return config.inference_gateway and bool(spec.get("enabled")) and "httpRoute" in spec


def gateway_url(gateway: dict[str, Any], section_name: str | None) -> str | None:
    addresses = (gateway.get("status") or {}).get("addresses") or []
    if not addresses or not addresses[0].get("value"):
        return None
    listeners = (gateway.get("spec") or {}).get("listeners") or []
    listener = next((item for item in listeners if _listens(item, section_name)), None)
    scheme = "https" if listener and str(listener.get("protocol")).upper() == "HTTPS" else "http"
    host = str(addresses[0]["value"])
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    port = listener.get("port") if listener else None
    if port is None or port == DEFAULT_PORTS[scheme]:
        return f"{scheme}://{host}/v1"
    return f"{scheme}://{host}:{port}/v1"


def _listens(listener: dict[str, Any], section_name: str | None) -> bool:
    if section_name is not None:
        return bool(listener.get("name") == section_name)
    return str(listener.get("protocol", "")).upper() in ("HTTP", "HTTPS")
