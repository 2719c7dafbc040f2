"""autoscaling.provider KEDA: a KEDA ScaledObject on the NemotronDeployment's scale subresource,
carrying the user's Prometheus trigger and the spec's replica bounds and windows."""

from __future__ import annotations

from typing import Any

import pytest

from nemotron_operator.api.errors import FieldError
from nemotron_operator.render import RenderError
from nemotron_operator.render.scaledobject import keda_number
from tests.unit.render.fakes import of_kind, render
from tests.unit.render.schemas import validate_object

PROMETHEUS = {
    "serverAddress": "http://prometheus.monitoring.svc:9090",
    "query": 'sum(rate(gateway_requests_total{route="super-vl"}[1m]))',
    "threshold": 8,
}


def keda(**autoscaling: Any) -> dict[str, Any]:
    return {
        "autoscaling": {
            "provider": "KEDA",
            "maxReplicas": 4,
            "keda": {"prometheus": PROMETHEUS},
            **autoscaling,
        }
    }


def scaled_object(spec: dict[str, Any]) -> dict[str, Any]:
    (found,) = of_kind(render(spec), "ScaledObject")
    return found


def test_the_scaled_object_targets_the_deployment_itself_with_the_users_trigger() -> None:
    obj = scaled_object(keda(minReplicas=0, idleSeconds=900))
    validate_object(obj)
    assert obj["metadata"]["name"] == "super-vl"
    assert obj["metadata"]["namespace"] == "ai"
    assert obj["metadata"]["labels"]["app.kubernetes.io/component"] == "autoscaling"
    spec = obj["spec"]
    assert spec["scaleTargetRef"] == {
        "apiVersion": "serving.nemotron.io/v1alpha1",
        "kind": "NemotronDeployment",
        "name": "super-vl",
    }
    assert (spec["minReplicaCount"], spec["maxReplicaCount"]) == (0, 4)
    assert spec["cooldownPeriod"] == 900  # idleSeconds: inactive this long before zero
    # ... also from the ScaledObject's creation, before the trigger was ever active (KEDA's
    # initialCooldownPeriod defaults to 0: zero at once, before the first replica loaded).
    assert spec["initialCooldownPeriod"] == 900
    assert spec["triggers"] == [
        {
            "type": "prometheus",
            "name": "demand",
            "metricType": "AverageValue",
            "metadata": {
                "serverAddress": "http://prometheus.monitoring.svc:9090",
                "query": 'sum(rate(gateway_requests_total{route="super-vl"}[1m]))',
                "threshold": "8",
            },
        }
    ]
    behavior = spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
    # The spec's defaults: 60 s up, 600 s down (api/autoscaling.py).
    assert behavior == {
        "scaleUp": {"stabilizationWindowSeconds": 60},
        "scaleDown": {"stabilizationWindowSeconds": 600},
    }
    assert "pollingInterval" not in spec  # KEDA's default (30 s) unless set


def test_every_autoscaling_field_reaches_the_scaled_object() -> None:
    spec = scaled_object(
        keda(
            minReplicas=2,
            maxReplicas=6,
            scaleUpStabilizationSeconds=5,
            scaleDownDelaySeconds=120,
            keda={
                "prometheus": {**PROMETHEUS, "threshold": 2.5, "activationThreshold": 0.5},
                "pollingIntervalSeconds": 10,
            },
        )
    )["spec"]
    assert (spec["minReplicaCount"], spec["maxReplicaCount"]) == (2, 6)
    assert "cooldownPeriod" not in spec  # no scale to zero: KEDA's cooldown does not apply
    assert "initialCooldownPeriod" not in spec
    assert spec["pollingInterval"] == 10
    behavior = spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
    assert behavior["scaleUp"]["stabilizationWindowSeconds"] == 5
    assert behavior["scaleDown"]["stabilizationWindowSeconds"] == 120
    metadata = spec["triggers"][0]["metadata"]
    assert (metadata["threshold"], metadata["activationThreshold"]) == ("2.5", "0.5")


def test_zero_without_idle_seconds_waits_the_operators_default_idle_window() -> None:
    spec = scaled_object(keda(minReplicas=0))["spec"]
    assert (spec["cooldownPeriod"], spec["initialCooldownPeriod"]) == (1800, 1800)


def test_no_scaled_object_for_the_built_in_autoscaler_or_none() -> None:
    assert of_kind(render({"autoscaling": {"maxReplicas": 4}}), "ScaledObject") == []
    assert of_kind(render(), "ScaledObject") == []


@pytest.mark.parametrize(
    ("value", "wire"), [(4.0, "4"), (0.5, "0.5"), (100.25, "100.25"), (1e5, "100000")]
)
def test_numbers_are_keda_strings(value: float, wire: str) -> None:
    assert keda_number(value) == wire


def test_provider_and_trigger_must_go_together() -> None:
    with pytest.raises(RenderError) as missing:
        render({"autoscaling": {"provider": "KEDA", "maxReplicas": 4}})
    assert (
        FieldError(
            "spec.autoscaling.keda",
            "is required when autoscaling.provider is KEDA: name the Prometheus trigger "
            "(keda.prometheus.serverAddress, query and threshold)",
        )
        in missing.value.errors
    )
    with pytest.raises(RenderError) as stray:
        render({"autoscaling": {"maxReplicas": 4, "keda": {"prometheus": PROMETHEUS}}})
    assert [e.path for e in stray.value.errors] == ["spec.autoscaling.provider"]
    assert "set provider: KEDA or remove autoscaling.keda" in stray.value.errors[0].message
