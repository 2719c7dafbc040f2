"""The validators used on rendered objects do catch broken objects (so a passing check means
something)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest

from tests.unit.render.fakes import of_kind, render
from tests.unit.render.schemas import validate_object

KARPENTER = {
    "nodePool": {"provisioner": "Karpenter", "karpenter": {"nodeClassRef": {"name": "gpu"}}},
    "monitoring": {"podMonitor": {"enabled": True}},
    "autoscaling": {
        "provider": "KEDA",
        "maxReplicas": 2,
        "keda": {"prometheus": {"serverAddress": "http://p:9090", "query": "q", "threshold": 1}},
    },
}


def broken(kind: str, damage: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    obj = copy.deepcopy(of_kind(render(KARPENTER), kind)[0])
    damage(obj)
    return obj


def _unknown_pod_field(o: dict[str, Any]) -> None:
    o["spec"]["template"]["spec"]["containers"][0]["portz"] = []


def _string_replicas(o: dict[str, Any]) -> None:
    o["spec"]["replicas"] = "two"


def _bad_operator(o: dict[str, Any]) -> None:
    o["spec"]["template"]["spec"]["requirements"][0]["operator"] = "Equals"


def _unknown_disruption_field(o: dict[str, Any]) -> None:
    o["spec"]["disruption"]["expireAfter"] = "720h"  # moved to the template in karpenter v1.0


def _bad_interval(o: dict[str, Any]) -> None:
    o["spec"]["podMetricsEndpoints"][0]["interval"] = "30 seconds"


def _unknown_monitor_field(o: dict[str, Any]) -> None:
    o["spec"]["endpoints"] = []  # ServiceMonitor's field, not PodMonitor's


def _number_in_trigger_metadata(o: dict[str, Any]) -> None:
    o["spec"]["triggers"][0]["metadata"]["threshold"] = 4  # KEDA's metadata values are strings


def _deployment_style_target(o: dict[str, Any]) -> None:
    o["spec"]["scaleTargetRef"] = {"deploymentName": "nano"}  # KEDA v1's field, gone in v2


@pytest.mark.parametrize(
    ("kind", "damage"),
    [
        ("StatefulSet", _unknown_pod_field),
        ("StatefulSet", _string_replicas),
        ("NodePool", _bad_operator),
        ("NodePool", _unknown_disruption_field),
        ("PodMonitor", _bad_interval),
        ("PodMonitor", _unknown_monitor_field),
        ("ScaledObject", _number_in_trigger_metadata),
        ("ScaledObject", _deployment_style_target),
    ],
)
def test_validators_reject_broken_objects(
    kind: str, damage: Callable[[dict[str, Any]], None]
) -> None:
    validate_object(broken(kind, lambda o: None))  # intact, it passes
    # kubernetes-validate's ValidationError derives from jsonschema's
    with pytest.raises(jsonschema.ValidationError):
        validate_object(broken(kind, damage))
