"""Run Karpenter (kwok provider) against the simulated cluster's API server.

``hack/build-karpenter.sh`` builds it into ``.cache/karpenter/<key>/bin`` and copies its CRDs
(NodePool, NodeClaim, NodeOverlay, KWOKNodeClass) to ``.cache/karpenter/<key>/crds``; the key
names the version and a hash of ``hack/karpenter/go.mod`` and ``go.sum`` (computed here the same
way; a test checks the two agree). Karpenter runs as one process with leader election off, no
webhooks, the admin kubeconfig, the instance types of ``catalog``, and one ``KWOKNodeClass``
(``NODE_CLASS``) whose ``nodeRegistrationDelay`` models an instance's boot time.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nemotron_operator.kube.transport import APPLY, Transport
from nemotron_sim.kubeapi.resources import ResourceKey
from sim_cluster.controlplane.processes import Component, tail
from sim_cluster.karpenter.catalog import instance_types

_ROOT = Path(__file__).resolve().parents[3]
RECIPE = _ROOT / "hack" / "karpenter"
CACHE = _ROOT / ".cache" / "karpenter"
BINARY = "karpenter-kwok"
NODE_CLASSES = ResourceKey("karpenter.kwok.sh", "v1alpha1", "kwoknodeclasses")
NODE_CLASS = "default"  # the KWOKNodeClass NodePools name (group karpenter.kwok.sh)
NODE_CLASS_GROUP = "karpenter.kwok.sh"
NODE_CLASS_KIND = "KWOKNodeClass"
# Karpenter binds its metrics and health ports on every address; several simulated clusters share
# one network namespace, so each takes its own pair (the fault proxy holds 8080 on its address).
_PORT_BASE = 18080


class MissingKarpenterError(RuntimeError):
    """Karpenter is not built; the message says how to build it."""


@dataclass(frozen=True)
class Build:
    binary: Path
    crds: Path
    version: str


def version(recipe: Path = RECIPE) -> str:
    found = re.search(r"^\s*sigs\.k8s\.io/karpenter (v\S+)", (recipe / "go.mod").read_text(), re.M)
    if found is None:
        raise MissingKarpenterError(f"{recipe / 'go.mod'} does not require sigs.k8s.io/karpenter")
    return found.group(1)


def cache_key(recipe: Path = RECIPE) -> str:
    digest = hashlib.sha256()
    for name in ("go.mod", "go.sum"):
        digest.update((recipe / name).read_bytes())
    return f"karpenter-{version(recipe)}_{digest.hexdigest()[:12]}"


def build() -> Build:
    directory = CACHE / cache_key()
    binary, crds = directory / "bin" / BINARY, directory / "crds"
    if not os.access(binary, os.X_OK) or len(list(crds.glob("*.yaml"))) < 4:
        raise MissingKarpenterError(
            f"no Karpenter in {directory}: build it with hack/build-karpenter.sh (hack/test.sh "
            "does it on its first run)"
        )
    return Build(binary, crds, version())


def node_class(registration_delay: str = "0s") -> dict[str, Any]:
    return {
        "apiVersion": f"{NODE_CLASS_GROUP}/v1alpha1",
        "kind": NODE_CLASS_KIND,
        "metadata": {"name": NODE_CLASS},
        "spec": {"nodeRegistrationDelay": registration_delay},
    }


async def apply_node_class(api: Transport, registration_delay: str = "0s") -> None:
    await api.request(
        "PATCH", NODE_CLASSES.path(None, NODE_CLASS),
        body=node_class(registration_delay), content_type=APPLY,
        params={"fieldManager": "nemotron-sim", "force": "true"},
    )  # fmt: skip


def component(found: Build, workdir: Path, kubeconfig: Path, cluster_index: int) -> Component:
    """The Karpenter process (not started); its health endpoint answers once it runs."""
    workdir.mkdir(parents=True, exist_ok=True)
    catalog = workdir / "instance-types.json"
    catalog.write_text(json.dumps(instance_types(), indent=1))
    metrics, health = _PORT_BASE + 2 * cluster_index, _PORT_BASE + 2 * cluster_index + 1
    argv = [
        "env", f"KUBECONFIG={kubeconfig}", "SYSTEM_NAMESPACE=kube-system",
        str(found.binary),
        f"--instance-types-file-path={catalog}",
        "--disable-leader-election",
        f"--metrics-port={metrics}",
        f"--health-probe-port={health}",
        "--log-level=info",
    ]  # fmt: skip
    return Component(
        "karpenter", argv, workdir / "karpenter.log", f"http://127.0.0.1:{health}/healthz"
    )


def log_tail(component_: Component) -> str:
    return tail(component_.log_path)
