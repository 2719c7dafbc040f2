"""autoscaling.provider KEDA in the reconcile: whether the ScaledObject can be applied here, and
if not, why (the Autoscaling condition). The ScaledObject is discovery-gated like the NodePool:
where KEDA's CRD is not served it is skipped by ``children.sync`` (no request, no retry), and
status names the missing CRD instead."""

from __future__ import annotations

from nemotron_operator.api import NemotronDeployment
from nemotron_operator.controller.decide.gateway import CRD_NOT_INSTALLED
from nemotron_operator.kube.resources import SCALED_OBJECTS, Resource
from nemotron_operator.render import names as n

APPLIED = "ScaledObjectApplied"


def assess(
    deployment: NemotronDeployment | None, served: frozenset[Resource], names: n.Names
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
    return (
        "True",
        APPLIED,
        f"KEDA ScaledObject {names.scaled_object} scales spec.replicas between {low} and "
        f"{high} on its Prometheus trigger; the operator's own autoscaler is off",
    )
