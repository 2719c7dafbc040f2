"""Helpers of the lost-node tests (test_controlplane_faults.py): a node's Ready condition and
taints, the pod's state after the out-of-service taint, docs/reliability.md's runbook lines."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from tests.integration.operator.helpers import NAMESPACE, PODS
from tests.kube import KubeHandle

ROOT = Path(__file__).resolve().parents[3]


def node_ready(cluster: KubeHandle, node: str) -> str:
    found = cluster.request("GET", f"/api/v1/nodes/{node}")
    conditions = found["status"]["conditions"]
    return next(str(c["status"]) for c in conditions if c["type"] == "Ready")


def taints(cluster: KubeHandle, node: str) -> set[str]:
    found = cluster.request("GET", f"/api/v1/nodes/{node}")
    return {t["key"] for t in found["spec"].get("taints") or []}


def taint_commands() -> list[list[str]]:
    """The ``kubectl taint`` lines of docs/reliability.md's runbook for a node gone for good (the
    out-of-service taint put on, then taken off), as kubectl arguments with ``$NODE`` unset."""
    text = (ROOT / "docs" / "reliability.md").read_text()
    section = text.split("## A GPU node gone for good", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("kubectl taint ")]
    return [shlex.split(line)[1:] for line in lines]


def terminating_or_gone(cluster: KubeHandle, pod: dict[str, Any]) -> str:
    found = cluster.get(PODS, NAMESPACE, pod["metadata"]["name"])
    if found is None or found["metadata"]["uid"] != pod["metadata"]["uid"]:
        return "gone"
    return "terminating" if found["metadata"].get("deletionTimestamp") else ""


def status_writes(writes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        w for w in writes if w["path"].split("?")[0].endswith("/nemotrondeployments/nano/status")
    ]
