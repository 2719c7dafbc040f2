"""Resource types by (group, version, plural), and the ones the simulated nodes use."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Cluster-scoped resources among those the simulator touches; everything else is namespaced.
_CLUSTER_SCOPED = frozenset(
    {
        ("", "nodes"),
        ("", "namespaces"),
        ("", "persistentvolumes"),
        ("storage.k8s.io", "storageclasses"),
        ("apiextensions.k8s.io", "customresourcedefinitions"),
        ("rbac.authorization.k8s.io", "clusterroles"),
        ("rbac.authorization.k8s.io", "clusterrolebindings"),
        ("karpenter.sh", "nodepools"),
        ("karpenter.sh", "nodeclaims"),
        ("resource.k8s.io", "resourceslices"),
        ("resource.k8s.io", "deviceclasses"),
    }
)


@dataclass(frozen=True)
class ResourceKey:
    """One served resource: ``group`` is ``""`` for the core group."""

    group: str
    version: str
    plural: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def namespaced(self) -> bool:
        return (self.group, self.plural) not in _CLUSTER_SCOPED

    def path(
        self, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> str:
        """The REST path of the collection (in ``namespace``) or of the object ``name``."""
        path = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if namespace and self.namespaced:
            path += f"/namespaces/{namespace}"
        path += f"/{self.plural}"
        if name:
            path += f"/{name}"
        if subresource:
            path += f"/{subresource}"
        return path

    def __str__(self) -> str:
        return f"{self.api_version}/{self.plural}"


@dataclass(frozen=True)
class WatchEvent:
    """``type`` is ADDED, MODIFIED or DELETED; ``obj`` is the object after the change."""

    type: str
    key: ResourceKey
    obj: dict[str, Any]
