"""The adopter: a node Karpenter's kwok provider created becomes a simulated node once it has a
pod CIDR; a deleted one takes its pods with it. Fakes for the watch cache and the heartbeat."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, cast

from nemotron_sim.agents.nodes import NODES, NodeAgent
from nemotron_sim.kubeapi.kinds import PODS
from nemotron_sim.kubeapi.mirror import Mirror
from nemotron_sim.kubeapi.resources import ResourceKey, WatchEvent
from sim_cluster.karpenter.adopt import NodeAdopter


class FakeMirror:
    def __init__(self, pods: list[dict[str, Any]]) -> None:
        self.pods = pods
        self.callbacks: list[Callable[[WatchEvent], None]] = []
        self.patches: list[tuple[str, dict[str, Any], str | None]] = []
        self.deleted: list[tuple[str, int | None]] = []

    def on_event(self, keys: Iterable[ResourceKey], callback: Callable[[WatchEvent], None]) -> None:
        self.callbacks.append(callback)

    def scan(self, key: ResourceKey, namespace: str | None = None) -> list[dict[str, Any]]:
        return list(self.pods) if key == PODS else []

    def merge_patch(
        self, key: ResourceKey, namespace: str | None, name: str, patch: dict[str, Any], *,
        subresource: str | None = None,
    ) -> None:  # fmt: skip
        self.patches.append((name, patch, subresource))

    def delete(
        self, key: ResourceKey, namespace: str | None, name: str, *,
        grace_period: int | None = None, preconditions: dict[str, Any] | None = None,
    ) -> None:  # fmt: skip
        self.deleted.append((name, grace_period))

    def send(self, kind: str, node: dict[str, Any]) -> None:
        for callback in self.callbacks:
            callback(WatchEvent(kind, NODES, node))


class FakeAgent:
    def __init__(self) -> None:
        self.nodes: dict[str, dict[str, Any]] = {}
        self.stopped: set[str] = set()


def kwok_node(cidr: str | None = None, provider: str = "kwok://kwok-a") -> dict[str, Any]:
    spec: dict[str, Any] = {"providerID": provider}
    if cidr:
        spec["podCIDR"] = cidr
    labels = {"node.kubernetes.io/instance-type": "sim-8x-nvidia-h200"}
    return {"metadata": {"name": "kwok-a", "uid": "u", "labels": labels}, "spec": spec}


def adopter(pods: list[dict[str, Any]]) -> tuple[NodeAdopter, FakeMirror, FakeAgent, list[Any]]:
    mirror, agent, calls = FakeMirror(pods), FakeAgent(), []
    found = NodeAdopter(
        cast("Mirror", mirror), cast("NodeAgent", agent), next_ip=lambda: "10.1.0.7",
        attach=lambda *args: calls.append(("attach", *args)),
        detach=lambda name: calls.append(("detach", name)), kubelet_version="v1-sim",
    )  # fmt: skip
    found.start()
    return found, mirror, agent, calls


def test_a_kwok_node_is_adopted_once_it_has_a_pod_cidr() -> None:
    found, mirror, agent, calls = adopter([])
    mirror.send("ADDED", kwok_node())  # no pod CIDR yet: node IPAM has not acted
    assert calls == []
    mirror.send("MODIFIED", kwok_node("10.244.1.0/24"))
    mirror.send("MODIFIED", kwok_node("10.244.1.0/24"))  # once only
    assert calls == [("attach", "kwok-a", "10.1.0.7", "10.244.1.0/24")]
    assert found.adopted == {"kwok-a": "10.1.0.7"}
    assert agent.nodes["kwok-a"]["metadata"]["uid"] == "u"  # its Lease is renewed from now on
    (labels, status) = mirror.patches
    assert labels[1]["metadata"]["labels"]["nvidia.com/gpu.product"] == "NVIDIA-H200"
    assert status[2] == "status"
    assert status[1]["status"]["capacity"]["nvidia.com/gpu"] == "8"


def test_other_nodes_are_left_alone() -> None:
    _, mirror, _, calls = adopter([])
    mirror.send("MODIFIED", kwok_node("10.244.1.0/24", provider="sim://sim-h200-0"))
    assert calls == []
    assert mirror.patches == []


def test_a_deleted_node_goes_with_its_pods() -> None:
    pods = [
        {"metadata": {"name": "a", "namespace": "ai", "uid": "1"}, "spec": {"nodeName": "kwok-a"}},
        {"metadata": {"name": "b", "namespace": "ai", "uid": "2"}, "spec": {"nodeName": "other"}},
    ]
    found, mirror, agent, calls = adopter(pods)
    mirror.send("MODIFIED", kwok_node("10.244.1.0/24"))
    mirror.send("DELETED", kwok_node("10.244.1.0/24"))
    assert mirror.deleted == [("a", 0)]
    assert calls[-1] == ("detach", "kwok-a")
    assert found.adopted == {}
    assert "kwok-a" not in agent.nodes
