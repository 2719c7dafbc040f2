"""Which optional kinds the cluster serves (PodMonitor, NodePool, ...): from watches of their
CustomResourceDefinitions, one per kind and selected by name, so that knowing costs no request
while nothing changes and a CRD installed or removed is known at once.

A kind is served when its CRD exists, is ``Established``, and serves the version the operator
uses. The CRDs are projected on exactly that (a PodMonitor CRD's schema is hundreds of KiB).
Until every watch has listed — or where the operator may not read CRDs (a chart without that
grant) — ``served`` is None and the caller asks discovery instead, as before.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from typing import Any

from nemotron_operator.kube import KubeClient
from nemotron_operator.kube.informer import Informer
from nemotron_operator.kube.resources import (
    CHILD_RESOURCES,
    CRDS,
    DRA_RESOURCES,
    GATEWAY_RESOURCES,
    OPTIONAL_RESOURCES,
    Resource,
)

# A watch denied (403) or failing keeps retrying at this pace, without alarming /healthz.
_BACKOFFS = (1.0, 5.0, 30.0, 60.0)
DISCOVERY_TTL = 30.0  # until the watches have listed: how long discovery's answer is kept


def crd_name(resource: Resource) -> str:
    return f"{resource.plural}.{resource.group}"


def crd_projection(crd: dict[str, Any]) -> dict[str, Any]:
    spec, status = crd.get("spec") or {}, crd.get("status") or {}
    return {
        "metadata": {"name": (crd.get("metadata") or {}).get("name")},
        "versions": sorted(v.get("name") for v in spec.get("versions") or [] if v.get("served")),
        "established": any(
            c.get("type") == "Established" and c.get("status") == "True"
            for c in status.get("conditions") or []
        ),
    }


class ServedKinds:
    def __init__(
        self,
        kube: KubeClient,
        resources: Iterable[Resource],
        on_change: Callable[[], None] | None = None,
    ) -> None:
        self.kube = kube
        self.on_change = on_change
        self.changed = asyncio.Event()  # set whenever what is served may have changed
        self._discovered: frozenset[Resource] | None = None
        self._discovered_at = -1e9
        self.watches = {
            resource: Informer(
                kube,
                CRDS,
                field_selector=f"metadata.name={crd_name(resource)}",
                project=crd_projection,
                listener=self._changed,
                backoffs=_BACKOFFS,
            )
            for resource in resources
        }

    def _changed(self, kind: str, obj: dict[str, Any]) -> None:
        self.changed.set()
        if self.on_change is not None:
            self.on_change()

    def served(self) -> frozenset[Resource] | None:
        """The optional kinds served now; None until every watch has listed."""
        if not all(w.synced.is_set() for w in self.watches.values()):
            return None
        found = set()
        for resource, watch in self.watches.items():
            crd = watch.get(None, crd_name(resource))
            if crd and crd.get("established") and resource.version in crd.get("versions", []):
                found.add(resource)
        return frozenset(found)

    async def current(self) -> frozenset[Resource]:
        """``served()``, or until the watches have listed, discovery (its answer kept 30 s)."""
        watched = self.served()
        if watched is not None:
            return watched
        if self._discovered is None or time.monotonic() - self._discovered_at > DISCOVERY_TTL:
            found = [r for r in self.watches if await self.kube.served(r)]
            self._discovered, self._discovered_at = frozenset(found), time.monotonic()
        return self._discovered

    def forget(self) -> None:
        """A served kind answered 404: ask discovery again next time (watches catch up)."""
        self._discovered = None


def served_children(
    discovered: frozenset[Resource],
    *,
    inference_gateway: bool,
    dra: bool,
    unserved: Iterable[Resource] = (),
) -> frozenset[Resource]:
    """Child kinds the cluster serves: the built-in ones, the optional ones whose CRD was
    discovered, the gateway's and DRA's only where the operator runs with them
    (--inference-gateway, --dra, and their RBAC), less those whose watch got a 404."""
    found = {r for r in CHILD_RESOURCES if r not in OPTIONAL_RESOURCES} | discovered
    if not inference_gateway:
        found -= GATEWAY_RESOURCES
    if not dra:
        found -= DRA_RESOURCES
    return frozenset(found) - frozenset(unserved)
