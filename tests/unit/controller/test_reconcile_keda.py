"""autoscaling.provider KEDA in the reconcile, against the in-memory API server: the ScaledObject is
applied (owned by the deployment) where KEDA's CRD is served, and the Autoscaling condition says
so; without the CRD nothing is requested and the condition names it; the operator's own
autoscaler never writes spec.replicas for it (one writer)."""

from __future__ import annotations

from typing import Any

import pytest

from nemotron_operator.kube.resources import NEMOTRON_DEPLOYMENTS, SCALED_OBJECTS
from tests.unit.controller.world import CHILDREN, NAME, NS, World, deployment, world

PROMETHEUS = {"serverAddress": "http://prom:9090", "query": "sum(demand)", "threshold": 4}
KEDA = {"provider": "KEDA", "minReplicas": 0, "maxReplicas": 3, "keda": {"prometheus": PROMETHEUS}}
SCALE = "patch NemotronDeployment/nano/scale"


def autoscaling_condition(outcome: Any) -> tuple[str, str, str] | None:
    for c in outcome.status.conditions:
        if c.type == "Autoscaling":
            return c.status, c.reason, c.message
    return None


async def created(w: World, **spec: Any) -> tuple[Any, list[str]]:
    w.kube.put(NEMOTRON_DEPLOYMENTS, deployment(**spec))
    return await w.reconcile()


async def test_with_the_crd_the_scaled_object_is_applied_owned_and_reported() -> None:
    w = world(crds=frozenset({SCALED_OBJECTS}))
    outcome, writes = await created(w, autoscaling=KEDA)
    # Up to 3 replicas: the PodDisruptionBudget too (render/services.py).
    assert [x for x in writes if x.startswith("apply")] == [
        *CHILDREN, "apply PodDisruptionBudget/nano", "apply ScaledObject/nano"
    ]  # fmt: skip
    scaled = w.kube.stored(SCALED_OBJECTS, NS, NAME)
    (owner,) = scaled["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("NemotronDeployment", NAME, True)
    assert scaled["spec"]["scaleTargetRef"]["name"] == NAME
    condition = autoscaling_condition(outcome)
    assert condition is not None
    assert condition[:2] == ("True", "ScaledObjectApplied")
    assert "between 0 and 3" in condition[2]
    # Back to the built-in autoscaler: the ScaledObject is pruned and the condition goes.
    w.edit_spec(autoscaling={"minReplicas": 0, "maxReplicas": 3})
    outcome, writes = await w.reconcile()
    assert "delete ScaledObject/nano" in writes
    assert autoscaling_condition(outcome) is None


async def test_without_the_crd_nothing_is_requested_and_the_missing_crd_is_named() -> None:
    w = world()
    outcome, writes = await created(w, autoscaling=KEDA)
    assert [x for x in writes if x.startswith("apply")] == [
        *CHILDREN, "apply PodDisruptionBudget/nano"
    ]  # fmt: skip
    assert not any("ScaledObject" in x for x in writes)
    condition = autoscaling_condition(outcome)
    assert condition is not None
    assert condition[:2] == ("False", "CRDNotInstalled")
    assert "ScaledObject (scaledobjects.keda.sh, v1alpha1)" in condition[2]
    assert "spec.autoscaling.provider: Operator" in condition[2]
    assert "Event Warning CRDNotInstalled" in " ".join(writes)  # posted once, as a warning
    # Nothing failed: no back-off, no retry sooner than the resync.
    assert (outcome.backoff, outcome.retry_after) == (None, None)
    outcome, again = await w.reconcile()
    assert not any("CRDNotInstalled" in x or "ScaledObject" in x for x in again)
    assert autoscaling_condition(outcome)[:2] == ("False", "CRDNotInstalled")  # type: ignore[index]


@pytest.mark.parametrize(("provider", "scaled"), [("Operator", True), ("KEDA", False)])
async def test_the_built_in_autoscaler_writes_replicas_only_as_the_provider(
    provider: str, scaled: bool
) -> None:
    # spec.replicas 1 below minReplicas 2: the built-in autoscaler corrects that at once.
    spec: dict[str, Any] = {"provider": provider, "minReplicas": 2, "maxReplicas": 3}
    if provider == "KEDA":
        spec["keda"] = {"prometheus": PROMETHEUS}
    w = world(crds=frozenset({SCALED_OBJECTS}))
    await created(w, autoscaling=spec, replicas=1)
    mark = len(w.kube.writes)
    await w.reconciler.parts.autoscaler.tick((NS, NAME), None)
    assert (SCALE in w.kube.written()[mark:]) is scaled
    assert w.reconciler.parts.autoscaler.scales((NS, NAME)) is scaled
    assert w.nd()["spec"]["replicas"] == (2 if scaled else 1)


def keda_status(ready: str, active: str, message: str = "") -> dict[str, Any]:
    """Status with KEDA's condition types (apis/keda/v1alpha1/condition_types.go, v2.21.0)."""
    return {
        "conditions": [
            {"type": "Ready", "status": ready, "reason": "ScaledObjectReady", "message": message},
            {"type": "Active", "status": active, "reason": "ScalerActive", "message": ""},
            {"type": "Fallback", "status": "False", "reason": "NoFallbackFound", "message": ""},
        ]
    }


@pytest.mark.parametrize(
    ("ready", "active", "expected"),
    [
        ("True", "True", ("True", "KEDAActive", "is active")),
        ("True", "False", ("True", "KEDAIdle", "KEDA scales to zero after idleSeconds")),
        ("False", "False", ("False", "KEDANotReady", "is not ready: query refused")),
        ("Unknown", "Unknown", ("True", "ScaledObjectApplied", "between 0 and 3")),
    ],
)
async def test_the_condition_says_what_kedas_own_status_says(
    ready: str, active: str, expected: tuple[str, str, str]
) -> None:
    w = world(crds=frozenset({SCALED_OBJECTS}))
    await created(w, autoscaling=KEDA)
    scaled = w.kube.stored(SCALED_OBJECTS, NS, NAME)
    scaled["status"] = keda_status(ready, active, "query refused")
    w.kube.put(SCALED_OBJECTS, scaled)
    outcome, _ = await w.reconcile()
    condition = autoscaling_condition(outcome)
    assert condition is not None
    assert condition[:2] == expected[:2]
    assert expected[2] in condition[2]
