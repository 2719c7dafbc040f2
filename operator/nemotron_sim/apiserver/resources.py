"""What the stand-in serves: resource types, their discovery data, and CRD registration.

The built-in table lists the types an operator of this project and its tests meet (with the
verbs, short names and categories of Kubernetes 1.33); a CRD adds its served versions the moment
it is created, as a real API server does once the CRD is Established.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nemotron_sim.kubeapi.resources import ResourceKey

VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class ScaleSpec:
    """JSON paths (dotted, ``.spec.replicas``) behind the ``scale`` subresource."""

    spec_replicas: str = ".spec.replicas"
    status_replicas: str = ".status.replicas"
    label_selector: str | None = ".status.selector"


@dataclass(frozen=True)
class ResourceInfo:
    key: ResourceKey
    kind: str
    namespaced: bool = True
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    status: bool = False
    scale: ScaleSpec | None = None
    printer_columns: tuple[dict[str, Any], ...] = ()
    crd_name: str | None = None
    storage: bool = True
    verbs: tuple[str, ...] = VERBS
    extra_subresources: tuple[str, ...] = ()
    read_subresources: tuple[str, ...] = ()  # GET only, e.g. pods/log

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    def discovery_entries(self) -> list[dict[str, Any]]:
        """APIResource entries; subresources carry no short names (kmock 0.8 copied them)."""
        main: dict[str, Any] = {
            "name": self.key.plural,
            "singularName": self.singular,
            "namespaced": self.namespaced,
            "kind": self.kind,
            "verbs": list(self.verbs),
        }
        if self.short_names:
            main["shortNames"] = list(self.short_names)
        if self.categories:
            main["categories"] = list(self.categories)
        entries = [main]
        sub_verbs = ["get", "patch", "update"]
        if self.status:
            entries.append(self._sub("status", self.kind, sub_verbs))
        if self.scale is not None:
            scale = self._sub("scale", "Scale", sub_verbs)
            scale["group"], scale["version"] = "autoscaling", "v1"
            entries.append(scale)
        for name in self.extra_subresources:
            sub = self._sub(name, self.kind, ["create"])
            group, version, sub["kind"] = _SUBRESOURCE_KINDS.get(name, ("", "", self.kind))
            if group:
                sub["group"], sub["version"] = group, version
            entries.append(sub)
        entries.extend(self._sub(name, self.kind, ["get"]) for name in self.read_subresources)
        return entries

    def _sub(self, name: str, kind: str, verbs: list[str]) -> dict[str, Any]:
        return {
            "name": f"{self.key.plural}/{name}",
            "singularName": "",
            "namespaced": self.namespaced,
            "kind": kind,
            "verbs": verbs,
        }


# Create-only subresources whose body is another group's kind, as kube-apiserver lists them.
_SUBRESOURCE_KINDS = {
    "eviction": ("policy", "v1", "Eviction"),
    "binding": ("", "v1", "Binding"),
    "token": ("authentication.k8s.io", "v1", "TokenRequest"),
}
CREATE_ONLY = ("create",)


def _r(
    api_version: str, plural: str, kind: str, *, cluster: bool = False, **kw: Any
) -> ResourceInfo:
    group, _, version = api_version.rpartition("/")
    return ResourceInfo(ResourceKey(group, version, plural), kind, namespaced=not cluster, **kw)


_ALL = ("all",)
BUILTIN: tuple[ResourceInfo, ...] = (
    _r("v1", "namespaces", "Namespace", cluster=True, short_names=("ns",), status=True),
    _r("v1", "pods", "Pod", short_names=("po",), categories=_ALL, status=True,
       extra_subresources=("eviction", "binding"), read_subresources=("log",)),
    _r("v1", "services", "Service", short_names=("svc",), categories=_ALL, status=True),
    _r("v1", "configmaps", "ConfigMap", short_names=("cm",)),
    _r("v1", "secrets", "Secret"),
    _r("v1", "endpoints", "Endpoints", short_names=("ep",)),
    _r("v1", "events", "Event", short_names=("ev",)),
    _r("v1", "nodes", "Node", cluster=True, short_names=("no",), status=True),
    _r("v1", "persistentvolumeclaims", "PersistentVolumeClaim", short_names=("pvc",),
       status=True),
    _r("v1", "persistentvolumes", "PersistentVolume", cluster=True, short_names=("pv",),
       status=True),
    _r("v1", "serviceaccounts", "ServiceAccount", short_names=("sa",),
       extra_subresources=("token",)),
    _r("v1", "resourcequotas", "ResourceQuota", short_names=("quota",), status=True),
    _r("v1", "limitranges", "LimitRange", short_names=("limits",)),
    _r("apps/v1", "statefulsets", "StatefulSet", short_names=("sts",), categories=_ALL,
       status=True, scale=ScaleSpec()),
    _r("apps/v1", "deployments", "Deployment", short_names=("deploy",), categories=_ALL,
       status=True, scale=ScaleSpec()),
    _r("apps/v1", "replicasets", "ReplicaSet", short_names=("rs",), categories=_ALL,
       status=True, scale=ScaleSpec()),
    _r("apps/v1", "daemonsets", "DaemonSet", short_names=("ds",), categories=_ALL, status=True),
    _r("apps/v1", "controllerrevisions", "ControllerRevision"),
    _r("batch/v1", "jobs", "Job", categories=_ALL, status=True),
    _r("batch/v1", "cronjobs", "CronJob", short_names=("cj",), categories=_ALL, status=True),
    _r("autoscaling/v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler",
       short_names=("hpa",), categories=_ALL, status=True),
    _r("policy/v1", "poddisruptionbudgets", "PodDisruptionBudget", short_names=("pdb",),
       status=True),
    _r("apiextensions.k8s.io/v1", "customresourcedefinitions", "CustomResourceDefinition",
       cluster=True, short_names=("crd", "crds"), categories=("api-extensions",), status=True),
    _r("coordination.k8s.io/v1", "leases", "Lease"),
    _r("events.k8s.io/v1", "events", "Event", short_names=("ev",)),
    _r("discovery.k8s.io/v1", "endpointslices", "EndpointSlice"),
    _r("networking.k8s.io/v1", "networkpolicies", "NetworkPolicy", short_names=("netpol",)),
    _r("networking.k8s.io/v1", "ingresses", "Ingress", short_names=("ing",), status=True),
    _r("rbac.authorization.k8s.io/v1", "roles", "Role"),
    _r("rbac.authorization.k8s.io/v1", "rolebindings", "RoleBinding"),
    _r("rbac.authorization.k8s.io/v1", "clusterroles", "ClusterRole", cluster=True),
    _r("rbac.authorization.k8s.io/v1", "clusterrolebindings", "ClusterRoleBinding",
       cluster=True),
    # Reviews: answered at once (nemotron_sim.apiserver.reviews), never stored.
    _r("authentication.k8s.io/v1", "tokenreviews", "TokenReview", cluster=True,
       verbs=CREATE_ONLY),
    _r("authentication.k8s.io/v1", "selfsubjectreviews", "SelfSubjectReview", cluster=True,
       verbs=CREATE_ONLY),
    _r("authorization.k8s.io/v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview",
       cluster=True, verbs=CREATE_ONLY),
    _r("authorization.k8s.io/v1", "selfsubjectrulesreviews", "SelfSubjectRulesReview",
       cluster=True, verbs=CREATE_ONLY),
    _r("authorization.k8s.io/v1", "subjectaccessreviews", "SubjectAccessReview", cluster=True,
       verbs=CREATE_ONLY),
    _r("authorization.k8s.io/v1", "localsubjectaccessreviews", "LocalSubjectAccessReview",
       verbs=CREATE_ONLY),
    _r("storage.k8s.io/v1", "storageclasses", "StorageClass", cluster=True,
       short_names=("sc",)),
    _r("scheduling.k8s.io/v1", "priorityclasses", "PriorityClass", cluster=True,
       short_names=("pc",)),
)  # fmt: skip

NAMESPACE_KEY = ResourceKey("", "v1", "namespaces")
CRD_KEY = ResourceKey("apiextensions.k8s.io", "v1", "customresourcedefinitions")


@dataclass
class Registry:
    """Served resources by key, by storage bucket and by kind; CRDs come and go."""

    _by_key: dict[ResourceKey, ResourceInfo] = field(default_factory=dict)
    _by_crd: dict[str, list[ResourceKey]] = field(default_factory=dict)

    @classmethod
    def builtin(cls) -> Registry:
        registry = cls()
        for info in BUILTIN:
            registry.add(info)
        return registry

    def add(self, info: ResourceInfo) -> None:
        self._by_key[info.key] = info

    def get(self, key: ResourceKey) -> ResourceInfo | None:
        return self._by_key.get(key)

    def all(self) -> list[ResourceInfo]:
        return list(self._by_key.values())

    def storage_info(self, bucket: tuple[str, str]) -> ResourceInfo | None:
        """The storage version's info for a bucket (the one objects are written as)."""
        found = None
        for info in self._by_key.values():
            if info.key.bucket == bucket:
                if info.storage:
                    return info
                found = info
        return found

    def by_kind(self, api_version: str, kind: str) -> ResourceInfo | None:
        group = api_version.rpartition("/")[0]
        version = api_version.rpartition("/")[2]
        fallback = None
        for info in self._by_key.values():
            if info.kind == kind and info.key.group == group:
                if info.key.version == version:
                    return info
                fallback = fallback or info
        return fallback

    def groups(self) -> dict[str, list[str]]:
        """Group → served versions, preferred (storage) version first; core group is ``""``."""
        out: dict[str, list[str]] = {}
        for info in self._by_key.values():
            versions = out.setdefault(info.key.group, [])
            if info.key.version not in versions:
                if info.storage:
                    versions.insert(0, info.key.version)
                else:
                    versions.append(info.key.version)
        return out

    def resources_of(self, group: str, version: str) -> list[ResourceInfo]:
        return [
            i for i in self._by_key.values() if i.key.group == group and i.key.version == version
        ]

    def register_crd(self, crd: dict[str, Any]) -> None:
        """Serve every ``served`` version of a CRD (replacing what an older revision served)."""
        name = crd["metadata"]["name"]
        self.unregister_crd(name)
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        keys = []
        for version in spec.get("versions") or []:
            if not version.get("served", True):
                continue
            subresources = version.get("subresources") or {}
            scale = subresources.get("scale")
            info = ResourceInfo(
                key=ResourceKey(spec["group"], version["name"], names["plural"]),
                kind=names["kind"],
                namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                status="status" in subresources,
                scale=None
                if scale is None
                else ScaleSpec(
                    scale.get("specReplicasPath", ".spec.replicas"),
                    scale.get("statusReplicasPath", ".status.replicas"),
                    scale.get("labelSelectorPath"),
                ),
                printer_columns=tuple(version.get("additionalPrinterColumns") or ()),
                crd_name=name,
                storage=bool(version.get("storage", False)),
            )
            self.add(info)
            keys.append(info.key)
        self._by_crd[name] = keys

    def unregister_crd(self, name: str) -> None:
        for key in self._by_crd.pop(name, []):
            self._by_key.pop(key, None)
