"""The Helm chart: lint-clean, valid Kubernetes objects in every mode, restricted pod security,
least-privilege RBAC, a strict values schema, and versioned with the operator."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import kubernetes_validate
import pytest
import yaml

import nemotron_operator
from nemotron_operator.crd import CRD_FILE_NAME
from tests.helm import CHART, run_helm
from tests.integration.packaging.conftest import NAMESPACE, RELEASE, VARIANTS, Render, of_kind
from tests.unit.render.schemas import KUBERNETES_VERSIONS

FORBIDDEN_VERBS = {"*", "escalate", "bind", "impersonate"}
LEASE_ROLE = f"{RELEASE}-nemotron-operator-lease"

# The ServiceMonitor is a Prometheus Operator CRD kind, which kubernetes-validate has no schema
# for: this closed subset of monitoring.coreos.com/v1 ServiceMonitor covers what the chart writes.
_STRING_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
SERVICE_MONITOR_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "monitoring.coreos.com/v1"},
        "kind": {"const": "ServiceMonitor"},
        "metadata": {
            "type": "object",
            "additionalProperties": False,
            "required": ["name", "namespace"],
            "properties": {
                "name": {"type": "string"},
                "namespace": {"type": "string"},
                "labels": _STRING_MAP,
            },
        },
        "spec": {
            "type": "object",
            "additionalProperties": False,
            "required": ["selector", "endpoints"],
            "properties": {
                "selector": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {"matchLabels": _STRING_MAP},
                },
                "namespaceSelector": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {"matchNames": {"type": "array", "items": {"type": "string"}}},
                },
                "endpoints": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            "port": {"type": "string"},
                            "path": {"type": "string"},
                            "interval": {"type": "string", "pattern": "^([0-9]+(ms|s|m|h))+$"},
                            "scrapeTimeout": {
                                "type": "string",
                                "pattern": "^([0-9]+(ms|s|m|h))+$",
                            },
                            "honorLabels": {"type": "boolean"},
                            # SafeAuthorization: a Secret's key in the ServiceMonitor's namespace.
                            "authorization": {
                                "type": "object",
                                "additionalProperties": False,
                                "required": ["credentials"],
                                "properties": {
                                    "type": {"const": "Bearer"},
                                    "credentials": {
                                        "type": "object",
                                        "additionalProperties": False,
                                        "required": ["name", "key"],
                                        "properties": {
                                            "name": {"type": "string"},
                                            "key": {"type": "string"},
                                        },
                                    },
                                },
                            },
                        },
                    },
                },
            },
        },
    },
}


def chart_metadata() -> dict[str, Any]:
    meta: dict[str, Any] = yaml.safe_load((CHART / "Chart.yaml").read_text())
    return meta


def the_deployment(objects: list[dict[str, Any]]) -> dict[str, Any]:
    (deployment,) = of_kind(objects, "Deployment")
    return deployment


def the_container(objects: list[dict[str, Any]]) -> dict[str, Any]:
    (container,) = the_deployment(objects)["spec"]["template"]["spec"]["containers"]
    return container


def env_of(objects: list[dict[str, Any]]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in the_container(objects)["env"]}


def the_operators(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """The ClusterRoles (or bindings) of the workload, without metrics-auth.yaml's two."""
    return [
        obj
        for obj in of_kind(objects, kind)
        if not obj["metadata"]["name"].endswith(("-metrics-auth", "-metrics-reader"))
    ]


def rules_of(objects: list[dict[str, Any]]) -> list[tuple[str, str, str, str]]:
    """(role kind/name in namespace, api group, resource, verb) for every granted permission."""
    granted = []
    for role in of_kind(objects, "Role") + of_kind(objects, "ClusterRole"):
        where = f"{role['kind']}/{role['metadata']['name']}@{role['metadata'].get('namespace', '')}"
        for rule in role["rules"]:
            if "nonResourceURLs" in rule:  # the metrics-reader's, checked on its own below
                assert rule == {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}, rule
                continue
            assert set(rule) <= {"apiGroups", "resources", "resourceNames", "verbs"}, rule
            granted += [
                (where, group, resource, verb)
                for group in rule["apiGroups"]
                for resource in rule["resources"]
                for verb in rule["verbs"]
            ]
    return granted


def test_chart_is_versioned_with_the_operator() -> None:
    meta = chart_metadata()
    assert meta["apiVersion"] == "v2"
    assert meta["version"] == nemotron_operator.__version__, "bump Chart.yaml's version"
    assert meta["appVersion"] == nemotron_operator.__version__, "bump Chart.yaml's appVersion"


def test_chart_ships_the_generated_crd(repo_root: Path) -> None:
    ours = (CHART / "crds" / CRD_FILE_NAME).read_text()
    assert ours == (repo_root / "crds" / CRD_FILE_NAME).read_text()
    assert sorted(p.name for p in (CHART / "crds").iterdir()) == [CRD_FILE_NAME]


@pytest.mark.parametrize("variant", VARIANTS)
def test_helm_lint_strict_is_clean(helm_environment: dict[str, str], variant: str) -> None:
    result = run_helm(helm_environment, "lint", "--strict", str(CHART), *VARIANTS[variant])
    assert "0 chart(s) failed" in result.stdout
    assert "[WARNING]" not in result.stdout, result.stdout
    assert "[ERROR]" not in result.stdout, result.stdout


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_rendered_object_is_valid_kubernetes(render: Render, variant: str) -> None:
    objects = render(variant)
    kinds = {obj["kind"] for obj in objects}
    assert {"CustomResourceDefinition", "Deployment", "ServiceAccount", "Service"} <= kinds
    for obj in objects:
        if obj["kind"] == "CustomResourceDefinition" and variant != "default":
            continue  # crds/ does not depend on values: checked once
        if obj["kind"] == "ServiceMonitor":
            jsonschema.validate(obj, SERVICE_MONITOR_SCHEMA)
            continue
        for version in KUBERNETES_VERSIONS:
            kubernetes_validate.validate(obj, version, strict=True)


def test_the_validators_catch_a_broken_object(render: Render) -> None:
    deployment = the_deployment(render("default"))
    deployment["spec"]["template"]["spec"]["containers"][0]["portz"] = []
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, KUBERNETES_VERSIONS[-1], strict=True)
    (monitor,) = of_kind(render("service-monitor-and-digest"), "ServiceMonitor")
    monitor["spec"]["podMetricsEndpoints"] = []
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(monitor, SERVICE_MONITOR_SCHEMA)


@pytest.mark.parametrize("variant", VARIANTS)
def test_operator_pod_meets_pod_security_restricted(render: Render, variant: str) -> None:
    deployment = the_deployment(render(variant))
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    pod = deployment["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert not {"hostNetwork", "hostPID", "hostIPC"} & set(pod)
    assert all("hostPath" not in volume for volume in pod.get("volumes", []))
    (container,) = pod["containers"]
    security = container["securityContext"]
    assert security["allowPrivilegeEscalation"] is False
    assert security["readOnlyRootFilesystem"] is True
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert security.get("privileged", False) is False
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert "readinessProbe" in container
    assert container["resources"]["requests"]
    assert container["resources"]["limits"]


def test_operator_container_runs_the_image_with_settings_from_values(render: Render) -> None:
    container = the_container(render("default"))
    version = chart_metadata()["appVersion"]
    assert container["image"] == f"ghcr.io/nemotron-operator/nemotron-operator:{version}"
    assert container["args"] == ["run"]
    env = env_of(render("default"))
    # Every address of the pod (the operator's default), so that kubectl port-forward and
    # localhost reach /healthz and /metrics; not the pod IP only, as the chart once set.
    assert "NEMOTRON_OPERATOR_BIND_ADDRESS" not in env
    # A UID with no passwd entry: named for getpass, and the pod's name as kopf's identity.
    assert env["USER"] == "nemotron-operator"
    assert env["POD_NAME"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    assert env["NEMOTRON_OPERATOR_NAMESPACES"] == ""  # every namespace
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert env["NEMOTRON_OPERATOR_HEALTH_PORT"] == str(ports["health"])
    assert env["NEMOTRON_OPERATOR_METRICS_PORT"] == str(ports["metrics"])
    assert env["NEMOTRON_OPERATOR_LOG_LEVEL"] == "INFO"
    assert env["NEMOTRON_OPERATOR_RESYNC_SECONDS"] == "60"
    assert env["NEMOTRON_OPERATOR_SCRAPE_SECONDS"] == "30"
    assert "NEMOTRON_OPERATOR_DEFAULT_IMAGE" not in env
    # The Lease lives in the operator's namespace, named after the release.
    assert env["POD_NAMESPACE"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
    assert env["NEMOTRON_OPERATOR_LEASE_NAME"] == f"{RELEASE}-nemotron-operator"
    other = env_of(render("optional-kinds"))
    assert other["NEMOTRON_OPERATOR_NAMESPACES"] == "ai"
    assert other["NEMOTRON_OPERATOR_DEFAULT_IMAGE"] == "vllm/vllm-openai:v0.31.0"


def test_image_digest_overrides_the_tag(render: Render) -> None:
    container = the_container(render("service-monitor-and-digest"))
    assert container["image"] == "ghcr.io/nemotron-operator/nemotron-operator@sha256:" + "ab" * 32


def test_replica_count_sets_the_operator_pods(render: Render) -> None:
    """One active operator by default; a standby (docs/reliability.md: failover) on request."""
    assert the_deployment(render("default"))["spec"]["replicas"] == 1
    assert the_deployment(render("service-monitor-and-digest"))["spec"]["replicas"] == 2


def test_standard_labels_on_every_templated_object(render: Render) -> None:
    version = chart_metadata()["version"]
    for obj in render("service-monitor-and-digest") + render("per-namespace"):
        if obj["kind"] == "CustomResourceDefinition":
            continue  # crds/ is installed verbatim, not templated
        labels = obj["metadata"]["labels"]
        assert labels["helm.sh/chart"] == f"nemotron-operator-{version}", obj["kind"]
        assert labels["app.kubernetes.io/name"] == "nemotron-operator"
        assert labels["app.kubernetes.io/instance"] == RELEASE
        assert labels["app.kubernetes.io/managed-by"] == "Helm"
        assert labels["app.kubernetes.io/version"] == chart_metadata()["appVersion"]


def test_metrics_service_selects_the_operator_pod(render: Render) -> None:
    objects = render("service-monitor-and-digest")
    (service,) = of_kind(objects, "Service")
    pod_labels = the_deployment(objects)["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()
    assert service["spec"]["ports"][0]["targetPort"] == "metrics"
    (monitor,) = of_kind(objects, "ServiceMonitor")
    service_labels = service["metadata"]["labels"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service_labels.items()
    assert monitor["spec"]["endpoints"][0]["port"] == "metrics"
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": [NAMESPACE]}
    assert not of_kind(render("default"), "ServiceMonitor")


@pytest.mark.parametrize("variant", VARIANTS)
def test_rbac_has_no_wildcards_secrets_or_escalation(render: Render, variant: str) -> None:
    granted = rules_of(render(variant))
    assert granted
    for where, group, resource, verb in granted:
        assert "*" not in (group, resource), (where, group, resource, verb)
        assert verb not in FORBIDDEN_VERBS, (where, group, resource, verb)
        assert resource not in {"secrets", "serviceaccounts/token"}, (where, resource, verb)
        if resource == "pods":
            # Read, and delete: the leader of a StatefulSet-layout replica whose worker rank
            # died is restarted so that the ranks re-form (controller/decide/ranks.py). Never
            # create, patch or update (the pods/status readiness condition is its own rule).
            assert verb in {"get", "list", "watch", "delete"}, (where, verb)


def test_cluster_wide_mode_binds_one_cluster_role(render: Render) -> None:
    objects = render("default")
    assert [r["metadata"]["name"] for r in of_kind(objects, "Role")] == [LEASE_ROLE]
    (role,) = the_operators(objects, "ClusterRole")
    (binding,) = the_operators(objects, "ClusterRoleBinding")
    (account,) = of_kind(objects, "ServiceAccount")
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": account["metadata"]["name"], "namespace": NAMESPACE}
    ]
    pod = the_deployment(objects)["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == account["metadata"]["name"]
    # Without their switches, NodePools, PodMonitors and KEDA ScaledObjects are only listed and
    # watched (the watch cache finds the operator's own where the CRDs exist), never written.
    kinds = {
        ("karpenter.sh", "nodepools"),
        ("monitoring.coreos.com", "podmonitors"),
        ("keda.sh", "scaledobjects"),
    }
    optional = {(g, r, v) for _, g, r, v in rules_of(objects) if (g, r) in kinds}
    assert optional == {(g, r, v) for g, r in kinds for v in ("list", "watch")}


def test_per_namespace_mode_grants_workloads_only_in_the_served_namespaces(
    render: Render,
) -> None:
    objects = render("per-namespace")
    roles = [r for r in of_kind(objects, "Role") if r["metadata"]["name"] != LEASE_ROLE]
    assert sorted(r["metadata"]["namespace"] for r in roles) == ["ai", "research"]
    bindings = [b for b in of_kind(objects, "RoleBinding") if b["metadata"]["name"] != LEASE_ROLE]
    assert sorted(b["metadata"]["namespace"] for b in bindings) == ["ai", "research"]
    for binding in bindings:
        assert binding["roleRef"]["kind"] == "Role"
        assert binding["subjects"][0]["namespace"] == NAMESPACE
    (cluster_role,) = the_operators(objects, "ClusterRole")
    cluster_wide = {(g, r, v) for _, g, r, v in rules_of([cluster_role])}
    # Read-only: GPU nodes and the pods bound to them (free GPUs; the inventory's watches), the
    # operator's NodePools (listed and watched by the watch cache), and the optional kinds' CRDs
    # (watched by name, below).
    assert cluster_wide == {
        ("", "nodes", "list"),
        ("", "nodes", "watch"),
        ("", "pods", "list"),
        ("", "pods", "watch"),
        ("karpenter.sh", "nodepools", "list"),
        ("karpenter.sh", "nodepools", "watch"),
        ("apiextensions.k8s.io", "customresourcedefinitions", "list"),
        ("apiextensions.k8s.io", "customresourcedefinitions", "watch"),
    }
    (crd_rule,) = [
        r for r in cluster_role["rules"] if "customresourcedefinitions" in r["resources"]
    ]
    assert crd_rule["resourceNames"]  # only the optional kinds' CRDs, by name
    (cluster_binding,) = the_operators(objects, "ClusterRoleBinding")
    assert cluster_binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": cluster_role["metadata"]["name"],
    }
    assert env_of(objects)["NEMOTRON_OPERATOR_NAMESPACES"] == "ai,research"


def test_lease_role_is_limited_to_the_operators_lease_in_its_namespace(render: Render) -> None:
    for variant in ("default", "per-namespace"):
        objects = render(variant)
        (role,) = [r for r in of_kind(objects, "Role") if r["metadata"]["name"] == LEASE_ROLE]
        assert role["metadata"]["namespace"] == NAMESPACE
        named = [rule for rule in role["rules"] if "resourceNames" in rule]
        assert named == [
            {
                "apiGroups": ["coordination.k8s.io"],
                "resources": ["leases"],
                "resourceNames": [f"{RELEASE}-nemotron-operator"],
                "verbs": ["get", "update"],
            }
        ]
        (binding,) = [
            b for b in of_kind(objects, "RoleBinding") if b["metadata"]["name"] == LEASE_ROLE
        ]
        assert binding["roleRef"]["name"] == LEASE_ROLE


def test_optional_grants_follow_their_switches(render: Render) -> None:
    objects = render("optional-kinds")
    writes = {"create", "patch", "delete"}
    (cluster_role,) = the_operators(objects, "ClusterRole")
    cluster_wide = {(g, r, v) for _, g, r, v in rules_of([cluster_role])}
    assert {("karpenter.sh", "nodepools", v) for v in writes} <= cluster_wide  # cluster-scoped
    (role,) = [r for r in of_kind(objects, "Role") if r["metadata"]["name"] != LEASE_ROLE]
    namespaced = {(g, r, v) for _, g, r, v in rules_of([role])}
    assert {("monitoring.coreos.com", "podmonitors", v) for v in writes} <= namespaced
    assert {("keda.sh", "scaledobjects", v) for v in writes} <= namespaced


def test_the_inference_gateway_switch_grants_its_kinds_and_starts_the_operator_with_it(
    render: Render,
) -> None:
    on, off = render("inference-gateway"), render("default")
    assert env_of(on)["NEMOTRON_OPERATOR_INFERENCE_GATEWAY"] == "true"
    assert "NEMOTRON_OPERATOR_INFERENCE_GATEWAY" not in env_of(off)
    writes = {"list", "watch", "create", "patch", "delete"}
    kinds = {
        ("inference.networking.k8s.io", "inferencepools"),
        ("gateway.networking.k8s.io", "httproutes"),
        ("apps", "deployments"),
        ("", "configmaps"),
        ("", "serviceaccounts"),
        ("rbac.authorization.k8s.io", "roles"),
        ("rbac.authorization.k8s.io", "rolebindings"),
    }
    granted_on = {(g, r, v) for _, g, r, v in rules_of(of_kind(on, "ClusterRole"))}
    granted_off = {(g, r, v) for _, g, r, v in rules_of(of_kind(off, "ClusterRole"))}
    assert {(g, r, v) for g, r in kinds for v in writes} <= granted_on
    assert ("gateway.networking.k8s.io", "gateways", "get") in granted_on
    assert not {(g, r) for g, r, _ in granted_off} & (kinds | {("llm-d.ai", "inferenceobjectives")})


def named(objects: list[dict[str, Any]], kind: str, suffix: str) -> dict[str, Any]:
    (obj,) = [o for o in of_kind(objects, kind) if o["metadata"]["name"].endswith(suffix)]
    return obj


def test_metrics_auth_is_on_by_default_with_the_two_reviews_and_the_readers(
    render: Render,
) -> None:
    objects = render("default")
    assert env_of(objects)["NEMOTRON_OPERATOR_METRICS_AUTH"] == "true"
    (account,) = of_kind(objects, "ServiceAccount")
    reviews = named(objects, "ClusterRole", "-metrics-auth")
    assert reviews["rules"] == [
        {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"],
         "verbs": ["create"]},
        {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"],
         "verbs": ["create"]},
    ]  # fmt: skip
    binding = named(objects, "ClusterRoleBinding", "-metrics-auth")
    assert binding["roleRef"]["name"] == reviews["metadata"]["name"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": account["metadata"]["name"], "namespace": NAMESPACE}
    ]
    reader = named(objects, "ClusterRole", "-metrics-reader")
    assert reader["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
    readers = named(objects, "ClusterRoleBinding", "-metrics-reader")
    assert readers["roleRef"]["name"] == reader["metadata"]["name"]
    assert readers["subjects"] == [
        {"kind": "ServiceAccount", "name": "prometheus-k8s", "namespace": "monitoring"}
    ]
    assert not of_kind(objects, "Secret")  # a token Secret only for the ServiceMonitor


def test_the_service_monitor_sends_the_token_of_a_reader_of_its_own(render: Render) -> None:
    objects = render("service-monitor-and-digest")
    (monitor,) = of_kind(objects, "ServiceMonitor")
    (endpoint,) = monitor["spec"]["endpoints"]
    (secret,) = of_kind(objects, "Secret")
    assert endpoint["authorization"] == {
        "type": "Bearer",
        "credentials": {"name": secret["metadata"]["name"], "key": "token"},
    }
    assert secret["type"] == "kubernetes.io/service-account-token"
    assert secret["metadata"]["namespace"] == monitor["metadata"]["namespace"] == NAMESPACE
    scraper = secret["metadata"]["annotations"]["kubernetes.io/service-account.name"]
    assert scraper in {a["metadata"]["name"] for a in of_kind(objects, "ServiceAccount")}
    readers = named(objects, "ClusterRoleBinding", "-metrics-reader")
    assert {"kind": "ServiceAccount", "name": scraper, "namespace": NAMESPACE} in readers[
        "subjects"
    ]


def test_metrics_auth_off_leaves_metrics_open_and_grants_nothing_for_it(render: Render) -> None:
    objects = render("metrics-open-with-service-monitor")
    assert "NEMOTRON_OPERATOR_METRICS_AUTH" not in env_of(objects)
    names = [o["metadata"]["name"] for o in objects]
    assert not [n for n in names if "-metrics-auth" in n or "-metrics-reader" in n or
                "-metrics-scraper" in n], names  # fmt: skip
    (monitor,) = of_kind(objects, "ServiceMonitor")
    assert "authorization" not in monitor["spec"]["endpoints"][0]


def test_the_dra_switch_grants_its_kinds_and_starts_the_operator_with_it(render: Render) -> None:
    on, off = render("dra"), render("default")
    assert env_of(on)["NEMOTRON_OPERATOR_DRA"] == "true"
    assert "NEMOTRON_OPERATOR_DRA" not in env_of(off)
    granted_on = {(g, r, v) for _, g, r, v in rules_of(of_kind(on, "ClusterRole"))}
    granted_off = {(g, r, v) for _, g, r, v in rules_of(of_kind(off, "ClusterRole"))}
    templates = {("resource.k8s.io", "resourceclaimtemplates", v) for v in ("list", "watch",
                 "create", "patch", "delete")}  # fmt: skip
    read = {("resource.k8s.io", r, v) for r in ("resourceslices", "resourceclaims")
            for v in ("list", "watch")}  # fmt: skip
    assert templates | read <= granted_on
    # Read only: the operator never writes a claim or a slice.
    written = {r for g, r, v in granted_on if g == "resource.k8s.io" and v not in ("list", "watch")}
    assert written == {"resourceclaimtemplates"}
    assert not {g for g, _, _ in granted_off} & {"resource.k8s.io"}
    # Per-namespace mode: templates where the operator serves, slices and claims cluster-wide.
    namespaced = render("dra-namespaced")
    (role,) = [r for r in of_kind(namespaced, "Role") if r["metadata"]["name"] != LEASE_ROLE]
    assert templates <= {(g, r, v) for _, g, r, v in rules_of([role])}
    assert read <= {(g, r, v) for _, g, r, v in rules_of(of_kind(namespaced, "ClusterRole"))}


@pytest.mark.parametrize(
    ("values", "says"),
    [
        (["--set", "replicaCount=0"], "/replicaCount"),
        (["--set", "replicas=2"], "replicas"),
        (["--set", "image.tga=v1"], "tga"),
        (["--set", "image.digest=latest"], "/image/digest"),
        (["--set", "operator.logLevel=verbose"], "/operator/logLevel"),
        (["--set", "ports.metrics=http"], "/ports/metrics"),
        (["--set", "watchNamespaces={Not_A_Namespace}"], "/watchNamespaces/0"),
        (["--set", "metrics.serviceMonitor.interval=30 seconds"], "interval"),
        (["--set", "metrics.auth.readers[0].name=prometheus"], "namespace"),
        (
            [
                "--set",
                "metrics.serviceMonitor.enabled=true",
                "--set",
                "metrics.service.enabled=false",
            ],
            "metrics.serviceMonitor.enabled needs metrics.service.enabled",
        ),
    ],
)
def test_bad_values_are_refused_naming_the_field(
    helm_environment: dict[str, str], values: list[str], says: str
) -> None:
    result = run_helm(helm_environment, "template", RELEASE, str(CHART), *values, check=False)
    assert result.returncode != 0, result.stdout[:400]
    assert says in result.stderr, result.stderr


def test_values_schema_is_closed_everywhere() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    jsonschema.Draft7Validator.check_schema(schema)

    def walk(node: dict[str, Any], path: str) -> None:
        if node.get("type") == "object" and "properties" in node:
            assert node.get("additionalProperties") is False, f"{path or '/'} is open"
            for key, child in node["properties"].items():
                walk(child, f"{path}/{key}")
        items = node.get("items")
        if isinstance(items, dict):
            walk(items, f"{path}[]")

    walk(schema, "")
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    jsonschema.validate(values, schema)
