"""spec.gateway's objects are valid Kubernetes objects and wired to each other: every port the
picker's Service, probes and InferencePool name is one the picker listens on, every flag names
the object it refers to, and the pod runs restricted. Mutation testing found the gateway's objects
never validated by a schema and most of their fields unchecked."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from nemotron_operator.render.gateway import EXT_PROC_SERVICE, GATEWAY_OBJECT_KINDS
from tests.unit.render.fakes import flag_value, of_kind
from tests.unit.render.gateway_cases import SPEC, merged, one, render
from tests.unit.render.schemas import validate_object

ROUTED = merged(
    SPEC,
    {
        "gateway": {
            "httpRoute": {
                "parentRefs": [{"name": "gw", "namespace": "edge", "sectionName": "https"}]
            }
        }
    },
)


def picker_objects() -> list[dict[str, Any]]:
    objects = render(ROUTED)
    return [o for o in objects if o["kind"] in GATEWAY_OBJECT_KINDS] + [picker_service(objects)]


def container_of(objects: list[dict[str, Any]]) -> dict[str, Any]:
    containers: list[dict[str, Any]] = one(objects, "Deployment")["spec"]["template"]["spec"][
        "containers"
    ]
    (container,) = containers
    return container


def picker_service(objects: list[dict[str, Any]]) -> dict[str, Any]:
    name = one(objects, "InferencePool")["spec"]["endpointPickerRef"]["name"]
    service: dict[str, Any] = next(
        s for s in of_kind(objects, "Service") if s["metadata"]["name"] == name
    )
    return service


def test_every_gateway_object_is_a_valid_object_of_its_kind() -> None:
    objects = picker_objects()
    assert {o["kind"] for o in objects} == GATEWAY_OBJECT_KINDS | {"Service"}
    for obj in objects:
        validate_object(obj)


def test_the_service_probes_and_pool_target_ports_the_picker_listens_on() -> None:
    objects = render(ROUTED)
    container = container_of(objects)
    listening = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert all(p["protocol"] == "TCP" for p in container["ports"])
    assert flag_value(container["args"], "--grpc-port") == str(listening["grpc"])
    assert flag_value(container["args"], "--grpc-health-port") == str(listening["grpc-health"])
    assert flag_value(container["args"], "--metrics-port") == str(listening["metrics"])
    service = picker_service(objects)
    for port in service["spec"]["ports"]:
        assert port["targetPort"] in listening.values(), port
        assert port["port"] == port["targetPort"]
        assert port["protocol"] == "TCP"
    by_name = {p["name"]: p for p in service["spec"]["ports"]}
    assert by_name["grpc-ext-proc"]["port"] == listening["grpc"]
    assert by_name["grpc-health"]["port"] == listening["grpc-health"]
    assert by_name["http-metrics"]["port"] == listening["metrics"]
    assert service["spec"]["type"] == "ClusterIP"
    ref = one(objects, "InferencePool")["spec"]["endpointPickerRef"]
    assert (ref["group"], ref["kind"], ref["port"]["number"]) == ("", "Service", listening["grpc"])
    for probe, period in ((container["livenessProbe"], 10), (container["readinessProbe"], 5)):
        assert probe["grpc"] == {"port": listening["grpc-health"], "service": EXT_PROC_SERVICE}
        assert (probe["initialDelaySeconds"], probe["periodSeconds"]) == (5, period)


def test_the_picker_reads_its_pool_and_config_and_serves_what_a_namespaced_role_allows() -> None:
    objects = render(ROUTED)
    container = container_of(objects)
    args = container["args"]
    pool = one(objects, "InferencePool")
    assert flag_value(args, "--pool-group") == pool["apiVersion"].split("/")[0]
    config_map = one(objects, "ConfigMap")
    (mount,) = container["volumeMounts"]
    (key,) = config_map["data"]
    assert flag_value(args, "--config-file") == f"{mount['mountPath']}/{key}"
    assert mount["readOnly"] is True
    pod = one(objects, "Deployment")["spec"]["template"]["spec"]
    (volume,) = pod["volumes"]
    assert (volume["name"], volume["configMap"]["name"]) == (
        mount["name"],
        config_map["metadata"]["name"],
    )
    # Cleartext gRPC (the Service's h2c) and metrics without TokenReviews, which a namespaced
    # Role cannot grant.
    assert "--secure-serving=false" in args
    assert "--metrics-endpoint-auth=false" in args
    assert flag_value(args, "--zap-encoder") == "json"


def test_one_picker_replaced_not_rolled_and_restarted_by_a_new_config() -> None:
    objects = render(ROUTED)
    deployment = one(objects, "Deployment")
    spec = deployment["spec"]
    assert (spec["replicas"], spec["strategy"]) == (1, {"type": "Recreate"})
    labels = spec["template"]["metadata"]["labels"]
    assert spec["selector"]["matchLabels"] == labels
    assert picker_service(objects)["spec"]["selector"] == labels
    text = one(objects, "ConfigMap")["data"]["epp-config.yaml"]
    annotations = spec["template"]["metadata"]["annotations"]
    assert hashlib.sha256(text.encode()).hexdigest()[:16] in annotations.values()


def test_the_picker_pod_runs_restricted_with_bounded_memory() -> None:
    objects = render(ROUTED)
    pod = one(objects, "Deployment")["spec"]["template"]["spec"]
    assert pod["securityContext"] == {
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert pod["terminationGracePeriodSeconds"] == 130
    container = container_of(objects)
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "runAsNonRoot": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert container["resources"] == {
        "requests": {"cpu": "500m", "memory": "1Gi"},
        "limits": {"memory": "4Gi"},
    }
    assert (container["name"], container["imagePullPolicy"]) == ("epp", "IfNotPresent")
    assert one(objects, "ServiceAccount")["automountServiceAccountToken"] is True


def test_the_role_binding_binds_the_role_to_the_pickers_account_in_this_namespace() -> None:
    objects = render(ROUTED)
    binding = one(objects, "RoleBinding")
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": one(objects, "Role")["metadata"]["name"],
    }
    assert binding["subjects"] == [
        {
            "kind": "ServiceAccount",
            "name": one(objects, "ServiceAccount")["metadata"]["name"],
            "namespace": "ai",
        }
    ]
    groups = {g for r in one(objects, "Role")["rules"] for g in r["apiGroups"]}
    assert groups == {"", "inference.networking.k8s.io", "llm-d.ai"}


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ({"name": "gw"}, {"name": "gw"}),
        (
            {"name": "gw", "namespace": "edge", "sectionName": "https"},
            {"name": "gw", "namespace": "edge", "sectionName": "https"},
        ),
    ],
)
def test_the_route_names_its_gateway_as_given_and_sends_everything_to_the_pool(
    ref: dict[str, str], expected: dict[str, str]
) -> None:
    objects = render(merged(SPEC, {"gateway": {"httpRoute": {"parentRefs": [ref]}}}))
    route = one(objects, "HTTPRoute")
    (parent,) = route["spec"]["parentRefs"]
    assert parent == {"group": "gateway.networking.k8s.io", "kind": "Gateway", **expected}
    (rule,) = route["spec"]["rules"]
    assert rule["matches"][0]["path"] == {"type": "PathPrefix", "value": "/"}
    pool = one(objects, "InferencePool")
    assert rule["backendRefs"] == [
        {
            "group": "inference.networking.k8s.io",
            "kind": "InferencePool",
            "name": pool["metadata"]["name"],
            "weight": 1,
        }
    ]
