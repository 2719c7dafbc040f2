"""The failures a real control plane has, with the operator running against it: etcd and
kube-apiserver restarted, a watch answered 410 Gone after etcd compaction, a deployment deleted
while the operator was down (and the finalizer removed by hand, as docs/reliability.md's runbook
says). Each test prints its measured figure (``FIGURE name: value``), the figures
docs/reliability.md's table records.

The tests share a cluster of their own (its components are stopped and restarted), where
kube-apiserver serves Services from etcd rather than from its watch cache, so a watch that
resumes from before an etcd compaction is refused at once, as every watch would be after a
longer outage."""

from __future__ import annotations

import re
import shlex
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from nemotron_sim.faultproxy.faults import Fault
from sim_cluster.controlplane.flags import Settings
from tests.integration.operator.helpers import (
    CLAIMS,
    NAMESPACE,
    NDS,
    NODE_POOLS,
    PDBS,
    PODS,
    SERVICES,
    STATEFULSETS,
    apply,
    children,
    condition,
    deployment,
    status,
    wait_ready,
)
from tests.integration.operator.lost_node import (
    node_ready,
    status_writes,
    taint_commands,
    taints,
    terminating_or_gone,
)
from tests.integration.operator_process import OperatorProcess, ensure_namespace
from tests.kube import TEST_CONTROLLER_QPS, KubeHandle

ROOT = Path(__file__).resolve().parents[3]
FAULT_CLUSTER: dict[str, Any] = {
    "purpose": "control-plane-faults",
    "control_plane": Settings(
        node_monitor_grace_seconds=8,
        node_monitor_period_seconds=1,
        uncached_resources=("services",),
        controller_qps=TEST_CONTROLLER_QPS,
    ),
    "renew_seconds": 1.0,
}
pytestmark = pytest.mark.parametrize("sim_cluster", [FAULT_CLUSTER], indirect=True)
KARPENTER = {"provisioner": "Karpenter", "karpenter": {"nodeClassRef": {"name": "gpu"}}}


def figure(name: str, value: float, unit: str = "s") -> None:
    print(f"FIGURE {name}: {value:.1f} {unit}")


def _inject(operator: OperatorProcess, fault: Fault) -> Fault:
    operator.cluster.call(lambda c: c.proxy.faults.add(fault) if c.proxy else None)
    return fault


def _control_plane(cluster: KubeHandle, component: str, action: str) -> None:
    cluster.run(lambda c: c.control_plane.act(component, action), timeout=180)


def _exactly_one_of_each_child(cluster: KubeHandle, name: str = "nano") -> None:
    assert len(children(cluster, STATEFULSETS, name)) == 1
    assert sorted(s["metadata"]["name"] for s in children(cluster, SERVICES, name)) == [
        name,
        f"{name}-headless",
    ]
    # A budget only where more than one serving pod can run (render/services.py).
    owner = cluster.get(NDS, NAMESPACE, name)
    assert owner is not None
    budgets = 1 if owner["spec"].get("replicas", 1) > 1 else 0
    assert len(children(cluster, PDBS, name)) == budgets


def test_etcd_killed_mid_reconcile_and_kube_apiserver_restarted_converge(
    operator_process: OperatorProcess,
) -> None:
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    apply(cluster, deployment())
    wait_ready(cluster)
    # etcd is killed while the reconcile of a scale-up waits on its StatefulSet apply (the proxy
    # holds that request for 2 s, then passes it to a kube-apiserver without storage), and
    # stays down for 10 s.
    held = _inject(operator_process, Fault(method="PATCH", path="/statefulsets/", delay=2.0))
    apply(cluster, deployment(replicas=2))
    cluster.wait_until(lambda: held.fired, what="the StatefulSet apply in flight")
    killed, killed_at = time.monotonic(), time.time()
    cluster.call(lambda c: c.control_plane.components["etcd"].kill())
    time.sleep(10.0)
    _control_plane(cluster, "etcd", "start")
    back = time.monotonic()
    wait_ready(cluster, seconds=120)
    figure("etcd killed mid-reconcile, down 10 s: etcd back to Ready 2/2", time.monotonic() - back)
    figure("etcd killed mid-reconcile, down 10 s: kill to Ready 2/2", time.monotonic() - killed)
    assert status(cluster)["ready"] == "2/2"
    _exactly_one_of_each_child(cluster)
    # By the proxy's journal: the held apply was still in flight when etcd died (kube-apiserver
    # waits for its storage, up to its request timeout), and the last apply succeeded.
    patches = [r for r in operator_process.requests()
               if r["method"] == "PATCH" and "/statefulsets/" in r["path"]]  # fmt: skip
    (in_flight,) = [r for r in patches if r["fault"] == held.id]
    assert in_flight["at"] + (in_flight["seconds"] or 0.0) > killed_at, in_flight
    assert patches[-1]["status"] in (200, 201)

    # kube-apiserver restarted (SIGTERM, started again) right after a scale-down.
    apply(cluster, deployment(replicas=1))
    restarted = time.monotonic()
    _control_plane(cluster, "kube-apiserver", "restart")
    cluster.wait_until(
        lambda: status(cluster).get("ready") == "1/1" and len(children(cluster, PODS)) == 1,
        seconds=120,
        what="scaled down to one pod after the restart",
    )
    wait_ready(cluster, seconds=30)
    figure("kube-apiserver restarted: restart to Ready 1/1", time.monotonic() - restarted)
    _exactly_one_of_each_child(cluster)
    assert operator_process.running, operator_process.log()[-3000:]
    cluster.wait_until(lambda: operator_process.healthz()[0] == 200, seconds=30, what="liveness")


def test_a_watch_refused_410_after_compaction_lists_again_and_repairs(
    operator_process: OperatorProcess,
) -> None:
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    names = ("nano", "nano-b")
    for name in names:
        apply(cluster, deployment(name))
    for name in names:
        wait_ready(cluster, name)
    # New watches of Services are held 4 s by the proxy, and the open ones are cut: the
    # operator's Service informer re-opens its watch from the last version it saw, and that
    # request reaches kube-apiserver only after both Services are deleted behind its back and
    # etcd has compacted its history.
    _inject(operator_process, Fault(method="WATCH", path="/services", delay=4.0, count=None,
                                     duration=2.0))  # fmt: skip
    mark = len(operator_process.log())
    cluster.call(lambda c: c.proxy.faults.unavailable(0.2) if c.proxy else None)
    for name in names:
        cluster.request("DELETE", f"/api/v1/namespaces/{NAMESPACE}/services/{name}")
    compacted = cluster.run(lambda c: c.control_plane.compact_etcd())
    assert compacted > 0
    refused = time.monotonic()
    operator_process.wait_for_log("services: watch error 410", seconds=30, since=mark)
    # A level check: each deployment has its Services again, and is Ready.
    for name in names:
        cluster.wait_until(
            lambda name=name: len(children(cluster, SERVICES, name)) == 2,
            seconds=30,
            what=f"{name}'s Service recreated",
        )
        wait_ready(cluster, name, seconds=30)
        _exactly_one_of_each_child(cluster, name)
    figure("410 Gone: refused watch to both Services repaired", time.monotonic() - refused)
    # The proxy's journal: after the refused watch, a LIST of Services (the relist).
    requests = operator_process.requests()
    watches = [r for r in requests if "/services" in r["path"] and "watch=" in r["path"]]
    lists = [
        r for r in requests
        if r["method"] == "GET" and re.search(r"/services\?(?!.*watch=)", r["path"])
    ]  # fmt: skip
    assert watches
    assert lists, "no LIST of Services after the refused watch"


# The scrape timer at 2 s (30 s by default, 4x that when quiet): the pod's leaving the scrape
# targets changes status's throughput at the next tick, which must fall inside the first window.
@pytest.mark.parametrize("operator_process", [["--scrape-seconds=2"]], indirect=True)
def test_a_lost_gpu_node_degrades_the_deployment_naming_it_and_it_recovers(
    operator_process: OperatorProcess,
) -> None:
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    apply(cluster, deployment())
    wait_ready(cluster)
    (pod,) = children(cluster, PODS)
    node, name = pod["spec"]["nodeName"], pod["metadata"]["name"]
    capacity_before = condition(cluster, "CapacityAvailable")["message"]
    stopped = time.monotonic()
    cluster.call(lambda c: c.nodes.stop_heartbeat(node) if c.nodes else None)
    # kube-controller-manager (8 s grace here; 50 s by default) marks the node Unknown and
    # taints it; the operator says which node and which pod.
    cluster.wait_until(lambda: node_ready(cluster, node) == "Unknown", seconds=60,
                       what="the node marked Unknown")  # fmt: skip
    cluster.wait_until(lambda: "node.kubernetes.io/unreachable" in taints(cluster, node),
                       seconds=30, what="the unreachable taint")  # fmt: skip
    degraded = cluster.wait_until(
        lambda: (found := condition(cluster, "Degraded")).get("reason") == "NodeLost" and found,
        seconds=30,
        what="Degraded=True NodeLost",
    )
    figure("GPU node lost: Lease stopped to Degraded NodeLost (8 s grace)",
           time.monotonic() - stopped)  # fmt: skip
    assert degraded["status"] == "True"
    assert f"node {node}: pod(s) {name}" in degraded["message"]
    assert status(cluster)["phase"] == "Degraded"
    assert status(cluster)["readyReplicas"] == 0
    # Capacity recomputed without the lost node: its GPUs are no longer counted free.
    capacity = condition(cluster, "CapacityAvailable")["message"]
    assert capacity != capacity_before, capacity
    # No write storm while it waits: over 15 resync periods at most one late state change (the
    # scrape timer's next tick without the pod: within 2 s), over the next 10 nothing but the
    # Lease. The window opens once a reconcile has finished since Degraded was read: the
    # reconcile that wrote it posts its Events after the status patch, and on a loaded machine
    # those landed inside the window (two writes of one state change).
    operator_process.wait_reconciles(1, seconds=30)
    mark = operator_process.mark()
    operator_process.wait_reconciles(15, seconds=60)
    assert len(operator_process.writes(mark)) <= 1, operator_process.writes(mark)
    mark = operator_process.mark()
    operator_process.wait_reconciles(10, seconds=40)
    assert operator_process.writes(mark) == []
    cluster.call(lambda c: c.nodes.resume_heartbeat(node) if c.nodes else None)
    back = time.monotonic()
    wait_ready(cluster, seconds=90)
    cluster.wait_until(lambda: condition(cluster, "Degraded").get("status") == "False",
                       seconds=30, what="Degraded=False")  # fmt: skip
    figure("GPU node back: heartbeat resumed to Ready", time.monotonic() - back)
    assert [p["metadata"]["uid"] for p in children(cluster, PODS)] == [pod["metadata"]["uid"]]


def test_a_node_gone_for_good_its_replica_moves_where_there_is_room(
    operator_process: OperatorProcess,
) -> None:
    """The runbook's out-of-service taint on a lost node: the taint-eviction controller marks the
    pod for deletion, pod GC (every 20 s) force-deletes it, the StatefulSet controller recreates
    it and kube-scheduler places it on a node with room; its claim (no node affinity) follows."""
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    # On H200 (the planner's pick would be B200, of which the cluster has one node): two nodes.
    apply(cluster, deployment(capacity={"gpu": {"products": ["NVIDIA-H200"]}}))
    wait_ready(cluster)
    (pod,) = children(cluster, PODS)
    (claim,) = children(cluster, CLAIMS)
    node, uid = pod["spec"]["nodeName"], pod["metadata"]["uid"]
    volume = cluster.request("GET", f"/api/v1/persistentvolumes/{claim['spec']['volumeName']}")
    assert "nodeAffinity" not in volume["spec"], volume["spec"]  # nothing pins it to the node
    put_on, take_off = (
        [arg.replace("$NODE", node) for arg in command] for command in taint_commands()
    )
    cluster.call(lambda c: c.nodes.stop_heartbeat(node) if c.nodes else None)
    try:
        cluster.wait_until(lambda: condition(cluster, "Degraded").get("reason") == "NodeLost",
                           seconds=60, what="Degraded NodeLost")  # fmt: skip
        # Without the taint nothing moves: the pod tolerates `unreachable` for 300 s.
        tainted = time.monotonic()
        since = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")  # as the audit log
        cluster.kubectl(*put_on)
        mark = operator_process.mark()  # after kubectl's own write, through the same proxy
        # Marked for deletion by the taint-eviction controller, it stays Terminating: the lost
        # node's kubelet cannot confirm it (nemotron_sim/kubelet/lost_nodes.py).
        # (Polled: on a loaded machine pod GC's 20 s tick can come before the poll sees the mark;
        # who deleted the pod is read from the audit log below.)
        cluster.wait_until(lambda: terminating_or_gone(cluster, pod), seconds=10,
                           what="the pod marked for deletion")  # fmt: skip
        gone = cluster.wait_until(
            lambda: uid not in {p["metadata"]["uid"] for p in cluster.list(PODS, NAMESPACE)}
            and time.monotonic(),
            seconds=40,
            what="the pod force-deleted by pod GC",
        )  # fmt: skip
        waiting = operator_process.writes(mark)
        removers = {
            e.username for e in cluster.audit()
            if e.verb == "delete" and e.resource == "pods" and e.code == 200 and e.at >= since
            and (e.namespace, e.name) == (NAMESPACE, pod["metadata"]["name"])
        }  # fmt: skip
        # The taint-eviction controller marks it, pod GC removes it: nothing confirmed it early.
        assert removers == {
            "system:serviceaccount:kube-system:node-controller",
            "system:serviceaccount:kube-system:pod-garbage-collector",
        }, removers
        moved = cluster.wait_until(
            lambda: [p for p in children(cluster, PODS) if p["spec"].get("nodeName") not in
                     (None, node)],
            seconds=30,
            what="the pod recreated on another node",
        )  # fmt: skip
        wait_ready(cluster, seconds=30)
        figure("GPU node gone for good: out-of-service taint to Ready elsewhere",
               time.monotonic() - tainted)  # fmt: skip
        figure("of which: taint to the pod force-deleted (pod GC every 20 s)", gone - tainted)
        assert condition(cluster, "Degraded").get("status") == "False"
        assert [p["metadata"]["name"] for p in moved] == [pod["metadata"]["name"]]
        claims = [c["metadata"]["uid"] for c in children(cluster, CLAIMS)]
        assert claims == [claim["metadata"]["uid"]]  # the weights stay in the same claim
        # No write storm (a reconcile a second): while pod GC is awaited at most one late state
        # change (its status write and Events); then one status write per step of the new pod's
        # start the operator sees (waiting for it, loading, verifying: how many it sees depends on
        # the machine's speed — all three on a loaded one) and Ready.
        writes = operator_process.writes(mark)
        print(f"operator writes: {len(waiting)} while pod GC was awaited, {len(writes)} in all")
        assert len(status_writes(waiting)) <= 1, waiting
        assert len(waiting) <= 3, waiting
        assert len(status_writes(writes)) <= 5, writes
        assert len(writes) <= 9, writes
    finally:
        cluster.kubectl(*take_off, check=False)
        cluster.call(lambda c: c.nodes.resume_heartbeat(node) if c.nodes else None)
    # Clean for the next test: Ready, and kube-controller-manager's taints and ours gone.
    lost_taints = {"node.kubernetes.io/unreachable", "node.kubernetes.io/out-of-service"}
    cluster.wait_until(
        lambda: node_ready(cluster, node) == "True" and not taints(cluster, node) & lost_taints,
        seconds=30,
        what="the node back, untainted",
    )


KCM_DOWN_SECONDS = 30.0


def test_kube_controller_manager_down_the_rollout_says_its_status_is_stale(
    operator_process: OperatorProcess,
) -> None:
    """kube-controller-manager stopped (30 s here; the issue's 2 minutes change nothing but the
    wait: the message is level-based, from the StatefulSet's generation and observedGeneration)
    while a scale-up is applied: the operator does not claim progress, it says the StatefulSet's
    status is stale; after kube-controller-manager's return the rollout completes."""
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    apply(cluster, deployment())
    wait_ready(cluster)
    stopped = time.monotonic()
    _control_plane(cluster, "kube-controller-manager", "stop")
    try:
        apply(cluster, deployment(replicas=2))
        progressing = cluster.wait_until(
            lambda: (
                "its status is stale"
                in (found := condition(cluster, "Progressing")).get("message", "")
                and found
            ),
            seconds=30,
            what="Progressing to say the StatefulSet's status is stale",
        )
        figure("kube-controller-manager down: stop to 'status is stale' in Progressing",
               time.monotonic() - stopped)  # fmt: skip
        assert progressing["status"] == "True"
        assert "observedGeneration 1, generation 2" in progressing["message"]
        assert "kube-controller-manager" in condition(cluster, "Ready")["message"]
        assert status(cluster)["ready"] == "1/2"
        time.sleep(max(0.0, KCM_DOWN_SECONDS - (time.monotonic() - stopped)))
        # Still stale, nothing claimed: no pod was added without the controller.
        assert "its status is stale" in condition(cluster, "Progressing")["message"]
        assert len(children(cluster, PODS)) == 1
    finally:
        _control_plane(cluster, "kube-controller-manager", "start")
    back = time.monotonic()
    wait_ready(cluster, seconds=120)
    figure("kube-controller-manager back: start to Ready 2/2", time.monotonic() - back)
    assert status(cluster)["ready"] == "2/2"
    _exactly_one_of_each_child(cluster)


def _runbook() -> list[str]:
    """The commands of docs/reliability.md's runbook for removing the finalizer by hand."""
    text = (ROOT / "docs" / "reliability.md").read_text()
    section = text.split("## Removing the finalizer by hand", 1)[1]
    block = section.split("```sh", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.startswith("kubectl ")]


def _pools(cluster: KubeHandle, name: str = "nano") -> list[dict[str, Any]]:
    return cluster.list(NODE_POOLS, None, f"app.kubernetes.io/instance={name}")


def test_deleted_while_the_operator_is_down_completes_when_it_returns(
    operator_process: OperatorProcess,
) -> None:
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    apply(cluster, deployment(nodePool=KARPENTER))
    wait_ready(cluster)
    assert _pools(cluster)
    operator_process.stop()
    cluster.kubectl("delete", "nd", "nano", "-n", NAMESPACE, "--wait=false")
    time.sleep(2.0)
    held = cluster.get(NDS, NAMESPACE, "nano")
    assert held is not None  # the finalizer holds it while no operator runs
    assert held["metadata"].get("deletionTimestamp")
    assert _pools(cluster)
    returned = time.monotonic()
    operator_process.start()
    cluster.wait_until(
        lambda: cluster.get(NDS, NAMESPACE, "nano") is None and not _pools(cluster),
        seconds=120,
        what="the deployment and its NodePool gone",
    )
    figure("deleted while down: operator start to deletion complete", time.monotonic() - returned)


def test_the_runbook_removes_the_finalizer_by_hand(operator_process: OperatorProcess) -> None:
    """The operator is gone for good (uninstalled first): the runbook's commands, as written in
    docs/reliability.md, delete the NodePool and let the deployment go."""
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    apply(cluster, deployment(nodePool=KARPENTER))
    wait_ready(cluster)
    (pool,) = _pools(cluster)
    operator_process.stop()
    cluster.kubectl("delete", "nd", "nano", "-n", NAMESPACE, "--wait=false")
    time.sleep(1.0)
    assert cluster.get(NDS, NAMESPACE, "nano") is not None
    commands = _runbook()
    assert len(commands) == 3, commands
    values = {"$NAMESPACE": NAMESPACE, "$NAME": "nano", "$POOL": ""}
    for written in commands:
        command = written
        for variable, value in values.items():
            command = command.replace(variable, value)
        result = cluster.kubectl(*shlex.split(command)[1:])
        if "objectName" in command:
            values["$POOL"] = result.stdout.strip()
            assert values["$POOL"] == pool["metadata"]["name"]
    cluster.wait_until(
        lambda: cluster.get(NDS, NAMESPACE, "nano") is None and not _pools(cluster),
        seconds=30,
        what="the deployment and its NodePool gone by hand",
    )
