"""Where a NemotronDeployment's checkpoint lives in the simulated cluster: its
``spec.model.source.pvc`` (claim and path) under the kubelet's claims directory."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any


def checkpoint_dir(deployment: Mapping[str, Any], claims_root: Path) -> Path:
    """``claims_root/namespace/claim/path``; ValueError naming the field when it is missing."""
    model = (deployment.get("spec") or {}).get("model") or {}
    pvc = (model.get("source") or {}).get("pvc")
    if not isinstance(pvc, Mapping) or not pvc.get("claimName"):
        raise ValueError(
            "spec.model.source.pvc.claimName: a tiny checkpoint is written onto a claim; set "
            "spec.model.source.pvc (claimName, path) and spec.model.architecture"
        )
    namespace = str((deployment.get("metadata") or {}).get("namespace") or "default")
    inside = str(pvc.get("path") or "/").strip("/")
    return claims_root / namespace / str(pvc["claimName"]) / inside
