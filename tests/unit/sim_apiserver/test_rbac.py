"""The RBAC evaluator, table-driven: the same cases through the pure functions and through the
cached authorizer over a store (which must agree)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from nemotron_sim.apiserver import Store
from nemotron_sim.apiserver.authz import (
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    ROLE_BINDINGS,
    ROLES,
    RbacAuthorizer,
)
from nemotron_sim.apiserver.rbac import (
    Attributes,
    Decision,
    Policy,
    authorize,
    forbidden_details,
    forbidden_message,
    request_attributes,
    rule_allows,
    rules_for,
)
from nemotron_sim.apiserver.resources import NAMESPACE_KEY
from nemotron_sim.apiserver.tokens import UserInfo, service_account_user

RBAC = "rbac.authorization.k8s.io"
OP = service_account_user("ai", "op")
OTHER_SA = service_account_user("ml", "op")
ALICE = UserInfo("alice", ("team-a", "system:authenticated"))


def role(name: str, rules: list[dict[str, Any]], namespace: str = "") -> dict[str, Any]:
    md = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"metadata": md, "rules": rules}


def binding(
    name: str, kind: str, role_name: str, subjects: list[dict[str, Any]], namespace: str = ""
) -> dict[str, Any]:
    md = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {
        "metadata": md,
        "roleRef": {"apiGroup": RBAC, "kind": kind, "name": role_name},
        "subjects": subjects,
    }


def rule(groups: list[str], resources: list[str], verbs: list[str], **kw: Any) -> dict[str, Any]:
    return {"apiGroups": groups, "resources": resources, "verbs": verbs, **kw}


SA_OP = {"kind": "ServiceAccount", "name": "op", "namespace": "ai"}
POLICY = Policy(
    roles=[
        role("pod-reader", [rule([""], ["pods"], ["get", "list", "watch"])], "ai"),
        role(
            "status-writer",
            [
                rule(["apps"], ["statefulsets/status"], ["update", "patch"]),
                rule(["serving.nemotron.io"], ["nemotrondeployments/finalizers"], ["update"]),
            ],
            "ai",
        ),
        role("one-config", [rule([""], ["configmaps"], ["get"], resourceNames=["cfg"])], "ai"),
    ],
    cluster_roles=[
        role("crd-reader", [rule(["serving.nemotron.io"], ["nemotrondeployments"], ["*"])]),
        role("node-reader", [rule([""], ["nodes"], ["get", "list"])]),
        role("scaler", [rule(["*"], ["*/scale"], ["patch"])]),
        role("health", [{"nonResourceURLs": ["/healthz", "/metrics/*"], "verbs": ["get"]}]),
        role("events", [rule(["", "events.k8s.io"], ["events"], ["create"])]),
    ],
    role_bindings=[
        binding(
            "read-pods", "Role", "pod-reader", [{"kind": "ServiceAccount", "name": "op"}], "ai"
        ),
        binding("status", "Role", "status-writer", [SA_OP], "ai"),
        binding("cfg", "Role", "one-config", [SA_OP], "ai"),
        binding("crds-in-ai", "ClusterRole", "crd-reader", [SA_OP], "ai"),
        binding("team", "ClusterRole", "events", [{"kind": "Group", "name": "team-a"}], "ml"),
        binding("dangling", "Role", "gone", [SA_OP], "dangling"),
    ],
    cluster_role_bindings=[
        binding("nodes", "ClusterRole", "node-reader", [{"kind": "User", "name": "alice"}]),
        binding("scale", "ClusterRole", "scaler", [SA_OP]),
        binding(
            "health", "ClusterRole", "health", [{"kind": "Group", "name": "system:authenticated"}]
        ),
        # A ServiceAccount subject without a namespace matches nothing in a ClusterRoleBinding.
        binding("no-ns", "ClusterRole", "node-reader", [{"kind": "ServiceAccount", "name": "op"}]),
    ],
)


def res(verb: str, group: str, resource: str, namespace: str = "", **kw: Any) -> Attributes:
    return Attributes(verb=verb, api_group=group, resource=resource, namespace=namespace, **kw)


def url(verb: str, path: str) -> Attributes:
    return Attributes(verb=verb, resource_request=False, path=path)


CASES = [
    # (user, attributes, allowed)
    (OP, res("list", "", "pods", "ai"), True),
    (OP, res("watch", "", "pods", "ai"), True),
    (OP, res("delete", "", "pods", "ai"), False),  # verb not granted
    (OP, res("list", "", "pods", "ml"), False),  # Role binds in its namespace only
    (OP, res("list", "", "pods"), False),  # nor at the cluster scope
    (OTHER_SA, res("list", "", "pods", "ai"), False),  # same name, other namespace
    (OP, res("list", "apps", "pods", "ai"), False),  # API group must match
    (OP, res("get", "", "pods", "ai", subresource="log"), False),  # pods/log is not pods
    (OP, res("patch", "apps", "statefulsets", "ai", subresource="status"), True),
    (OP, res("patch", "apps", "statefulsets", "ai"), False),  # status is not the object
    (
        OP,
        res("update", "serving.nemotron.io", "nemotrondeployments", "ai", subresource="finalizers"),
        True,
    ),
    (OP, res("get", "", "configmaps", "ai", name="cfg"), True),  # resourceNames
    (OP, res("get", "", "configmaps", "ai", name="other"), False),
    (OP, res("list", "", "configmaps", "ai"), False),  # a list has no name
    (OP, res("deletecollection", "serving.nemotron.io", "nemotrondeployments", "ai"), True),  # *
    (
        OP,
        res("get", "serving.nemotron.io", "nemotrondeployments", "ml"),
        False,
    ),  # ClusterRole via RoleBinding
    (OP, res("get", "serving.nemotron.io", "nemotrondeployments"), False),
    (OP, res("patch", "apps", "statefulsets", "ml", subresource="scale"), True),  # */scale, group *
    (OP, res("patch", "apps", "statefulsets", "ml"), False),
    (OP, res("list", "", "nodes"), False),
    (ALICE, res("list", "", "nodes"), True),  # User subject
    (ALICE, res("create", "events.k8s.io", "events", "ml"), True),  # Group subject
    (ALICE, res("create", "events.k8s.io", "events", "ai"), False),
    (OP, url("get", "/healthz"), True),
    (OP, url("get", "/metrics/cadvisor"), True),  # prefix*
    (OP, url("get", "/metrics"), False),
    (OP, url("post", "/healthz"), False),
]


def _store_with(policy: Policy) -> Store:
    store = Store()
    for ns in ("ai", "ml", "dangling"):
        store.create(NAMESPACE_KEY, {"metadata": {"name": ns}})
    for key, objects in (
        (ROLES, policy.roles),
        (CLUSTER_ROLES, policy.cluster_roles),
        (ROLE_BINDINGS, policy.role_bindings),
        (CLUSTER_ROLE_BINDINGS, policy.cluster_role_bindings),
    ):
        for obj in objects:
            store.create(key, dict(obj))
    return store


Evaluator = Callable[[UserInfo, Attributes], Decision]


@pytest.fixture(params=["pure", "cached"])
def evaluate(request: pytest.FixtureRequest) -> Evaluator:
    if request.param == "pure":
        return lambda user, attrs: authorize(attrs, user.username, user.groups, POLICY)
    return RbacAuthorizer(_store_with(POLICY)).authorize


@pytest.mark.parametrize(("user", "attrs", "allowed"), CASES)
def test_rbac_decisions(
    evaluate: Evaluator, user: UserInfo, attrs: Attributes, allowed: bool
) -> None:
    assert evaluate(user, attrs).allowed is allowed


def test_an_allow_names_the_binding_and_a_deny_names_missing_roles(evaluate: Evaluator) -> None:
    assert evaluate(OP, res("list", "", "pods", "ai")).reason == (
        'RBAC: allowed by RoleBinding "read-pods/ai" of Role "pod-reader" to ServiceAccount "op/ai"'
    )
    assert evaluate(OP, res("list", "", "pods", "dangling")) == Decision(
        False, 'RBAC: role.rbac.authorization.k8s.io "gone" not found'
    )
    assert evaluate(OP, res("list", "", "pods", "ml")) == Decision(False, "")


def test_wildcards_in_every_field() -> None:
    everything = rule(["*"], ["*"], ["*"])
    assert rule_allows(everything, res("escalate", "rbac.authorization.k8s.io", "roles", "x"))
    assert rule_allows(everything, res("get", "", "pods", "x", subresource="log"))
    assert not rule_allows(everything, url("get", "/healthz"))  # resources do not cover URLs
    assert rule_allows({"nonResourceURLs": ["*"], "verbs": ["*"]}, url("put", "/anything"))
    sub_wildcard = rule([""], ["*/status"], ["get"])
    assert rule_allows(sub_wildcard, res("get", "", "pods", "x", subresource="status"))
    assert not rule_allows(sub_wildcard, res("get", "", "pods", "x", subresource="log"))


def test_the_cached_authorizer_sees_rbac_changes() -> None:
    store = _store_with(Policy())
    authorizer = RbacAuthorizer(store)
    attrs = res("list", "", "pods", "ai")
    assert not authorizer.authorize(OP, attrs).allowed
    store.create(ROLES, role("r", [rule([""], ["pods"], ["list"])], "ai"))
    store.create(ROLE_BINDINGS, binding("b", "Role", "r", [SA_OP], "ai"))
    assert authorizer.authorize(OP, attrs).allowed
    store.delete(ROLES, "ai", "r")
    assert authorizer.authorize(OP, attrs) == Decision(
        False, 'RBAC: role.rbac.authorization.k8s.io "r" not found'
    )


def test_rules_for_lists_cluster_and_namespace_rules() -> None:
    rules, errors = rules_for(OP.username, OP.groups, "ai", POLICY)
    resources = sorted(r for rl in rules for r in rl.get("resources", []))
    assert resources == [
        "*/scale",
        "configmaps",
        "nemotrondeployments",
        "nemotrondeployments/finalizers",
        "pods",
        "statefulsets/status",
    ]
    assert errors == []
    assert rules_for(OP.username, OP.groups, "dangling", POLICY)[1] == [
        'role.rbac.authorization.k8s.io "gone" not found'
    ]
    cached = RbacAuthorizer(_store_with(POLICY)).rules(OP, "ai")
    assert sorted(map(str, cached[0])) == sorted(map(str, rules))


VERBS = [
    # (method, path, query, expected attributes)
    ("GET", "/api/v1/namespaces/ai/pods", {}, res("list", "", "pods", "ai", api_version="v1")),
    (
        "GET",
        "/api/v1/namespaces/ai/pods",
        {"watch": "true"},
        res("watch", "", "pods", "ai", api_version="v1"),
    ),
    (
        "GET",
        "/api/v1/namespaces/ai/pods",
        {"watch": "false"},
        res("list", "", "pods", "ai", api_version="v1"),
    ),
    (
        "GET",
        "/api/v1/watch/namespaces/ai/pods",
        {},
        res("watch", "", "pods", "ai", api_version="v1"),
    ),
    (
        "GET",
        "/api/v1/namespaces/ai/pods/p",
        {},
        res("get", "", "pods", "ai", api_version="v1", name="p"),
    ),
    (
        "GET",
        "/api/v1/namespaces/ai/pods",
        {"fieldSelector": "metadata.name=p"},
        res("list", "", "pods", "ai", api_version="v1", name="p"),
    ),
    (
        "GET",
        "/api/v1/namespaces/ai/pods/p/log",
        {},
        res("get", "", "pods", "ai", api_version="v1", name="p", subresource="log"),
    ),
    ("POST", "/api/v1/namespaces/ai/pods", {}, res("create", "", "pods", "ai", api_version="v1")),
    (
        "POST",
        "/api/v1/namespaces/ai/pods/p/eviction",
        {},
        res("create", "", "pods", "ai", api_version="v1", name="p", subresource="eviction"),
    ),
    (
        "PUT",
        "/apis/apps/v1/namespaces/ai/statefulsets/s/status",
        {},
        res(
            "update", "apps", "statefulsets", "ai", api_version="v1", name="s", subresource="status"
        ),
    ),
    (
        "PATCH",
        "/apis/apps/v1/namespaces/ai/statefulsets/s",
        {},
        res("patch", "apps", "statefulsets", "ai", api_version="v1", name="s"),
    ),
    (
        "DELETE",
        "/apis/apps/v1/namespaces/ai/statefulsets/s",
        {},
        res("delete", "apps", "statefulsets", "ai", api_version="v1", name="s"),
    ),
    (
        "DELETE",
        "/apis/apps/v1/namespaces/ai/statefulsets",
        {},
        res("deletecollection", "apps", "statefulsets", "ai", api_version="v1"),
    ),
    ("GET", "/api/v1/nodes", {}, res("list", "", "nodes", api_version="v1")),
    # A namespace is "in" itself; its status is its subresource, not a resource inside it.
    (
        "GET",
        "/api/v1/namespaces/ai",
        {},
        res("get", "", "namespaces", "ai", api_version="v1", name="ai"),
    ),
    (
        "PUT",
        "/api/v1/namespaces/ai/status",
        {},
        res("update", "", "namespaces", "ai", api_version="v1", name="ai", subresource="status"),
    ),
    (
        "GET",
        "/apis/serving.nemotron.io/v1alpha1",
        {},
        url("get", "/apis/serving.nemotron.io/v1alpha1"),
    ),
    ("GET", "/version", {}, url("get", "/version")),
    ("POST", "/openapi/v3", {}, url("post", "/openapi/v3")),
]


@pytest.mark.parametrize(("method", "path", "query", "expected"), VERBS)
def test_request_attributes_as_kube_apiserver_maps_them(
    method: str, path: str, query: dict[str, str], expected: Attributes
) -> None:
    got = request_attributes(method, path, query)
    assert got == replace(expected, path=path)


def test_forbidden_messages_as_kube_apiserver_words_them() -> None:
    who = "system:serviceaccount:ai:op"
    cases = [
        (
            res("list", "", "pods", "ai"),
            f'pods is forbidden: User "{who}" cannot list resource "pods" in API group "" in the '
            'namespace "ai"',
        ),
        (
            res("list", "", "nodes"),
            f'nodes is forbidden: User "{who}" cannot list resource "nodes" in API group "" at '
            "the cluster scope",
        ),
        (
            res("patch", "apps", "statefulsets", "ai", name="s", subresource="status"),
            f'statefulsets.apps "s" is forbidden: User "{who}" cannot patch resource '
            '"statefulsets/status" in API group "apps" in the namespace "ai"',
        ),
        (url("get", "/metrics"), f'forbidden: User "{who}" cannot get path "/metrics"'),
    ]
    for attrs, message in cases:
        assert forbidden_message(attrs, who) == message
    assert forbidden_message(res("list", "", "pods", "x"), who, "RBAC: nope").endswith(
        'in the namespace "x": RBAC: nope'
    )
    assert forbidden_details(cases[2][0]) == {"name": "s", "group": "apps", "kind": "statefulsets"}
    assert forbidden_details(cases[3][0]) == {}
