"""The operator with the real LeaderWorkerSet controller: where LWS's CRD is served a multi-node
replica runs on a LeaderWorkerSet by default; the deployment becomes Ready (the operator checks
and admits the leaders), scales by whole groups, and deleting it removes everything."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.lws.cases import CLUSTER, LWS, NAME, STATEFULSETS, manifest
from tests.integration.operator.helpers import (
    NAMESPACE,
    NDS,
    PODS,
    apply,
    children,
    condition,
    status,
    wait_ready,
)
from tests.integration.operator_process import OperatorProcess, ensure_namespace
from tests.kube import KubeHandle


@pytest.mark.parametrize("sim_cluster", [CLUSTER], indirect=True)
def test_a_multi_node_deployment_runs_on_lws_by_default_scales_by_group_and_goes_away(
    sim_cluster: KubeHandle, operator_process: OperatorProcess
) -> None:
    ensure_namespace(sim_cluster, NAMESPACE)
    apply(sim_cluster, manifest())
    wait_ready(sim_cluster, NAME, seconds=180)
    (lws,) = children(sim_cluster, LWS, NAME)
    assert lws["metadata"]["ownerReferences"][0]["kind"] == "NemotronDeployment"
    # No StatefulSet of the operator's own: LWS made the two there are, the leaders' owned by
    # the LeaderWorkerSet, a group's workers' by its leader pod (so deleting the leader pod
    # takes the group with it).
    owners = {
        s["metadata"]["name"]: s["metadata"]["ownerReferences"][0]["kind"]
        for s in sim_cluster.list(STATEFULSETS, NAMESPACE)
    }
    assert owners == {"super-lws": "LeaderWorkerSet", "super-lws-0": "Pod"}
    assert status(sim_cluster, NAME)["readyReplicas"] == 1
    # Every rank carries the readiness gate only the operator sets (as on the StatefulSet
    # layout), and the operator admitted both: the leader after its behavioural check.
    pods = {p["metadata"]["name"]: p for p in children(sim_cluster, PODS, NAME)}
    for pod in pods.values():
        assert pod["spec"]["readinessGates"] == [{"conditionType": "serving.nemotron.io/verified"}]
        gate = next(
            c for c in pod["status"]["conditions"] if c["type"] == "serving.nemotron.io/verified"
        )
        assert gate["status"] == "True"
    assert sorted(pods) == ["super-lws-0", "super-lws-0-1"]

    # Idle on a LeaderWorkerSet: reconciles on unchanged inputs write nothing (the LWS status
    # LWS writes does not make the operator apply again), Lease aside, and request nothing.
    operator_process.wait_reconciles(1, result="unchanged")
    mark = operator_process.mark()
    operator_process.wait_reconciles(5, result="unchanged")
    assert operator_process.writes(mark) == []
    requests = [
        f"{r['method']} {r['path']}"
        for r in operator_process.requests()[mark:]
        if "watch=" not in r["path"]
        and "/leases" not in r["path"]
        # discovery of the optional kinds (every 30 s): GET /apis/<group>/<version>
        and not (r["method"] == "GET" and r["path"].count("/") == 3)
    ]
    assert requests == []

    sim_cluster.kubectl(
        "patch", "nemotrondeployment", NAME, "-n", NAMESPACE, "--type=merge",
        "-p", '{"spec":{"replicas":2}}',
    )  # fmt: skip
    wait_ready(sim_cluster, NAME, seconds=180)
    assert status(sim_cluster, NAME)["readyReplicas"] == 2
    names = sorted(p["metadata"]["name"] for p in children(sim_cluster, PODS, NAME))
    assert names == ["super-lws-0", "super-lws-0-1", "super-lws-1", "super-lws-1-1"]

    sim_cluster.kubectl("delete", "nemotrondeployment", NAME, "-n", NAMESPACE, "--wait=false")
    sim_cluster.wait_until(
        lambda: (
            not sim_cluster.list(LWS, NAMESPACE)
            and not sim_cluster.list(STATEFULSETS, NAMESPACE)
            and not sim_cluster.list(PODS, NAMESPACE)
            and sim_cluster.get(NDS, NAMESPACE, NAME) is None
        ),
        seconds=120,
        what="the LeaderWorkerSet, its StatefulSets and pods gone with the deployment",
    )


def uids(cluster: KubeHandle) -> dict[str, str]:
    return {p["metadata"]["name"]: p["metadata"]["uid"] for p in children(cluster, PODS, NAME)}


@pytest.mark.parametrize("sim_cluster", [CLUSTER], indirect=True)
def test_switching_the_backend_of_a_live_deployment_is_refused(
    sim_cluster: KubeHandle, operator_process: OperatorProcess
) -> None:
    ensure_namespace(sim_cluster, NAMESPACE)
    apply(sim_cluster, manifest(multiNode={"backend": "StatefulSet"}))
    wait_ready(sim_cluster, NAME, seconds=180)
    assert condition(sim_cluster, "MultiNodeBackend", NAME)["reason"] == "StatefulSet"
    before = uids(sim_cluster)
    apply(sim_cluster, manifest(multiNode={"backend": "LeaderWorkerSet"}))
    sim_cluster.wait_until(
        lambda: condition(sim_cluster, "MultiNodeBackend", NAME).get("reason") == "SwitchRefused",
        seconds=60,
        what="the switch refused",
    )
    found = condition(sim_cluster, "MultiNodeBackend", NAME)
    assert found["status"] == "False"
    assert "delete and recreate the NemotronDeployment" in found["message"]
    assert not sim_cluster.list(LWS, NAMESPACE)  # nothing of the other layout applied
    assert uids(sim_cluster) == before  # the running replicas untouched
    assert status(sim_cluster, NAME)["readyReplicas"] == 1
    # The backend unset again, LWS's CRD served: the default keeps the running StatefulSets (as
    # for a deployment that ran before LWS was installed), not a refused switch.
    apply(sim_cluster, manifest())
    sim_cluster.wait_until(
        lambda: condition(sim_cluster, "MultiNodeBackend", NAME).get("reason") == "StatefulSet",
        seconds=60,
        what="the default to keep the StatefulSets",
    )
    found = condition(sim_cluster, "MultiNodeBackend", NAME)
    assert found["status"] == "True"
    assert "the default keeps the layout" in found["message"]
    assert not sim_cluster.list(LWS, NAMESPACE)
    assert uids(sim_cluster) == before


@pytest.mark.parametrize("sim_cluster", [CLUSTER], indirect=True)
def test_a_rollout_replaces_one_group_at_a_time_never_both(
    sim_cluster: KubeHandle, operator_process: OperatorProcess
) -> None:
    ensure_namespace(sim_cluster, NAMESPACE)
    apply(sim_cluster, manifest(replicas=2, rollout={"maxUnavailable": 1}))
    wait_ready(sim_cluster, NAME, seconds=180)
    before = uids(sim_cluster)
    apply(sim_cluster, manifest(replicas=2, rollout={"maxUnavailable": 1}, engine={
        "maxModelLen": 32768, "maxNumSeqs": 64}))  # fmt: skip
    ready_groups_seen: list[int] = []
    transitions: list[Any] = []

    def replaced() -> bool:
        pods = children(sim_cluster, PODS, NAME)
        groups: dict[str, list[bool]] = {}
        for pod in pods:
            group = pod["metadata"]["labels"].get("leaderworkerset.sigs.k8s.io/group-index", "")
            conditions = (pod.get("status") or {}).get("conditions") or []
            ready = any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)
            groups.setdefault(group, []).append(
                ready and not pod["metadata"].get("deletionTimestamp")
            )
        ready_groups_seen.append(sum(1 for g in groups.values() if len(g) == 2 and all(g)))
        seen = sorted(
            (p["metadata"]["name"], p["metadata"]["uid"][:4], ready)
            for p in pods
            for ready in [
                any(
                    c["type"] == "Ready" and c["status"] == "True"
                    for c in (p.get("status") or {}).get("conditions") or []
                )
            ]
        )
        if not transitions or transitions[-1] != seen:
            transitions.append(seen)
        now = {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods}
        return all(now.get(name) not in (None, uid) for name, uid in before.items()) and (
            ready_groups_seen[-1] == 2
        )

    sim_cluster.wait_until(replaced, seconds=180, every=0.1, what="both groups replaced")
    # maxUnavailable 1: at every look at least one group was whole and Ready.
    assert min(ready_groups_seen) >= 1, transitions
    wait_ready(sim_cluster, NAME, seconds=120)
