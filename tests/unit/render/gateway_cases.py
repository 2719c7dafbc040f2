"""The gateway renders' spec and helpers, shared by the gateway render and wiring tests."""

from __future__ import annotations

from typing import Any

from nemotron_operator.api.errors import parse_deployment
from nemotron_operator.render import render_all
from nemotron_operator.sizing import plan_deployment
from tests.unit.render.fakes import SUPER_VL, of_kind

SPEC: dict[str, Any] = {
    "model": {"id": SUPER_VL},
    "engine": {"maxModelLen": 262_144},
    "capacity": {"gpu": {"products": ["NVIDIA-H200"]}, "parallelism": {"tensor": 4}},
    "gateway": {"enabled": True, "httpRoute": {"parentRefs": [{"name": "gw"}]}},
}


def merged(base: dict[str, Any], change: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in change.items():
        out[key] = merged(out[key], value) if isinstance(value, dict) and key in out else value
    return out


def render(spec: dict[str, Any]) -> list[dict[str, Any]]:
    deployment = parse_deployment(
        {
            "apiVersion": "serving.nemotron.io/v1alpha1",
            "kind": "NemotronDeployment",
            "metadata": {"name": "super", "namespace": "ai"},
            "spec": spec,
        }
    )
    return render_all(deployment, plan_deployment(deployment.spec))


def one(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (found,) = of_kind(objects, kind)
    return found
