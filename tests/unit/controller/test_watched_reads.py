"""Reads without requests: the NemotronDeployment store kopf's events fill (and its sweep after
a listing), the object store's projections, the GPU inventory kept from two watches one event
at a time, and the optional kinds served, from watches of their CRDs."""

from __future__ import annotations

from typing import Any, ClassVar, cast

from nemotron_operator.controller.watch.deployment_store import DeploymentStore
from nemotron_operator.controller.watch.inventory import InventoryReader, pod_projection
from nemotron_operator.controller.watch.served_kinds import ServedKinds
from nemotron_operator.kube import KubeClient
from nemotron_operator.kube.resources import NODE_POOLS, POD_MONITORS, PODS, Resource
from nemotron_operator.kube.store import ObjectStore
from nemotron_operator.render import names as n
from tests.unit.controller.fake_kube import FakeKube


def nd(name: str, version: int, replicas: int = 1) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ai", "resourceVersion": str(version)},
        "spec": {"replicas": replicas},
    }


def test_the_store_follows_kopf_events_and_keeps_the_newer_write() -> None:
    store = DeploymentStore()
    store.event(None, nd("a", 5))
    store.event("ADDED", nd("b", 6))
    assert sorted(store.object_keys()) == [("ai", "a"), ("ai", "b")]
    store.written(nd("a", 9, replicas=3))  # our status patch's answer
    store.event("MODIFIED", nd("a", 7, replicas=2))  # an older event arriving late
    got = store.get("ai", "a")
    assert got is not None
    assert got["spec"]["replicas"] == 3
    assert got["metadata"]["resourceVersion"] == "9"
    store.event("DELETED", nd("b", 10))
    assert store.object_keys() == [("ai", "a")]


def test_a_sweep_forgets_what_the_latest_listing_did_not_mention() -> None:
    store = DeploymentStore()
    for i, name in enumerate(("a", "b", "c")):
        store.event(None, nd(name, i + 1))  # kopf's first listing
    store.event("MODIFIED", nd("a", 10))
    assert store.sweep() == []  # everything was listed
    # kopf lists again (after a 410): b was deleted while it was not watching
    store.event(None, nd("a", 10))
    store.event(None, nd("c", 3))
    store.event("ADDED", nd("d", 11))  # a new object after the listing
    assert store.sweep() == [("ai", "b")]
    assert sorted(k[1] for k in store.object_keys()) == ["a", "c", "d"]
    # a second listing with no watch event in between still starts a new epoch
    store.event(None, nd("a", 10))
    assert sorted(store.sweep()) == [("ai", "c"), ("ai", "d")]


def test_a_projection_makes_unused_fields_no_change() -> None:
    store = ObjectStore(PODS, project=pod_projection)
    pod = _pod("x", "node-1", 2)
    assert store.store(pod)
    pod["metadata"]["resourceVersion"] = "2"
    pod["status"] = {"conditions": [{"type": "Ready", "status": "True"}]}
    assert not store.store(pod)  # readiness is not what the inventory keeps
    assert store.changes == 1
    pod["metadata"]["resourceVersion"] = "3"
    pod["spec"]["nodeName"] = "node-2"
    assert store.store(pod)
    assert store.changes == 2
    kept = store.get("ai", "x-0")
    assert kept is not None
    assert kept["metadata"]["resourceVersion"] == "3"
    assert store.versions_by_label("ai", "x") == ()  # no index label configured


def _node(name: str, gpus: int = 8) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "resourceVersion": "1",
            "labels": {"nvidia.com/gpu.product": "NVIDIA-H200", "kubernetes.io/os": "linux"},
        },
        "status": {
            "allocatable": {"nvidia.com/gpu": str(gpus), "cpu": "64"},
            "conditions": [
                {"type": "Ready", "status": "True", "lastHeartbeatTime": "t1"},
                {"type": "MemoryPressure", "status": "False"},
            ],
        },
    }


def _pod(instance: str, node: str | None, gpus: int, version: int = 1) -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"{instance}-0",
            "namespace": "ai",
            "resourceVersion": str(version),
            "labels": {n.INSTANCE: instance, n.MANAGED_BY_LABEL: n.MANAGED_BY},
        },
        "spec": {
            **({"nodeName": node} if node else {}),
            "containers": [{"resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}],
        },
        "status": {"phase": "Running"},
    }


async def test_the_inventory_is_kept_from_watch_events_without_a_request() -> None:
    kube = FakeKube()  # the watched inventory must not list
    reader = InventoryReader(cast(KubeClient, kube), ttl=5.0)
    nodes, pods = reader.follow()
    nodes.store(_node("h200-a"))
    nodes.store(_node("h200-b"))
    pods.store(_pod("other", "h200-a", 8))
    nodes.synced.set()
    pods.synced.set()
    assert reader.watched

    mine = await reader.read("ai", "mine")
    assert {node.name: node.free_gpus for node in mine.nodes} == {"h200-a": 0, "h200-b": 8}
    start = reader.generation

    # a heartbeat changes nothing the inventory uses: no new generation
    beat = _node("h200-a")
    beat["metadata"]["resourceVersion"] = "2"
    beat["status"]["conditions"][0]["lastHeartbeatTime"] = "t2"
    assert not nodes.store(beat)
    assert reader.generation == start

    # our own pod is bound: others still see it, we do not count it against ourselves
    bound = _pod("mine", "h200-b", 4, version=2)
    nodes_listener = pods.listener
    assert nodes_listener is not None
    pods.store(bound)
    nodes_listener("ADDED", bound)
    assert reader.generation > start
    ours = await reader.read("ai", "mine")
    theirs = await reader.read("ai", "someone")
    assert {x.name: x.free_gpus for x in ours.nodes}["h200-b"] == 8
    assert {x.name: x.free_gpus for x in theirs.nodes}["h200-b"] == 4

    # it finishes (the field selector drops it: a DELETED event)
    pods.drop("ai", "mine-0", "3")
    nodes_listener("DELETED", bound)
    theirs = await reader.read("ai", "someone")
    assert {x.name: x.free_gpus for x in theirs.nodes}["h200-b"] == 8
    assert kube.lists == []  # the watched inventory never lists


async def test_node_events_are_parsed_once_at_the_next_read_not_at_each_event() -> None:
    kube = FakeKube()  # the watched inventory must not list
    reader = InventoryReader(cast(KubeClient, kube), ttl=5.0)
    nodes, pods = reader.follow()
    for name in ("h200-a", "h200-b"):
        nodes.store(_node(name))
    nodes.synced.set()
    pods.synced.set()
    await reader.read("ai", "mine")
    parsed = 0
    items = nodes.items

    def counting_items() -> list[dict[str, Any]]:
        nonlocal parsed
        parsed += 1
        return items()

    nodes.items = counting_items  # type: ignore[method-assign]
    listener = nodes.listener
    assert listener is not None
    start = reader.generation
    for version, status in enumerate(["Unknown", "True", "Unknown"], start=2):  # a flapping node
        flapping = _node("h200-a")
        flapping["metadata"]["resourceVersion"] = str(version)
        flapping["status"]["conditions"][0]["status"] = status
        assert nodes.store(flapping)
        listener("MODIFIED", flapping)
    assert parsed == 0  # events cost no parse of every node
    assert reader.generation == start + 3  # but each can change a plan: no reconcile is skipped
    inventory = await reader.read("ai", "mine")
    await reader.read("ai", "someone")
    assert parsed == 1  # one parse for both reads
    assert {node.name: node.ready for node in inventory.nodes} == {"h200-a": False, "h200-b": True}
    assert kube.lists == []  # the watched inventory never lists


_REVISIONS = iter(range(10, 1000))


def _crd(name: str, *, versions: tuple[str, ...] = ("v1",), established: bool = True) -> Any:
    return {
        "metadata": {"name": name, "resourceVersion": str(next(_REVISIONS))},
        "spec": {
            "versions": [
                {"name": v, "served": True, "schema": {"big": "x" * 1000}} for v in versions
            ]
        },
        "status": {"conditions": [{"type": "Established", "status": str(established)}]},
    }


async def test_served_kinds_come_from_the_crd_watches_once_they_have_listed() -> None:
    class Discovery:
        asked: ClassVar[list[str]] = []

        async def served(self, resource: Resource) -> bool:
            self.asked.append(resource.plural)
            return resource == POD_MONITORS

    kinds = ServedKinds(cast(KubeClient, Discovery()), (POD_MONITORS, NODE_POOLS))
    assert kinds.served() is None
    assert await kinds.current() == {POD_MONITORS}  # discovery, until the watches list
    assert sorted(Discovery.asked) == ["nodepools", "podmonitors"]

    pods_watch, pools_watch = kinds.watches[POD_MONITORS], kinds.watches[NODE_POOLS]
    pods_watch.store(_crd("podmonitors.monitoring.coreos.com"))
    pools_watch.store(_crd("nodepools.karpenter.sh", versions=("v1beta1",)))  # not our version
    pods_watch.synced.set()
    pools_watch.synced.set()
    Discovery.asked.clear()
    assert await kinds.current() == {POD_MONITORS}
    assert Discovery.asked == []  # no request once watched
    stored = pods_watch.get(None, "podmonitors.monitoring.coreos.com")
    assert stored is not None
    assert "spec" not in stored  # the schema is not kept

    pools_watch.store(_crd("nodepools.karpenter.sh", versions=("v1beta1", "v1")))
    assert kinds.served() == {POD_MONITORS, NODE_POOLS}
    pods_watch.store(_crd("podmonitors.monitoring.coreos.com", established=False))
    assert kinds.served() == {NODE_POOLS}
    pools_watch.drop(None, "nodepools.karpenter.sh")
    assert kinds.served() == frozenset()
