"""The lister chart on the simulated cluster: helm --wait, logs, restarts, termination, rollouts.

Real processes (``lister.py`` through the image mapping), the pinned helm and kubectl.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import Any

from nemotron_sim.kubeapi.kinds import DEPLOYMENTS, PODS, REPLICASETS
from tests.integration.processes.conftest import CHART, Helm

NS = "default"
REVISION = "deployment.kubernetes.io/revision"  # the Deployment controller's annotation


def pods(sim_cluster: Any, release: str) -> list[dict[str, Any]]:
    return [
        p
        for p in sim_cluster.list(PODS, NS, f"app={release}")
        if not p["metadata"].get("deletionTimestamp")
    ]


def container(pod: dict[str, Any]) -> dict[str, Any]:
    statuses = (pod.get("status") or {}).get("containerStatuses") or [{}]
    return dict(statuses[0])


def test_helm_install_wait_gives_an_available_deployment_whose_logs_list(
    sim_cluster: Any, helm: Helm
) -> None:
    sim_cluster.kubectl("create", "configmap", "marker", "--from-literal=a=b")
    helm("install", "lister", str(CHART), "--wait", "--timeout", "40s")
    deploy = sim_cluster.get(DEPLOYMENTS, NS, "lister")
    conditions = {c["type"]: c for c in deploy["status"]["conditions"]}
    assert conditions["Available"]["status"] == "True"
    assert conditions["Progressing"]["reason"] == "NewReplicaSetAvailable"
    assert deploy["status"]["availableReplicas"] == 1
    logs = sim_cluster.kubectl("logs", "deployment/lister").stdout
    assert "listed" in logs
    assert "marker" in logs
    assert "greeting: hello" in logs  # secretKeyRef read from the chart's Secret
    assert "/scratch" in logs
    assert "/var/run/secrets/kubernetes.io/serviceaccount" in logs
    status = sim_cluster.kubectl("rollout", "status", "deployment/lister", "--timeout=5s")
    assert "successfully rolled out" in status.stdout
    helm("uninstall", "lister", "--wait", "--timeout", "30s")
    assert sim_cluster.get(DEPLOYMENTS, NS, "lister") is None
    # helm waits for the objects it made (the Deployment); the ReplicaSet and its pods go after,
    # through kube-controller-manager's garbage collector (background propagation): seconds when
    # the machine is busy. None may be left, terminating or not.
    sim_cluster.wait_until(
        lambda: sim_cluster.list(PODS, NS, "app=lister") == [],
        seconds=30,
        what="the garbage collector deleting the lister's pods",
    )


def test_a_process_that_exits_restarts_with_back_off_and_keeps_previous_logs(
    sim_cluster: Any, helm: Helm
) -> None:
    helm("install", "crash", str(CHART), "--set", "exitAfter=0.2")

    def backing_off() -> dict[str, Any] | None:
        for pod in pods(sim_cluster, "crash"):
            state = container(pod)
            waiting = (state.get("state") or {}).get("waiting") or {}
            if state.get("restartCount", 0) >= 2 and waiting.get("reason") == "CrashLoopBackOff":
                return state
        return None

    state = sim_cluster.wait_until(backing_off, seconds=30, what="CrashLoopBackOff")
    assert "back-off" in state["state"]["waiting"]["message"]
    assert "restarting failed container=lister pod=crash-" in state["state"]["waiting"]["message"]
    terminated = state["lastState"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (3, "Error")
    assert terminated["message"] == "exiting on purpose"
    pod_name = pods(sim_cluster, "crash")[0]["metadata"]["name"]
    previous = sim_cluster.kubectl("logs", pod_name, "--previous", "--tail", "1").stdout
    assert previous == "exiting on purpose\n"
    assert sim_cluster.logs(NS, pod_name, previous=True).endswith("exiting on purpose\n")
    followed = sim_cluster.kubectl("logs", "-f", pod_name, timeout=15).stdout
    assert "exiting on purpose" in followed  # -f ends with the instance
    listing = sim_cluster.kubectl("get", "pods", pod_name).stdout
    assert "CrashLoopBackOff" in listing or "Running" in listing


def starts(signals: Path) -> int:
    """How many lister processes have written their ``started`` line."""
    return sum(line.startswith("started") for line in signals.read_text().splitlines())


def test_deleting_a_pod_sends_sigterm_and_waits_for_the_grace_period(
    sim_cluster: Any, helm: Helm, tmp_path: Path
) -> None:
    signals = tmp_path / "signals.log"
    helm(
        "install", "term", str(CHART), "--wait", "--timeout", "40s",
        "--set", f"signalLog={signals}", "--set", "termDelay=30",
        "--set", "terminationGracePeriodSeconds=2",
    )  # fmt: skip
    pod_name = pods(sim_cluster, "term")[0]["metadata"]["name"]
    started = time.monotonic()
    sim_cluster.kubectl("delete", "pod", pod_name, "--timeout=20s")
    took = time.monotonic() - started
    assert sim_cluster.get(PODS, NS, pod_name) is None
    assert 1.5 <= took < 10, took  # SIGTERM ignored for 30 s: SIGKILL after the 2 s grace
    lines = signals.read_text().splitlines()
    assert any(line.startswith("SIGTERM") for line in lines), lines
    pid = int(lines[0].split("pid=")[1])
    assert not Path(f"/proc/{pid}").exists()
    # --force --grace-period=0 removes the replacement at once and kills its process.
    replacement = sim_cluster.wait_until(lambda: pods(sim_cluster, "term"), what="replacement")
    replacement_name = replacement[0]["metadata"]["name"]
    sim_cluster.wait_until(lambda: starts(signals) >= 2, what="the second process to start")
    started = time.monotonic()
    sim_cluster.kubectl("delete", "pod", replacement_name, "--force", "--grace-period=0")
    assert time.monotonic() - started < 5
    assert sim_cluster.get(PODS, NS, replacement_name) is None
    started_lines = [
        line for line in signals.read_text().splitlines() if line.startswith("started")
    ]
    second_pid = int(started_lines[-1].split("pid=")[1])
    sim_cluster.wait_until(lambda: not Path(f"/proc/{second_pid}").exists(), seconds=5,
                           what="the killed process to be gone")  # fmt: skip
    # A second DELETE with a shorter grace period cuts a long one short.
    sim_cluster.wait_until(lambda: pods(sim_cluster, "term"), what="a third pod")
    # Count starts, not lines: the killed second process may have logged a SIGTERM too, and a
    # pod deleted before its process starts is removed at once, with no grace period to see.
    sim_cluster.wait_until(lambda: starts(signals) >= 3, what="the third process to start")
    third = pods(sim_cluster, "term")[0]["metadata"]["name"]
    sim_cluster.kubectl("delete", "pod", third, "--grace-period=60", "--wait=false")
    marked = sim_cluster.get(PODS, NS, third)
    assert marked is not None
    assert marked["metadata"]["deletionGracePeriodSeconds"] == 60
    assert "Terminating" in sim_cluster.kubectl("get", "pod", third).stdout
    started = time.monotonic()
    sim_cluster.kubectl("delete", "pod", third, "--grace-period=1", "--timeout=20s")
    assert time.monotonic() - started < 8
    assert sim_cluster.get(PODS, NS, third) is None


def test_rollout_status_follows_rolling_update_and_recreate(sim_cluster: Any, helm: Helm) -> None:
    helm("install", "roll", str(CHART), "--wait", "--timeout", "40s", "--set", "replicas=2")
    helm("upgrade", "roll", str(CHART), "--set", "replicas=2", "--set", "greeting=bonjour")
    status = sim_cluster.kubectl("rollout", "status", "deployment/roll", "--timeout=40s")
    assert 'deployment "roll" successfully rolled out' in status.stdout
    sets = sim_cluster.list(REPLICASETS, NS, "app=roll")
    assert len(sets) == 2
    revisions = sorted(int(rs["metadata"]["annotations"][REVISION]) for rs in sets)
    assert revisions == [1, 2]
    history = sim_cluster.kubectl("rollout", "history", "deployment/roll").stdout
    assert "1" in history
    assert "2" in history
    # To Recreate: kube-apiserver defaulted spec.strategy.rollingUpdate while the type was
    # RollingUpdate, and a Recreate Deployment may not have one. Helm 4's server-side apply does
    # not own that defaulted field, so it cannot remove it ("may not be specified when strategy
    # type is 'Recreate'"); a client-side three-way merge of the chart's `rollingUpdate: null`
    # does, as kubectl's would.
    helm("upgrade", "roll", str(CHART), "--set", "replicas=2", "--set", "strategy=Recreate",
         "--set", "greeting=hallo", "--server-side=false")  # fmt: skip
    status = sim_cluster.kubectl("rollout", "status", "deployment/roll", "--timeout=40s")
    assert "successfully rolled out" in status.stdout
    live = pods(sim_cluster, "roll")
    assert len(live) == 2
    logs = sim_cluster.kubectl("logs", live[0]["metadata"]["name"]).stdout
    assert "greeting: hallo" in logs
    deploy = sim_cluster.get(DEPLOYMENTS, NS, "roll")
    assert deploy["status"]["updatedReplicas"] == 2
    columns = sim_cluster.kubectl("get", "deployment", "roll").stdout.split()
    assert columns[5:9] == ["roll", "2/2", "2", "2"]  # NAME READY UP-TO-DATE AVAILABLE
    # Undo to revision 1 reuses that ReplicaSet: it becomes revision 4.
    sim_cluster.kubectl("rollout", "undo", "deployment/roll", "--to-revision=1")
    sim_cluster.kubectl("rollout", "status", "deployment/roll", "--timeout=40s")
    first = next(rs for rs in sets if rs["metadata"]["annotations"][REVISION] == "1")
    reused = sim_cluster.get(REPLICASETS, NS, first["metadata"]["name"])
    assert reused["metadata"]["annotations"][REVISION] == "4"
    assert reused["status"]["availableReplicas"] == 2
    sim_cluster.kubectl("scale", "deployment/roll", "--replicas=3")
    sim_cluster.kubectl("rollout", "status", "deployment/roll", "--timeout=40s")
    assert len(pods(sim_cluster, "roll")) == 3


def test_without_its_role_binding_the_pod_gets_403_and_crash_loops(
    sim_cluster: Any, helm: Helm
) -> None:
    helm("install", "deny", str(CHART), "--set", "bindRole=false")

    def crash_looping() -> dict[str, Any] | None:
        for pod in pods(sim_cluster, "deny"):
            state = container(pod)
            if (state.get("state") or {}).get("waiting", {}).get("reason") == "CrashLoopBackOff":
                return pod
        return None

    pod = sim_cluster.wait_until(crash_looping, seconds=30, what="CrashLoopBackOff after a 403")
    name = pod["metadata"]["name"]
    denied = (
        'listing failed: 403 configmaps is forbidden: User "system:serviceaccount:default:deny" '
        'cannot list resource "configmaps" in API group "" in the namespace "default"'
    )
    assert container(pod)["lastState"]["terminated"]["message"] == denied
    assert denied in sim_cluster.kubectl("logs", name, "--previous").stdout
    # Granting the Role lets the next restart list.
    helm("upgrade", "deny", str(CHART), "--set", "bindRole=true")
    sim_cluster.wait_until(
        lambda: any(container(p).get("ready") for p in pods(sim_cluster, "deny")),
        seconds=30,
        what="ready once bound",
    )


def test_a_failing_liveness_probe_kills_and_restarts_the_container(
    sim_cluster: Any, helm: Helm
) -> None:
    helm("install", "sick", str(CHART), "--wait", "--timeout", "40s",
         "--set", "unhealthyAfter=0.5", "--set", "terminationGracePeriodSeconds=2")  # fmt: skip
    sim_cluster.wait_until(
        lambda: any(container(p).get("restartCount", 0) >= 1 for p in pods(sim_cluster, "sick")),
        seconds=30,
        what="a restart after the liveness probe failed",
    )
    events = sim_cluster.kubectl("get", "events", "-o", "json").stdout
    assert "Liveness probe failed: HTTP probe failed with statuscode: 500" in events
    assert "Container lister failed liveness probe, will be restarted" in events


def test_a_process_that_cannot_bind_its_port_crash_loops_with_the_reason(
    sim_cluster: Any, helm: Helm
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        helm("install", "bind", str(CHART), "--set", "bindHost=127.0.0.1", "--set", f"port={port}")

        def failed() -> dict[str, Any] | None:
            for pod in pods(sim_cluster, "bind"):
                terminated = container(pod).get("lastState", {}).get("terminated")
                if terminated:
                    return dict(terminated)
            return None

        terminated = sim_cluster.wait_until(failed, seconds=30, what="the bind failure")
    assert terminated["exitCode"] == 1
    assert terminated["reason"] == "Error"
    assert terminated["message"] == "OSError: [Errno 98] Address already in use"
