"""Where the control plane's binaries are: ``CONTROLPLANE_BIN_DIR``, else the build cache.

``hack/build-controlplane.sh`` builds kube-apiserver, kube-controller-manager, kube-scheduler
and etcd from the Go module ``hack/controlplane`` into ``.cache/controlplane/<key>/bin``, where
the key names the Kubernetes and etcd versions and a hash of ``go.mod`` and ``go.sum`` (so a
changed recipe builds afresh), and copies the third-party CRDs into
``.cache/controlplane/crds-<hash of crds/go.mod and crds/go.sum>`` (so a CRD added there costs
seconds, not a rebuild of the binaries). This module computes the same keys; a test checks the
two agree.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

BIN_DIR_ENV = "CONTROLPLANE_BIN_DIR"
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
_ROOT = Path(__file__).resolve().parents[3]
RECIPE = _ROOT / "hack" / "controlplane"
CACHE = _ROOT / ".cache" / "controlplane"


class MissingBinariesError(RuntimeError):
    """The binaries are not there; the message says how to get them."""


@dataclass(frozen=True)
class Versions:
    kubernetes: str
    etcd: str


def recipe_versions(recipe: Path = RECIPE) -> Versions:
    """The versions ``go.mod`` requires: ``k8s.io/kubernetes`` and etcd's server."""
    text = (recipe / "go.mod").read_text()

    def required(module: str) -> str:
        found = re.search(rf"^\s*{re.escape(module)} (v\S+)", text, re.MULTILINE)
        if found is None:
            raise MissingBinariesError(f"{recipe / 'go.mod'} does not require {module}")
        return found.group(1)

    return Versions(required("k8s.io/kubernetes"), required("go.etcd.io/etcd/server/v3"))


def cache_key(recipe: Path = RECIPE) -> str:
    versions = recipe_versions(recipe)
    digest = hashlib.sha256()
    for name in ("go.mod", "go.sum"):
        digest.update((recipe / name).read_bytes())
    return f"kubernetes-{versions.kubernetes}_etcd-{versions.etcd}_{digest.hexdigest()[:12]}"


def crd_key(recipe: Path = RECIPE) -> str:
    """The CRDs' directory name: a hash of the module file that pins their projects."""
    digest = hashlib.sha256()
    for name in ("crds/go.mod", "crds/go.sum"):
        digest.update((recipe / name).read_bytes())
    return f"crds-{digest.hexdigest()[:12]}"


def bin_dir() -> Path:
    """The directory holding the four binaries; MissingBinariesError when one is missing."""
    configured = os.environ.get(BIN_DIR_ENV)
    directory = Path(configured) if configured else CACHE / cache_key() / "bin"
    missing = [name for name in COMPONENTS if not os.access(directory / name, os.X_OK)]
    if missing:
        how = (
            f"{BIN_DIR_ENV}={configured} lacks them"
            if configured
            else "build them with hack/build-controlplane.sh (hack/test.sh does it on its "
            f"first run), or point {BIN_DIR_ENV} at a directory that has them"
        )
        raise MissingBinariesError(f"no {', '.join(missing)} in {directory}: {how}")
    return directory


def crd_dir() -> Path:
    """The third-party CRDs (Karpenter's NodePool and NodeClaim, the Prometheus Operator's
    PodMonitor and ServiceMonitor) the build script copied out of their Go modules."""
    directory = CACHE / crd_key()
    if not directory.is_dir() or not any(directory.glob("*.yaml")):
        raise MissingBinariesError(
            f"no third-party CRDs in {directory}: run hack/build-controlplane.sh (it copies "
            "them out of their Go modules)"
        )
    return directory
