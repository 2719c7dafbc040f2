"""What the simulated kubelet needs of the cluster's objects: the part of a store that
:class:`~nemotron_sim.kubeapi.mirror.Mirror` offers over kube-apiserver (unit tests pass fakes)."""

from __future__ import annotations

from typing import Any, Protocol

from nemotron_sim.kubeapi.resources import ResourceKey


class ObjectStore(Protocol):
    def peek(self, key: ResourceKey, namespace: str | None, name: str) -> dict[str, Any] | None:
        """The current object, read-only (no copy)."""

    def scan(self, key: ResourceKey, namespace: str | None = None) -> list[dict[str, Any]]:
        """The objects of a kind (in one namespace), read-only."""

    def merge_patch(
        self,
        key: ResourceKey,
        namespace: str | None,
        name: str,
        patch: dict[str, Any],
        *,
        subresource: str | None = None,
    ) -> object: ...

    def create(self, key: ResourceKey, obj: dict[str, Any]) -> object: ...

    def delete(
        self,
        key: ResourceKey,
        namespace: str | None,
        name: str,
        *,
        grace_period: int | None = None,
        preconditions: dict[str, Any] | None = None,
    ) -> object: ...
