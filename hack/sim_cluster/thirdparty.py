"""The third-party CRDs the operator writes or reads, installed into the test control plane as
their projects publish them (Karpenter's NodePool and NodeClaim, the Prometheus Operator's
PodMonitor and ServiceMonitor), so that what the operator renders is checked by their own
schemas and validation rules. ``hack/build-controlplane.sh`` copies the files out of the pinned
Go modules (``hack/controlplane/crds/go.mod``)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from nemotron_operator.kube.transport import APPLY, Transport
from nemotron_sim.kubeapi.resources import ResourceKey

CRDS = ResourceKey("apiextensions.k8s.io", "v1", "customresourcedefinitions")
_ESTABLISH_SECONDS = 30.0


def load(sources: Sequence[Path]) -> list[dict[str, Any]]:
    """The CRDs in ``sources``: YAML files, or directories of them."""
    files = [f for s in sources for f in (sorted(s.glob("*.yaml")) if s.is_dir() else [s])]
    return [
        doc
        for path in files
        for doc in yaml.safe_load_all(path.read_text())
        if doc and doc.get("kind") == "CustomResourceDefinition"
    ]


def established(crd: dict[str, Any]) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


async def install_crds(api: Transport, sources: Sequence[Path]) -> list[str]:
    """Server-side apply each CRD and wait until the API server serves it; their names."""
    names = []
    for crd in load(sources):
        name = crd["metadata"]["name"]
        await api.request(
            "PATCH", CRDS.path(None, name),
            params={"fieldManager": "nemotron-sim", "force": "true"}, body=crd,
            content_type=APPLY,
        )  # fmt: skip
        names.append(name)
    async with asyncio.timeout(_ESTABLISH_SECONDS):
        for name in names:
            while not established(await api.request("GET", CRDS.path(None, name))):  # noqa: ASYNC110 (polling the API server)
                await asyncio.sleep(0.1)
    return names
