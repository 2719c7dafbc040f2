"""The API resources the operator reads or writes, and their URLs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nemotron_operator.render.all import KIND_ORDER


@dataclass(frozen=True)
class Resource:
    """One API resource: ``group`` is "" for the core group."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def collection_url(self, namespace: str | None = None) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace is not None:
            return f"{base}/namespaces/{namespace}/{self.plural}"
        return f"{base}/{self.plural}"

    def object_url(self, namespace: str | None, name: str, subresource: str = "") -> str:
        url = f"{self.collection_url(namespace if self.namespaced else None)}/{name}"
        return f"{url}/{subresource}" if subresource else url


NEMOTRON_DEPLOYMENTS = Resource(
    "serving.nemotron.io", "v1alpha1", "nemotrondeployments", "NemotronDeployment"
)
NODES = Resource("", "v1", "nodes", "Node", namespaced=False)
PODS = Resource("", "v1", "pods", "Pod")
SERVICES = Resource("", "v1", "services", "Service")
PERSISTENT_VOLUME_CLAIMS = Resource("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim")
EVENTS = Resource("", "v1", "events", "Event")
STATEFULSETS = Resource("apps", "v1", "statefulsets", "StatefulSet")
# The weight download of a shared cache (render/download_job.py).
JOBS = Resource("batch", "v1", "jobs", "Job")
POD_DISRUPTION_BUDGETS = Resource("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget")
POD_MONITORS = Resource("monitoring.coreos.com", "v1", "podmonitors", "PodMonitor")
NODE_POOLS = Resource("karpenter.sh", "v1", "nodepools", "NodePool", namespaced=False)
# autoscaling.provider KEDA (render/scaledobject.py): KEDA's CRD, github.com/kedacore/keda/v2.
SCALED_OBJECTS = Resource("keda.sh", "v1alpha1", "scaledobjects", "ScaledObject")
# spec.multiNode on a LeaderWorkerSet (render/leaderworkerset.py): sigs.k8s.io/lws's CRD.
LEADER_WORKER_SETS = Resource(
    "leaderworkerset.x-k8s.io", "v1", "leaderworkersets", "LeaderWorkerSet"
)
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease")
CRDS = Resource(
    "apiextensions.k8s.io",
    "v1",
    "customresourcedefinitions",
    "CustomResourceDefinition",
    namespaced=False,
)
# spec.gateway: the InferencePool, its endpoint picker's objects, the HTTPRoute.
SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")
CONFIG_MAPS = Resource("", "v1", "configmaps", "ConfigMap")
ROLES = Resource("rbac.authorization.k8s.io", "v1", "roles", "Role")
ROLE_BINDINGS = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding")
DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment")
NETWORK_POLICIES = Resource("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy")
INFERENCE_POOLS = Resource("inference.networking.k8s.io", "v1", "inferencepools", "InferencePool")
HTTP_ROUTES = Resource("gateway.networking.k8s.io", "v1", "httproutes", "HTTPRoute")
# The /metrics guard's questions (kube/reviews.py): creates that store nothing.
TOKEN_REVIEWS = Resource(
    "authentication.k8s.io", "v1", "tokenreviews", "TokenReview", namespaced=False
)
SUBJECT_ACCESS_REVIEWS = Resource(
    "authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", namespaced=False
)
# capacity.gpu.allocation DRA (the operator runs with --dra): written, and read by the inventory.
RESOURCE_CLAIM_TEMPLATES = Resource(
    "resource.k8s.io", "v1", "resourceclaimtemplates", "ResourceClaimTemplate"
)
RESOURCE_CLAIMS = Resource("resource.k8s.io", "v1", "resourceclaims", "ResourceClaim")
RESOURCE_SLICES = Resource(
    "resource.k8s.io", "v1", "resourceslices", "ResourceSlice", namespaced=False
)
# Read, never written: the Gateway an HTTPRoute attaches to, for its address (status.endpoint).
GATEWAYS = Resource("gateway.networking.k8s.io", "v1", "gateways", "Gateway")

# Every kind render_all can produce, in its apply order (``render.all.KIND_ORDER``); the optional
# ones (served only when their CRD is installed) are looked up in discovery before use.
CHILD_RESOURCES: tuple[Resource, ...] = tuple(
    sorted(
        (
            NODE_POOLS,
            PERSISTENT_VOLUME_CLAIMS,
            JOBS,
            SERVICES,
            STATEFULSETS,
            LEADER_WORKER_SETS,
            POD_DISRUPTION_BUDGETS,
            POD_MONITORS,
            RESOURCE_CLAIM_TEMPLATES,
            SERVICE_ACCOUNTS,
            CONFIG_MAPS,
            ROLES,
            ROLE_BINDINGS,
            DEPLOYMENTS,
            INFERENCE_POOLS,
            HTTP_ROUTES,
            NETWORK_POLICIES,
            SCALED_OBJECTS,
        ),
        key=lambda resource: KIND_ORDER.index(resource.kind),
    )
)
OPTIONAL_RESOURCES: frozenset[Resource] = frozenset(
    {NODE_POOLS, POD_MONITORS, INFERENCE_POOLS, HTTP_ROUTES, SCALED_OBJECTS, LEADER_WORKER_SETS}
)
# Followed only when the operator runs with --dra (its RBAC is the chart's rbac.dra) and the
# cluster serves resource.k8s.io/v1.
DRA_RESOURCES: frozenset[Resource] = frozenset({RESOURCE_CLAIM_TEMPLATES})
# Followed only when the operator runs with --inference-gateway (their RBAC is the chart's
# rbac.inferenceGateway); the two CRDs among them also need discovery.
GATEWAY_RESOURCES: frozenset[Resource] = frozenset(
    {SERVICE_ACCOUNTS, CONFIG_MAPS, ROLES, ROLE_BINDINGS, DEPLOYMENTS, INFERENCE_POOLS, HTTP_ROUTES}
)


def resource_of(obj: dict[str, Any]) -> Resource:
    """The resource of a rendered object (by apiVersion and kind)."""
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    for resource in (*CHILD_RESOURCES, NEMOTRON_DEPLOYMENTS, PODS, EVENTS, LEASES, NODES):
        if resource.api_version == api_version and resource.kind == kind:
            return resource
    raise ValueError(f"no known resource for {api_version} {kind}")
