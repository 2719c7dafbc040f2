"""autoscaling.provider KEDA in the reconcile: whether the ScaledObject can be applied here, and
if not, why (the Autoscaling condition). The ScaledObject is discovery-gated like the NodePool:
where KEDA's CRD is not served it is skipped by ``children.sync`` (no request, no retry), and
status names the missing CRD instead.

Once KEDA has looked at the ScaledObject, the condition says what KEDA says (its ``Ready`` and
``Active`` conditions, read back from the live object): KEDAActive (the trigger is above its
activationThreshold: KEDA holds at least one replica), KEDAIdle (it is not: with minReplicas 0 KEDA
scales to zero after idleSeconds), KEDANotReady (False, with KEDA's own message: a query Prometheus
refused, an unreachable server). The types are KEDA v2.21.0's
(apis/keda/v1alpha1/condition_types.go); a running KEDA has not yet written them in this
project's tests (docs/controller.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nemotron_operator.api import NemotronDeployment
from nemotron_operator.controller.decide.gateway import CRD_NOT_INSTALLED
from nemotron_operator.kube.resources import SCALED_OBJECTS, Resource
from nemotron_operator.render import names as n

APPLIED = "ScaledObjectApplied"
ACTIVE, IDLE, NOT_READY = "KEDAActive", "KEDAIdle", "KEDANotReady"


def keda_conditions(scaled: Mapping[str, Any] | None) -> dict[str, Mapping[str, Any]]:
    """KEDA's conditions on the live ScaledObject by type (empty before KEDA wrote any)."""
    status = (scaled or {}).get("status") or {}
    return {str(c.get("type")): c for c in status.get("conditions") or [] if isinstance(c, dict)}


def assess(
    deployment: NemotronDeployment | None,
    served: frozenset[Resource],
    names: n.Names,
    scaled: Mapping[str, Any] | None = None,
) -> tuple[str, str, str] | None:
    """The Autoscaling condition (status, reason, message); None unless the spec asks for
    KEDA."""
    autoscaling = deployment.spec.autoscaling if deployment is not None else None
    if autoscaling is None or autoscaling.provider != "KEDA":
        return None
    resource = SCALED_OBJECTS
    if resource not in served:
        return (
            "False",
            CRD_NOT_INSTALLED,
            f"the cluster does not serve {resource.kind} ({resource.plural}.{resource.group}, "
            f"{resource.version}): install KEDA, or set spec.autoscaling.provider: Operator; "
            "until then nothing scales this deployment (kubectl scale still does)",
        )
    low, high = autoscaling.min_replicas, autoscaling.max_replicas
    keda = keda_conditions(scaled)
    ready, active = keda.get("Ready") or {}, keda.get("Active") or {}
    what = f"KEDA ScaledObject {names.scaled_object}"
    if ready.get("status") == "False":
        return (
            "False",
            NOT_READY,
            f"{what} is not ready: {ready.get('message') or ready.get('reason')}",
        )
    if ready.get("status") == "True" and active.get("status") in ("True", "False"):
        if active["status"] == "True":
            return (
                "True",
                ACTIVE,
                f"{what} is active (its trigger is above activationThreshold): KEDA scales "
                f"spec.replicas between {max(low, 1)} and {high}",
            )
        zero = "scales to zero after idleSeconds" if low == 0 else f"holds {low} replicas"
        return (
            "True",
            IDLE,
            f"{what} is not active (its trigger is at or below activationThreshold): KEDA {zero}",
        )
    return (
        "True",
        APPLIED,
        f"KEDA ScaledObject {names.scaled_object} scales spec.replicas between {low} and "
        f"{high} on its Prometheus trigger; the operator's own autoscaler is off",
    )
