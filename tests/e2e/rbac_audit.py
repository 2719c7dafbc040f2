"""The RBAC audit of the e2e suite: what the chart grants, and the grants its flow never uses."""

from __future__ import annotations

import yaml

from tests.e2e.cluster import OPERATOR_NAMESPACE, RELEASE, E2ECluster

Grant = tuple[str, str, str]  # (API group, resource[/subresource], verb)

# Grants the e2e flow (test_install_and_serve) does not exercise, and why the chart keeps each.
_SSA_CREATE = (
    "a server-side apply that creates an object is authorized for create as well as patch "
    "(kube-apiserver's patch handler checks create in-line; the audit log records the request "
    "as patch only)"
)
_OBSOLETE_CHILD = (
    "a child that is no longer desired is deleted (a layout change drops headless workers or the "
    "PDB); this flow never changes the layout"
)
_ONE_POD = (
    "the PodDisruptionBudget of a deployment that can run more than one serving pod "
    "(render/services.py); the example serves one pod, which needs none"
)
_SHARED_CACHE = "the shared weight cache claim (spec.storage.cache.shared); the example has none"
_NETWORK_POLICY = "spec.networkPolicy (opt-in); the example has none"
_STORE_MISS = (
    "a reconcile reads its NemotronDeployment from the store kopf's watch fills and GETs it only "
    "when the store does not have it yet (controller/watch/deployment_store.py): whether that "
    "happens in this flow depends on timing"
)
_LWS = (
    "spec.multiNode on a LeaderWorkerSet: listed and watched only where LWS's CRD is served (the "
    "e2e cluster has no LWS; tests/integration/lws runs the real controller), written only for a "
    "plan whose replica spans nodes; the example fits one node"
)
_RANKS = (
    "a multi-node replica on StatefulSets whose worker died: its leader is deleted so that the "
    "ranks re-form (controller/decide/ranks.py, tests/integration/lws/test_failed_rank.py); the "
    "example fits one node"
)
# Grants the flow uses or not depending on timing: neither required nor refused by the audit.
SOMETIMES_USED: dict[Grant, str] = {
    ("serving.nemotron.io", "nemotrondeployments", "get"): _STORE_MISS,
}
UNUSED_GRANTS: dict[Grant, str] = {
    ("apps", "statefulsets", "create"): _SSA_CREATE,
    ("", "services", "create"): _SSA_CREATE,
    ("policy", "poddisruptionbudgets", "create"): _ONE_POD,
    ("policy", "poddisruptionbudgets", "patch"): _ONE_POD,
    ("apps", "statefulsets", "delete"): _OBSOLETE_CHILD,
    ("", "services", "delete"): _OBSOLETE_CHILD,
    ("policy", "poddisruptionbudgets", "delete"): _OBSOLETE_CHILD,
    ("leaderworkerset.x-k8s.io", "leaderworkersets", "list"): _LWS,
    ("leaderworkerset.x-k8s.io", "leaderworkersets", "watch"): _LWS,
    ("leaderworkerset.x-k8s.io", "leaderworkersets", "create"): _LWS,
    ("leaderworkerset.x-k8s.io", "leaderworkersets", "patch"): _LWS,
    ("leaderworkerset.x-k8s.io", "leaderworkersets", "delete"): _LWS,
    ("", "pods", "delete"): _RANKS,
    ("networking.k8s.io", "networkpolicies", "create"): _NETWORK_POLICY,
    ("networking.k8s.io", "networkpolicies", "patch"): _NETWORK_POLICY,
    ("networking.k8s.io", "networkpolicies", "delete"): _NETWORK_POLICY,
    ("", "persistentvolumeclaims", "create"): _SHARED_CACHE,
    ("", "persistentvolumeclaims", "patch"): _SHARED_CACHE,
    ("", "persistentvolumeclaims", "delete"): _SHARED_CACHE,
    ("batch", "jobs", "create"): _SHARED_CACHE + ": its download Job",
    ("batch", "jobs", "patch"): _SHARED_CACHE + ": its download Job",
    ("batch", "jobs", "delete"): _SHARED_CACHE + ": its download Job, pruned for a new revision",
    ("serving.nemotron.io", "nemotrondeployments", "patch"): (
        "the NodePool finalizer, only with spec.nodePool.provisioner Karpenter"
    ),
    ("serving.nemotron.io", "nemotrondeployments/scale", "patch"): (
        "the autoscaler, only with spec.autoscaling"
    ),
    ("serving.nemotron.io", "nemotrondeployments/finalizers", "update"): (
        "blockOwnerDeletion on the children, which the OwnerReferencesPermissionEnforcement "
        "admission plugin (OpenShift, hardened clusters; enabled in the test control plane) "
        "checks in-line when a child is written: never a request of its own in the audit log"
    ),
}


def chart_grants(cluster: E2ECluster) -> set[Grant]:
    """(group, resource, verb) of every rule of the installed release's Roles and ClusterRoles."""
    manifest = cluster.helm("get", "manifest", RELEASE, "--namespace", OPERATOR_NAMESPACE).stdout
    granted = set()
    for obj in yaml.safe_load_all(manifest):
        if obj and obj["kind"] in {"Role", "ClusterRole"}:
            for rule in obj["rules"]:
                if "nonResourceURLs" in rule:
                    continue  # the metrics-reader ClusterRole: Prometheus's, not the operator's
                granted |= {
                    (group, resource, verb)
                    for group in rule["apiGroups"]
                    for resource in rule["resources"]
                    for verb in rule["verbs"]
                }
    return granted
