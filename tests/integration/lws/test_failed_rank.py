"""What a failed rank does, on each backend, with the operator and the real LWS controller: a
worker of replica 1 is killed (its kubelet restarts the container, as a real one would) and the
test measures what is restarted and how long until the deployment is Ready again.

- LeaderWorkerSet: LWS deletes and recreates group 1 (leader and worker pods); group 0 untouched.
- StatefulSet: the operator deletes replica 1's leader pod (its StatefulSet makes it again), so
  the ranks re-form; the worker pod stays (its container restarted); replica 0 untouched."""

from __future__ import annotations

import time

import pytest

from tests.integration.lws.cases import CLUSTER, NAME, manifest
from tests.integration.operator.helpers import NAMESPACE, PODS, apply, children, wait_ready
from tests.integration.operator_process import OperatorProcess, ensure_namespace
from tests.kube import KubeHandle

# backend -> (replica 1's leader, its worker, replica 0's pods, the pods recreated)
LAYOUTS = {
    "LeaderWorkerSet": ("super-lws-1", "super-lws-1-1", ("super-lws-0", "super-lws-0-1"),
                        {"super-lws-1", "super-lws-1-1"}),
    "StatefulSet": ("super-1-0", "super-1-w-1", ("super-0-0", "super-0-w-1"), {"super-1-0"}),
}  # fmt: skip


@pytest.mark.parametrize("backend", sorted(LAYOUTS))
@pytest.mark.parametrize("sim_cluster", [CLUSTER], indirect=True)
def test_a_killed_worker_restarts_its_group_and_no_other(
    sim_cluster: KubeHandle, operator_process: OperatorProcess, backend: str
) -> None:
    leader, worker, untouched, recreated = LAYOUTS[backend]
    ensure_namespace(sim_cluster, NAMESPACE)
    apply(sim_cluster, manifest(replicas=2, multiNode={"backend": backend}))
    wait_ready(sim_cluster, NAME, seconds=180)
    before = {
        p["metadata"]["name"]: p["metadata"]["uid"] for p in children(sim_cluster, PODS, NAME)
    }
    assert {leader, worker, *untouched} == set(before)
    # Container times are in whole seconds (RFC 3339, as a kubelet writes them): the operator
    # sees a worker die after its leader started only from the next second on. With this
    # cluster's fast start the kill could otherwise fall in the leader's own start second.
    time.sleep(1.1)
    killed = time.monotonic()
    assert sim_cluster.call(lambda c: c.kill_container(NAMESPACE, worker))

    def uids() -> dict[str, str]:
        pods = children(sim_cluster, PODS, NAME)
        return {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods}

    sim_cluster.wait_until(
        lambda: all(uids().get(name, before[name]) != before[name] for name in recreated),
        seconds=60,
        what=f"{sorted(recreated)} recreated",
    )
    restarted = time.monotonic() - killed

    def serving_again() -> bool:
        pods = {p["metadata"]["name"]: p for p in children(sim_cluster, PODS, NAME)}
        return len(pods) == len(before) and all(
            any(c["type"] == "Ready" and c["status"] == "True" for c in conds)
            for p in pods.values()
            if (conds := (p.get("status") or {}).get("conditions") or [])
        )

    sim_cluster.wait_until(serving_again, seconds=120, what="every pod Ready again")
    ready_again = time.monotonic() - killed
    wait_ready(sim_cluster, NAME, seconds=120)
    after = uids()
    assert {name for name in before if after.get(name) != before[name]} == recreated
    for name in untouched:
        assert after[name] == before[name]
    print(f"{backend}: recreated {restarted:.1f} s, all pods Ready {ready_again:.1f} s after")
