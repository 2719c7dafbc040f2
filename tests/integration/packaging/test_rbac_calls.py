"""The chart grants every API call the operator's code can make, read from the code itself.

The e2e suite audits the calls one run makes; this test covers the paths a run does not take (an
autoscaler's scale patch, a NodePool's writes, a pruned child): every ``kube.<method>(RESOURCE,
...)`` call in ``nemotron_operator``, every kind kopf watches and every kind the watch cache
follows becomes (API group, resource,
verb), and each must be granted by the chart with its optional switches on. Without them, only
the optional kinds' writes may be missing. A grant that no call needs fails too, unless
NOT_CALLED_DIRECTLY says why it is kept.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import yaml

from nemotron_operator.controller.runtime import kopf_wiring
from nemotron_operator.controller.watch import child_cache, inventory
from nemotron_operator.controller.watch.served_kinds import crd_name
from nemotron_operator.kube import resources
from nemotron_operator.kube.resources import (
    CHILD_RESOURCES,
    CRDS,
    DRA_RESOURCES,
    GATEWAY_RESOURCES,
    GATEWAYS,
    OPTIONAL_RESOURCES,
    Resource,
)
from tests.helm import CHART, run_helm

PACKAGE = Path(__file__).resolve().parents[3] / "operator" / "nemotron_operator"
CLIENT = Path("kube/client.py")
# KubeClient method → the verbs the API server authorizes it as. A server-side apply that
# creates its object is authorized as create as well as patch (kube-apiserver's patch handler).
METHOD_VERBS = {
    "get": ("get",),
    "list": ("list",),
    "apply": ("patch", "create"),
    "delete": ("delete",),
    "patch": ("patch",),
    "create": ("create",),
    "replace": ("update",),
}
CLIENTS = {"kube", "self.kube", "self._kube"}
NOT_CALLED_DIRECTLY = {
    ("serving.nemotron.io", "nemotrondeployments/finalizers", "update"): (
        "owner references with blockOwnerDeletion on every child need it under "
        "OwnerReferencesPermissionEnforcement"
    ),
    # The endpoint picker's Role (render/gateway.py): RBAC lets the operator create it only
    # with these permissions of its own.
    ("", "pods", "get"): "the endpoint picker's Role grants it",
    ("inference.networking.k8s.io", "inferencepools", "get"): "the endpoint picker's Role",
    **{
        ("llm-d.ai", resource, verb): "the endpoint picker's Role grants it"
        for resource in ("inferenceobjectives", "inferencemodelrewrites")
        for verb in ("get", "list", "watch")
    },
}
SWITCHES = [
    "--set", "rbac.karpenterNodePools=true",
    "--set", "rbac.podMonitors=true",
    "--set", "rbac.kedaScaledObjects=true",
    "--set", "rbac.inferenceGateway=true",
    "--set", "rbac.dra=true",
]  # fmt: skip

Grant = tuple[str, str, str]


def resource_constants() -> dict[str, Resource]:
    return {k: v for k, v in vars(resources).items() if isinstance(v, Resource)}


def calls_in_code() -> set[tuple[Resource, str, str]]:
    """(resource, subresource, verb) for every KubeClient call on a known resource."""
    constants = resource_constants()
    found: set[tuple[Resource, str, str]] = set()
    unresolved = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE) == CLIENT:
            continue  # the client itself; kube/writes.py holds every write
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in METHOD_VERBS
                and ast.unparse(node.func.value) in CLIENTS
                and node.args
            ):
                continue
            first = node.args[0]
            if isinstance(first, ast.Name) and first.id in constants:
                targets = [constants[first.id]]
            elif isinstance(first, ast.Name) and first.id == "resource":
                targets = list(CHILD_RESOURCES)  # the loops over every child kind
            else:
                unresolved.append(f"{path.name}:{node.lineno}: {ast.unparse(node)[:80]}")
                continue
            subresource = next(
                (
                    k.value.value
                    for k in node.keywords
                    if k.arg == "subresource" and isinstance(k.value, ast.Constant)
                ),
                "",
            )
            found |= {(r, subresource, v) for r in targets for v in METHOD_VERBS[node.func.attr]}
    assert not unresolved, f"calls whose resource this test cannot tell: {unresolved}"
    return found


def needed(calls: set[tuple[Resource, str, str]]) -> set[Grant]:
    grants = {(r.group, f"{r.plural}/{sub}" if sub else r.plural, verb) for r, sub, verb in calls}
    # kopf lists and watches NemotronDeployments; the watch cache, the children and pods; the
    # GPU inventory, nodes and unfinished pods.
    watched = (
        *kopf_wiring.WATCHED,
        *child_cache.INFORMED,
        *inventory.WATCHED,
        *inventory.DRA_WATCHED,
    )
    for resource in (*watched, CRDS):
        grants |= {
            (resource.group, resource.plural, "list"),
            (resource.group, resource.plural, "watch"),
        }
    return grants


def granted(helm_environment: dict[str, str], *values: str) -> set[Grant]:
    rendered = run_helm(
        helm_environment, "template", "nemotron-operator", str(CHART), "-n", "ops", *values
    ).stdout
    grants: set[Grant] = set()
    for obj in yaml.safe_load_all(rendered):
        if obj and obj["kind"] in {"Role", "ClusterRole"}:
            for rule in obj["rules"]:
                if "nonResourceURLs" in rule:
                    continue  # the metrics-reader's /metrics: for Prometheus, not the operator
                grants |= {
                    (g, r, v)
                    for g in rule["apiGroups"]
                    for r in rule["resources"]
                    for v in rule["verbs"]
                }
    return grants


@pytest.fixture(scope="module")
def code_grants() -> set[Grant]:
    return needed(calls_in_code())


def test_the_code_calls_are_found(code_grants: set[Grant]) -> None:
    # A few calls the operator certainly makes: the scan works.
    assert {
        ("serving.nemotron.io", "nemotrondeployments", "get"),
        ("serving.nemotron.io", "nemotrondeployments/status", "patch"),
        ("apps", "statefulsets", "patch"),
        ("coordination.k8s.io", "leases", "update"),
        ("", "pods", "watch"),
    } <= code_grants


def test_the_chart_grants_every_call_the_code_makes(
    helm_environment: dict[str, str], code_grants: set[Grant]
) -> None:
    switches = SWITCHES
    for mode in ([], ["--set", "watchNamespaces={ai}"]):
        missing = code_grants - granted(helm_environment, *switches, *mode)
        assert not missing, f"the chart does not grant {sorted(missing)} ({mode or 'cluster-wide'})"
    optional = {(r.group, r.plural) for r in OPTIONAL_RESOURCES}
    gateway = {(r.group, r.plural) for r in (*GATEWAY_RESOURCES, GATEWAYS)}
    dra = {(r.group, r.plural) for r in (*DRA_RESOURCES, *inventory.DRA_WATCHED)}
    missing = code_grants - granted(helm_environment)
    # Without the switches: the optional kinds' writes, and nothing of the gateway's or DRA's
    # kinds (the operator runs without --inference-gateway and --dra and never reads them).
    assert all(
        (g, r) in gateway | dra or ((g, r) in optional and v != "list") for g, r, v in missing
    ), sorted(missing)
    assert {(g, r) for g, r, _ in missing} & gateway == gateway
    assert {(g, r) for g, r, _ in missing} & dra == dra


def test_every_grant_is_needed_by_a_call(
    helm_environment: dict[str, str], code_grants: set[Grant]
) -> None:
    extra = granted(helm_environment, *SWITCHES) - code_grants - set(NOT_CALLED_DIRECTLY)
    assert not extra, f"granted but no code calls it: {sorted(extra)}"


def test_the_crd_watches_may_read_exactly_the_optional_kinds_crds(
    helm_environment: dict[str, str],
) -> None:
    rendered = run_helm(
        helm_environment, "template", "nemotron-operator", str(CHART), "-n", "ops"
    ).stdout
    names: set[str] = set()
    for obj in yaml.safe_load_all(rendered):
        if obj and obj["kind"] == "ClusterRole":
            for rule in obj["rules"]:
                if "customresourcedefinitions" in rule.get("resources", ()):
                    assert rule.get("resourceNames"), "CRDs are readable only by name"
                    names |= set(rule["resourceNames"])
    assert names == {crd_name(r) for r in OPTIONAL_RESOURCES}
