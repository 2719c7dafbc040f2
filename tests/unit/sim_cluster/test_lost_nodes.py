"""The kubelet of a lost node does not act on its pods until its heartbeat resumes."""

from __future__ import annotations

from typing import Any

from nemotron_sim.kubeapi.kinds import PODS
from nemotron_sim.kubeapi.resources import ResourceKey, WatchEvent
from nemotron_sim.kubelet.lost_nodes import LostNodeGate


def pod(name: str, node: str, **metadata: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ai", **metadata}, "spec": {"nodeName": node}}


class Store:
    def __init__(self, *pods: dict[str, Any]) -> None:
        self.pods = list(pods)

    def peek(self, key: ResourceKey, namespace: str | None, name: str) -> dict[str, Any] | None:
        return None

    def scan(self, key: ResourceKey, namespace: str | None = None) -> list[dict[str, Any]]:
        return list(self.pods) if key == PODS else []


def test_a_lost_nodes_pod_changes_wait_for_its_return_and_deletions_pass() -> None:
    lost = {"node-a"}
    seen: list[tuple[str, str]] = []
    marked = pod("nano-0", "node-a", deletionTimestamp="2026-12-05T07:00:00Z")
    other = pod("other-0", "node-b")
    gate = LostNodeGate(
        Store(marked, other),
        lambda e: seen.append((e.type, e.obj["metadata"]["name"])),
        lost.__contains__,
    )

    gate.observe(WatchEvent("MODIFIED", PODS, marked))  # marked for deletion: not confirmed
    gate.observe(WatchEvent("ADDED", PODS, other))
    assert seen == [("ADDED", "other-0")]
    gate.observe(WatchEvent("DELETED", PODS, marked))  # force-deleted: its stand-ins stop
    assert seen[-1] == ("DELETED", "nano-0")

    seen.clear()
    lost.discard("node-a")
    gate.node_back("node-a")  # the kubelet lists its node's pods again
    assert seen == [("MODIFIED", "nano-0")]
