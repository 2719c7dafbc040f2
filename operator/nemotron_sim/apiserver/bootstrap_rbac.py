"""The RBAC objects kube-apiserver creates at start (its rbac ``bootstrappolicy``): discovery
and the self-reviews for every authenticated user, and ``cluster-admin`` for the
``system:masters`` group. Only these; the aggregated ``admin``/``edit``/``view`` roles are not
created (see docs/simulated-cluster.md)."""

from __future__ import annotations

from typing import Any

from nemotron_sim.kubeapi.resources import ResourceKey

_RBAC = "rbac.authorization.k8s.io"
CLUSTER_ROLES = ResourceKey(_RBAC, "v1", "clusterroles")
CLUSTER_ROLE_BINDINGS = ResourceKey(_RBAC, "v1", "clusterrolebindings")
_METADATA = {
    "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
    "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
}
_PUBLIC_INFO = ["/healthz", "/livez", "/readyz", "/version", "/version/"]
_DISCOVERY = ["/api", "/api/*", "/apis", "/apis/*", "/openapi", "/openapi/*", *_PUBLIC_INFO]


def _role(name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {"metadata": {"name": name, **_METADATA}, "rules": rules}


def _binding(name: str, *groups: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, **_METADATA},
        "roleRef": {"apiGroup": _RBAC, "kind": "ClusterRole", "name": name},
        "subjects": [{"apiGroup": _RBAC, "kind": "Group", "name": g} for g in groups],
    }


CLUSTER_ROLE_OBJECTS = (
    _role(
        "cluster-admin",
        [
            {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
            {"nonResourceURLs": ["*"], "verbs": ["*"]},
        ],
    ),
    _role("system:discovery", [{"nonResourceURLs": _DISCOVERY, "verbs": ["get"]}]),
    _role("system:public-info-viewer", [{"nonResourceURLs": _PUBLIC_INFO, "verbs": ["get"]}]),
    _role(
        "system:basic-user",
        [
            {
                "apiGroups": ["authorization.k8s.io"],
                "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                "verbs": ["create"],
            },
            {
                "apiGroups": ["authentication.k8s.io"],
                "resources": ["selfsubjectreviews"],
                "verbs": ["create"],
            },
        ],
    ),
)
CLUSTER_ROLE_BINDING_OBJECTS = (
    _binding("cluster-admin", "system:masters"),
    _binding("system:discovery", "system:authenticated"),
    _binding("system:basic-user", "system:authenticated"),
    _binding("system:public-info-viewer", "system:authenticated", "system:unauthenticated"),
)
