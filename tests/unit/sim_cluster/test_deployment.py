from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from nemotron_sim.controllers.deployment import (
    REVISION,
    fenceposts,
    reconcile,
    template_hash,
)
from nemotron_sim.controllers.replicaset import POD_TEMPLATE_HASH
from nemotron_sim.controllers.replicaset import reconcile as reconcile_rs

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def deployment(replicas: int = 4, image: str = "a", **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "web", "namespace": "ai", "uid": "d-1", "generation": 2},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": image}]},
            },
            **spec,
        },
    }


def settled(rs: dict[str, Any], ready: int | None = None) -> dict[str, Any]:
    """The ReplicaSet once its pods exist and ``ready`` of them are available."""
    rs = copy.deepcopy(rs)
    rs["metadata"].setdefault("creationTimestamp", "2026-01-01T00:00:00Z")
    count = rs["spec"]["replicas"] if ready is None else ready
    rs["status"] = {
        "replicas": rs["spec"]["replicas"],
        "readyReplicas": count,
        "availableReplicas": count,
    }
    return rs


def test_fenceposts_round_surge_up_and_unavailable_down() -> None:
    assert fenceposts(deployment(4)) == (1, 1)
    assert fenceposts(deployment(3)) == (1, 0)
    zero = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}}
    assert fenceposts(deployment(3, strategy=zero)) == (0, 1)


def test_first_sync_creates_a_hashed_replica_set_and_reports_progress() -> None:
    actions = reconcile(deployment(), [], {}, NOW)
    assert actions.create is not None
    pod_hash = template_hash(deployment()["spec"]["template"])
    assert actions.create["metadata"]["name"] == f"web-{pod_hash}"
    assert actions.create["spec"]["template"]["metadata"]["labels"][POD_TEMPLATE_HASH] == pod_hash
    assert actions.create["metadata"]["annotations"][REVISION] == "1"
    assert actions.create["spec"]["replicas"] == 4
    conditions = {c["type"]: c for c in actions.status["conditions"]}
    assert conditions["Progressing"]["reason"] == "NewReplicaSetCreated"
    assert conditions["Available"]["status"] == "False"
    assert actions.annotations == {REVISION: "1"}


def test_complete_rollout_is_available_and_new_replica_set_available() -> None:
    first = reconcile(deployment(), [], {}, NOW)
    assert first.create is not None
    rs = settled(first.create)
    deploy = deployment()
    deploy["status"] = first.status
    actions = reconcile(deploy, [rs], {}, NOW)
    assert actions.patches == {}
    status = actions.status
    assert (status["replicas"], status["updatedReplicas"], status["availableReplicas"]) == (4, 4, 4)
    assert status["unavailableReplicas"] == 0
    conditions = {c["type"]: c for c in status["conditions"]}
    assert conditions["Available"]["reason"] == "MinimumReplicasAvailable"
    assert conditions["Progressing"]["reason"] == "NewReplicaSetAvailable"
    assert status["observedGeneration"] == 2


def test_rolling_update_surges_then_scales_old_down_within_max_unavailable() -> None:
    old = settled(reconcile(deployment(), [], {}, NOW).create or {})
    new_deploy = deployment(image="b")
    step1 = reconcile(new_deploy, [old], {}, NOW)
    assert step1.create is not None
    assert step1.create["spec"]["replicas"] == 1  # 4 + maxSurge 1 - 4 running
    assert step1.create["metadata"]["annotations"][REVISION] == "2"
    new = settled(step1.create, ready=0)
    step2 = reconcile(new_deploy, [old, new], {}, NOW)
    # Old may go down by one (4 - maxUnavailable 1 must stay available; new is not yet).
    assert step2.patches == {old["metadata"]["name"]: {"spec": {"replicas": 3}}}
    old["spec"]["replicas"] = 3
    old = settled(old)
    new = settled(new)  # the new pod became available
    step3 = reconcile(new_deploy, [old, new], {}, NOW)
    assert step3.patches == {new["metadata"]["name"]: {"spec": {"replicas": 2}}}


def test_recreate_scales_old_to_zero_and_waits_for_its_pods() -> None:
    old = settled(reconcile(deployment(), [], {}, NOW).create or {})
    recreate = deployment(image="b", strategy={"type": "Recreate"})
    step1 = reconcile(recreate, [old], {}, NOW)
    assert step1.patches == {old["metadata"]["name"]: {"spec": {"replicas": 0}}}
    assert step1.create is None
    old["spec"]["replicas"] = 0
    running = {old["metadata"]["name"]: [{"status": {"phase": "Running"}}]}
    assert reconcile(recreate, [old], running, NOW).create is None
    step3 = reconcile(recreate, [old], {old["metadata"]["name"]: []}, NOW)
    assert step3.create is not None
    assert step3.create["spec"]["replicas"] == 4


def test_history_beyond_the_limit_is_deleted_once_complete() -> None:
    deploy = deployment(image="c", revisionHistoryLimit=1)
    old_sets = []
    for revision, image in ((1, "a"), (2, "b")):
        rs = reconcile(deployment(image=image), [], {}, NOW).create or {}
        rs["metadata"]["annotations"][REVISION] = str(revision)
        rs["spec"]["replicas"] = 0
        old_sets.append(settled(rs))
    current = reconcile(deploy, old_sets, {}, NOW).create or {}
    current["metadata"]["annotations"][REVISION] = "3"
    actions = reconcile(deploy, [*old_sets, settled(current)], {}, NOW)
    assert actions.delete == [old_sets[0]["metadata"]["name"]]


def test_replica_set_creates_missing_pods_and_deletes_unready_first() -> None:
    rs = settled(reconcile(deployment(2), [], {}, NOW).create or {})
    rs["metadata"]["uid"] = "rs-1"
    created = reconcile_rs(rs, [], NOW)
    assert len(created.create_pods) == 2
    pod = created.create_pods[0]
    assert pod["metadata"]["generateName"] == f"{rs['metadata']['name']}-"
    assert pod["metadata"]["ownerReferences"][0]["uid"] == "rs-1"
    ready = {"metadata": {"name": "a"}, "spec": {"nodeName": "n"},
             "status": {"phase": "Running",
                        "conditions": [{"type": "Ready", "status": "True"}]}}  # fmt: skip
    pending = {"metadata": {"name": "b"}, "spec": {}, "status": {"phase": "Pending"}}
    extra = {"metadata": {"name": "c"}, "spec": {"nodeName": "n"}, "status": {"phase": "Running"}}
    rs["spec"]["replicas"] = 1
    actions = reconcile_rs(rs, [ready, pending, extra], NOW)
    assert actions.delete_pods == ["b", "c"]
    assert actions.status["readyReplicas"] == 1
    assert actions.status["replicas"] == 3


def test_a_template_as_go_serializes_it_matches_the_existing_replica_set() -> None:
    rs = settled(reconcile(deployment(), [], {}, NOW).create or {})
    undone = deployment()
    template = undone["spec"]["template"]
    template["metadata"]["creationTimestamp"] = None
    template["spec"]["containers"][0].update(resources={}, env=[])
    actions = reconcile(undone, [rs], {}, NOW)
    assert actions.create is None
    assert template_hash(template) == rs["metadata"]["labels"][POD_TEMPLATE_HASH]


def test_a_stalled_rollout_times_out_after_the_progress_deadline() -> None:
    first = reconcile(deployment(1), [], {}, NOW)
    rs = settled(first.create or {}, ready=0)
    deploy = deployment(1, progressDeadlineSeconds=60)
    deploy["status"] = reconcile(deploy, [rs], {}, NOW).status
    soon = reconcile(deploy, [rs], {}, NOW + timedelta(seconds=30))
    assert soon.recheck_after == pytest.approx(30)
    late = reconcile(deploy, [rs], {}, NOW + timedelta(seconds=61))
    progressing = {c["type"]: c for c in late.status["conditions"]}["Progressing"]
    assert (progressing["status"], progressing["reason"]) == ("False", "ProgressDeadlineExceeded")
    assert (
        progressing["message"]
        == f'ReplicaSet "{rs["metadata"]["name"]}" has timed out progressing.'
    )


def test_a_paused_deployment_does_not_roll() -> None:
    old = settled(reconcile(deployment(), [], {}, NOW).create or {})
    paused = deployment(image="b", paused=True)
    actions = reconcile(paused, [old], {}, NOW)
    assert actions.create is None
    assert actions.patches == {}
    progressing = {c["type"]: c for c in actions.status["conditions"]}["Progressing"]
    assert progressing["reason"] == "DeploymentPaused"
