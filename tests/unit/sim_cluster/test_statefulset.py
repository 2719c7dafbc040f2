from __future__ import annotations

import copy
from typing import Any

from nemotron_sim.controllers.statefulset import (
    REVISION_LABEL,
    build_pod,
    reconcile,
    update_revision,
)


def statefulset(replicas: int = 3, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "web", "namespace": "ai", "uid": "u-1", "generation": 4},
        "spec": {
            "replicas": replicas,
            "serviceName": "web-headless",
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}, "annotations": {"hash": "a"}},
                "spec": {
                    "containers": [{"name": "c", "image": "x"}],
                    "volumes": [{"name": "cache", "emptyDir": {}}],
                },
            },
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "cache"},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "10Gi"}},
                    },
                }
            ],
            **spec,
        },
    }


def ready(pod: dict[str, Any]) -> dict[str, Any]:
    pod = copy.deepcopy(pod)
    pod["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    return pod


def test_ordered_ready_creates_one_pod_at_a_time_with_its_claim() -> None:
    sts = statefulset()
    first = reconcile(sts, [], set())
    assert [p["metadata"]["name"] for p in first.create_pods] == ["web-0"]
    assert [c["metadata"]["name"] for c in first.create_claims] == ["cache-web-0"]
    # web-0 exists but is not ready yet: nothing more happens.
    waiting = reconcile(sts, first.create_pods, {"cache-web-0"})
    assert waiting.create_pods == []
    after = reconcile(sts, [ready(first.create_pods[0])], {"cache-web-0"})
    assert [p["metadata"]["name"] for p in after.create_pods] == ["web-1"]


def test_parallel_creates_everything_at_once() -> None:
    actions = reconcile(statefulset(podManagementPolicy="Parallel"), [], set())
    assert [p["metadata"]["name"] for p in actions.create_pods] == ["web-0", "web-1", "web-2"]
    assert len(actions.create_claims) == 3


def test_pod_carries_identity_revision_owner_and_claim_volume() -> None:
    sts = statefulset()
    pod = build_pod(sts, 2, update_revision(sts))
    meta = pod["metadata"]
    assert meta["labels"][REVISION_LABEL] == update_revision(sts)
    assert meta["labels"]["statefulset.kubernetes.io/pod-name"] == "web-2"
    assert meta["ownerReferences"][0]["uid"] == "u-1"
    assert meta["ownerReferences"][0]["controller"] is True
    assert pod["spec"]["hostname"] == "web-2"
    assert pod["spec"]["subdomain"] == "web-headless"
    # The claim template replaces the template's volume of the same name.
    assert pod["spec"]["volumes"] == [
        {"name": "cache", "persistentVolumeClaim": {"claimName": "cache-web-2"}}
    ]


def test_claims_are_retained_unless_the_policy_deletes_them() -> None:
    kept = reconcile(statefulset(), [], set()).create_claims[0]
    assert "ownerReferences" not in kept["metadata"]
    assert kept["metadata"]["labels"] == {"app": "web"}
    owned = reconcile(
        statefulset(persistentVolumeClaimRetentionPolicy={"whenDeleted": "Delete"}), [], set()
    ).create_claims[0]
    assert owned["metadata"]["ownerReferences"][0]["name"] == "web"


def test_status_counts_ready_pods_and_revisions() -> None:
    sts = statefulset()
    rev = update_revision(sts)
    pods = [ready(build_pod(sts, i, rev)) for i in range(2)]
    status = reconcile(sts, pods, {"cache-web-0", "cache-web-1"}).status
    assert status["replicas"] == 2
    assert status["readyReplicas"] == 2
    assert status["updateRevision"] == rev
    assert status["observedGeneration"] == 4


def test_template_change_rolls_the_highest_ordinal_first_one_at_a_time() -> None:
    old = statefulset()
    old_rev = update_revision(old)
    pods = [ready(build_pod(old, i, old_rev)) for i in range(3)]
    old["status"] = {"currentRevision": old_rev}
    new = copy.deepcopy(old)
    new["spec"]["template"]["metadata"]["annotations"]["hash"] = "b"
    new_rev = update_revision(new)
    assert new_rev != old_rev
    claims = {f"cache-web-{i}" for i in range(3)}
    step = reconcile(new, pods, claims)
    assert step.delete_pods == ["web-2"]
    assert step.status["currentRevision"] == old_rev
    assert step.status["updatedReplicas"] == 0
    # web-2 was recreated at the new revision but is not ready: the rollout waits.
    pods[2] = build_pod(new, 2, new_rev)
    assert reconcile(new, pods, claims).delete_pods == []
    pods[2] = ready(pods[2])
    assert reconcile(new, pods, claims).delete_pods == ["web-1"]
    pods = [ready(build_pod(new, i, new_rev)) for i in range(3)]
    done = reconcile(new, pods, claims)
    assert done.delete_pods == []
    assert done.status["currentRevision"] == new_rev
    assert done.status["updatedReplicas"] == 3


def test_partition_and_on_delete_hold_pods_back() -> None:
    old = statefulset()
    pods = [ready(build_pod(old, i, update_revision(old))) for i in range(3)]
    claims = {f"cache-web-{i}" for i in range(3)}
    changed = copy.deepcopy(old)
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = "y"
    changed["spec"]["updateStrategy"] = {"type": "OnDelete"}
    assert reconcile(changed, pods, claims).delete_pods == []
    changed["spec"]["updateStrategy"] = {"type": "RollingUpdate", "rollingUpdate": {"partition": 3}}
    assert reconcile(changed, pods, claims).delete_pods == []


def test_scale_down_removes_the_highest_ordinal_first() -> None:
    sts = statefulset(replicas=1)
    rev = update_revision(sts)
    pods = [ready(build_pod(sts, i, rev)) for i in range(3)]
    assert reconcile(sts, pods, set()).delete_pods == ["web-2"]
    parallel = statefulset(replicas=1, podManagementPolicy="Parallel")
    assert reconcile(parallel, pods, set()).delete_pods == ["web-2", "web-1"]


def test_failed_pods_are_replaced() -> None:
    sts = statefulset(replicas=1)
    pod = build_pod(sts, 0, update_revision(sts))
    pod["status"] = {"phase": "Failed"}
    assert reconcile(sts, [pod], {"cache-web-0"}).delete_pods == ["web-0"]


def test_start_ordinal_names_pods_from_it() -> None:
    sts = statefulset(replicas=2, ordinals={"start": 1}, podManagementPolicy="Parallel")
    actions = reconcile(sts, [], set())
    assert [p["metadata"]["name"] for p in actions.create_pods] == ["web-1", "web-2"]
    assert actions.create_pods[0]["metadata"]["labels"]["apps.kubernetes.io/pod-index"] == "1"
    rev = update_revision(sts)
    stray = ready(build_pod(sts, 0, rev))
    pods = [stray, *(ready(p) for p in actions.create_pods)]
    assert reconcile(sts, pods, {"cache-web-1", "cache-web-2"}).delete_pods == ["web-0"]
