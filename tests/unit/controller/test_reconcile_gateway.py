"""spec.gateway in the reconcile, against the in-memory API server: applied only where the
operator runs with --inference-gateway and the CRDs are served (otherwise the InferenceGateway
condition names what is missing and nothing of it is created), deleted when switched off;
status.endpoint is the Gateway's address once it has one."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from nemotron_operator.controller.decide.gateway import gateway_url
from nemotron_operator.kube.resources import (
    DEPLOYMENTS,
    GATEWAYS,
    HTTP_ROUTES,
    INFERENCE_POOLS,
    NEMOTRON_DEPLOYMENTS,
)
from tests.unit.controller.world import (
    CHILDREN,
    STATUS,
    World,
    deployment,
    watched,
    world,
)

GATEWAY = {"enabled": True, "httpRoute": {"parentRefs": [{"name": "gw"}]}}
GATEWAY_WRITES = [
    "apply ServiceAccount/nano-epp",
    "apply Role/nano-epp",
    "apply RoleBinding/nano-epp",
    "apply ConfigMap/nano-epp",
    "apply Service/nano-epp",
    "apply Deployment/nano-epp",
    "apply InferencePool/nano",
    "apply HTTPRoute/nano",
]
BOTH_CRDS = frozenset({INFERENCE_POOLS, HTTP_ROUTES})


def gateway_condition(outcome: Any) -> tuple[str, str, str] | None:
    for c in outcome.status.conditions:
        if c.type == "InferenceGateway":
            return c.status, c.reason, c.message
    return None


async def created(w: World, **spec: Any) -> tuple[Any, list[str]]:
    w.kube.put(NEMOTRON_DEPLOYMENTS, deployment(**spec))
    return await w.reconcile()


async def test_without_the_operator_switch_nothing_is_created_and_status_says_why() -> None:
    outcome, writes = await created(world(crds=BOTH_CRDS), gateway=GATEWAY)
    assert [x for x in writes if x.startswith("apply")] == CHILDREN
    condition = gateway_condition(outcome)
    assert condition is not None
    assert condition[:2] == ("False", "OperatorNotEnabled")
    assert "rbac.inferenceGateway=true" in condition[2]


async def test_without_the_crds_nothing_is_created_and_the_missing_kind_is_named() -> None:
    outcome, writes = await created(
        world(crds=frozenset({INFERENCE_POOLS}), gateway=True), gateway=GATEWAY
    )
    assert [x for x in writes if x.startswith("apply")] == CHILDREN
    condition = gateway_condition(outcome)
    assert condition is not None
    assert condition[:2] == ("False", "CRDNotInstalled")
    assert "HTTPRoute (httproutes.gateway.networking.k8s.io, v1)" in condition[2]
    assert "InferencePool" not in condition[2].split("install")[0]


async def test_applied_in_order_then_all_deleted_when_switched_off() -> None:
    w = world(crds=BOTH_CRDS, gateway=True)
    outcome, writes = await created(w, gateway=GATEWAY)
    applied = [x for x in writes if x.startswith("apply")]
    assert sorted(applied) == sorted(CHILDREN + GATEWAY_WRITES)
    assert applied.index("apply ConfigMap/nano-epp") < applied.index("apply Deployment/nano-epp")
    assert applied.index("apply Deployment/nano-epp") < applied.index("apply InferencePool/nano")
    # Applied, but the picker has no available replica yet: a Gateway could not ask it.
    assert gateway_condition(outcome)[:2] == ("False", "EndpointPickerUnavailable")  # type: ignore[index]
    picker = w.kube.stored(DEPLOYMENTS, "ai", "nano-epp")
    w.kube.put(DEPLOYMENTS, {**picker, "status": {"availableReplicas": 1}})
    outcome, again = await w.reconcile()
    assert gateway_condition(outcome)[:2] == ("True", "Applied")  # type: ignore[index]
    assert [x for x in again if x.startswith(("apply", "delete"))] == []

    w.edit_spec(gateway={"enabled": False})
    outcome, writes = await w.reconcile()
    deleted = sorted(x.replace("delete ", "apply ") for x in writes if x.startswith("delete"))
    assert deleted == sorted(GATEWAY_WRITES)
    assert STATUS in writes
    assert gateway_condition(outcome) is None


async def test_an_infeasible_spec_creates_none_of_it() -> None:
    outcome, writes = await created(
        world(crds=BOTH_CRDS, gateway=True),
        gateway=GATEWAY,
        engine={"maxModelLen": 10_000_000},
    )
    assert outcome.result == "infeasible"
    assert [x for x in writes if x.startswith("apply")] == []


def a_gateway(address: str | None, *listeners: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {"name": "gw", "namespace": "ai"},
        "spec": {"gatewayClassName": "istio", "listeners": list(listeners)},
        "status": {"addresses": [{"type": "IPAddress", "value": address}] if address else []},
    }


HTTP = {"name": "http", "protocol": "HTTP", "port": 80}


async def test_status_endpoint_is_the_gateways_address_once_it_has_one() -> None:
    w = world(crds=BOTH_CRDS, gateway=True)
    w.kube.put(GATEWAYS, a_gateway(None, HTTP))
    outcome, _ = await created(w, gateway=GATEWAY)
    assert outcome.status.endpoint == "http://nano.ai.svc:8000/v1"  # no address yet
    w.kube.put(GATEWAYS, a_gateway("10.0.0.7", HTTP))
    outcome, _ = await w.reconcile()
    assert outcome.status.endpoint == "http://10.0.0.7/v1"
    # Switched off: the Service again.
    w.edit_spec(gateway={"enabled": False})
    outcome, _ = await w.reconcile()
    assert outcome.status.endpoint == "http://nano.ai.svc:8000/v1"


@pytest.mark.parametrize(
    ("listeners", "section", "url"),
    [
        ([HTTP], None, "http://10.0.0.7/v1"),
        ([{"name": "alt", "protocol": "HTTP", "port": 8080}], None, "http://10.0.0.7:8080/v1"),
        ([{"name": "tls", "protocol": "HTTPS", "port": 443}], None, "https://10.0.0.7/v1"),
        (
            [HTTP, {"name": "tls", "protocol": "HTTPS", "port": 8443}],
            "tls",
            "https://10.0.0.7:8443/v1",
        ),
        ([{"name": "tcp", "protocol": "TCP", "port": 9000}], None, "http://10.0.0.7/v1"),
    ],
)
def test_the_url_takes_the_listeners_scheme_and_port(
    listeners: list[dict[str, Any]], section: str | None, url: str
) -> None:
    assert gateway_url(a_gateway("10.0.0.7", *listeners), section) == url


def test_no_address_no_url() -> None:
    assert gateway_url(a_gateway(None, HTTP), None) is None


async def test_an_operator_without_the_switch_leaves_an_existing_gateway_alone() -> None:
    w = world(crds=BOTH_CRDS, gateway=True)
    await created(w, gateway=GATEWAY)
    # The same cluster, now reconciled by an operator started without --inference-gateway.
    w.reconciler.config = dataclasses.replace(w.reconciler.config, inference_gateway=False)
    w.reconciler._served = None  # a new process: discovery again
    outcome, writes = await w.reconcile()
    assert [x for x in writes if x.startswith("delete")] == []
    condition = gateway_condition(outcome)
    assert condition is not None
    assert condition[:2] == ("False", "OperatorNotEnabled")


async def test_a_routed_deployment_is_never_skipped_so_the_gateways_address_is_followed() -> None:
    # The Gateway is read, not watched: a reconcile of a routed deployment cannot know from its
    # watched inputs that the address changed, so it always runs.
    w = world(crds=BOTH_CRDS, gateway=True)
    w.kube.put(GATEWAYS, a_gateway(None, HTTP))
    await created(w, gateway=GATEWAY)
    watched(w)
    for _ in range(2):
        outcome, _ = await w.reconcile()
        assert outcome.result == "ok"
    w.kube.put(GATEWAYS, a_gateway("10.0.0.9", HTTP))
    outcome, _ = await w.reconcile()
    assert outcome.status.endpoint == "http://10.0.0.9/v1"
    # Without a route nothing is read that no watch follows: unchanged inputs are skipped.
    w.edit_spec(gateway={"enabled": True})
    await w.reconcile()
    await w.reconcile()
    outcome, writes = await w.reconcile()
    assert (outcome.result, writes) == ("unchanged", [])
