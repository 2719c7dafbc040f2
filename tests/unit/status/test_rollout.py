"""spec.rollout: which pods run the new revision, when the rollout stalls, what is held back, and
the status it gives (pure, and the controller's hold on the children)."""

from __future__ import annotations

from typing import Any

from nemotron_operator.api import NemotronDeploymentStatus
from nemotron_operator.api.rollout import RolloutSpec
from nemotron_operator.controller.decide.rollout import Rollouts
from nemotron_operator.render import names as n
from nemotron_operator.status import Readiness, StatusInputs, compute_status
from nemotron_operator.status.readiness import Blocker
from nemotron_operator.status.rollout import RolloutState, assess_rollout, rendered_revisions
from tests.unit.status.helpers import inventory, node, plan

NOW = 1_800_000_000.0  # 2027-01-15T08:00:00Z
CREATED = "2027-01-15T07:59:00Z"  # 60 s before NOW
OLD, NEW = "old0hash", "new0hash"


def pod(
    name: str, config: str, *, ready: bool, owner: str = "nano", replica: int | None = None
) -> dict[str, Any]:
    labels = {n.COMPONENT: n.COMPONENT_SERVING}
    if replica is not None:
        labels[n.REPLICA] = str(replica)
    return {
        "metadata": {
            "name": name,
            "creationTimestamp": CREATED,
            "labels": labels,
            "annotations": {n.CONFIG_HASH: config},
            "ownerReferences": [{"kind": "StatefulSet", "name": owner}],
        },
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def statefulset(name: str, config: str, *, replica: int | None = None, **update: int) -> Any:
    labels = {n.REPLICA: str(replica)} if replica is not None else {}
    spec: dict[str, Any] = {
        "replicas": 1,
        "template": {"metadata": {"labels": labels, "annotations": {n.CONFIG_HASH: config}}},
        "updateStrategy": {"type": "RollingUpdate"},
    }
    if update:
        spec["updateStrategy"]["rollingUpdate"] = dict(update)
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name},
        "spec": spec,
    }


def assess(pods: list[dict[str, Any]], deadline: int = 120, **kw: Any) -> RolloutState:
    return assess_rollout(
        RolloutSpec(progress_deadline_seconds=deadline, **kw.pop("spec", {})),
        rendered={"nano": NEW},
        pods=pods,
        replicas=kw.pop("replicas", 2),
        plan_accurate=kw.pop("plan_accurate", None),
        plan_check_pod=kw.pop("plan_check_pod", None),
        now=kw.pop("now", NOW),
    )


def test_a_new_pod_not_ready_within_the_deadline_stalls_the_rollout() -> None:
    pods = [pod("nano-0", OLD, ready=True), pod("nano-1", NEW, ready=False)]
    waiting = assess(pods, deadline=120)
    assert (waiting.rolling, waiting.stall) == (True, None)
    assert waiting.next_deadline == NOW + 60  # created 60 s ago, 120 s allowed
    stalled = assess(pods, deadline=30)
    assert stalled.stall is not None
    assert stalled.stall.reason == "RolloutStalled"
    assert stalled.stall.message.startswith("pod nano-1 of the new revision is not Ready 30 s")
    assert "LoadingModel" in stalled.stall.message
    assert stalled.next_deadline is None
    assert stalled.lowest_new_ordinal == 1


def test_no_rollout_when_every_pod_runs_the_rendered_revision() -> None:
    state = assess([pod("nano-0", NEW, ready=False), pod("nano-1", NEW, ready=False)], deadline=10)
    assert (state.rolling, state.stall, state.next_deadline) == (False, None, None)


def test_plan_accurate_failing_on_a_new_pod_stalls_it_but_not_on_an_old_one() -> None:
    pods = [pod("nano-0", OLD, ready=True), pod("nano-1", NEW, ready=True)]
    failed = ("False", "KVCacheBelowPlan", "vLLM allocated 20 % fewer blocks")
    on_new = assess(pods, plan_accurate=failed, plan_check_pod="nano-1")
    assert on_new.stall is not None
    assert on_new.stall.message.startswith("pod nano-1 of the new revision: KVCacheBelowPlan")
    assert assess(pods, plan_accurate=failed, plan_check_pod="nano-0").stall is None


def test_a_ready_canary_says_how_to_promote() -> None:
    pods = [pod("nano-0", OLD, ready=True), pod("nano-1", NEW, ready=True)]
    state = assess(pods, spec={"canary": {"replicas": 1}})
    assert state.canary is not None
    assert "remove spec.rollout.canary" in state.canary
    assert assess(pods).canary is None


def test_a_stall_freezes_the_partition_at_the_lowest_updated_ordinal() -> None:
    rollouts = Rollouts(clock=lambda: NOW)
    desired = [statefulset("nano", NEW, maxUnavailable=2, partition=0)]
    pods = [
        pod("nano-0", OLD, ready=True),
        pod("nano-1", OLD, ready=True),
        pod("nano-2", NEW, ready=False),
        pod("nano-3", NEW, ready=False),
    ]

    def hold(deadline: int) -> Any:
        return rollouts.hold(
            ("ai", "nano"),
            RolloutSpec(max_unavailable=2, progress_deadline_seconds=deadline),
            desired,
            live_statefulsets=[],
            pods=pods,
            replicas=4,
            nodes_per_replica=1,
            previous=None,
        )

    waiting = hold(120)
    assert waiting.desired == desired
    assert not rollouts.revision(("ai", "nano"))  # the deadline is 60 s away
    rollouts.clock = lambda: NOW + 61
    assert rollouts.revision(("ai", "nano"))  # the fingerprint changes: the reconcile runs
    stalled = hold(30)
    strategy = stalled.desired[0]["spec"]["updateStrategy"]
    assert strategy["rollingUpdate"] == {"maxUnavailable": 2, "partition": 2}
    assert not rollouts.revision(("ai", "nano"))


def test_multi_node_replicas_update_pairwise_within_max_unavailable_and_the_canary() -> None:
    rollouts = Rollouts(clock=lambda: NOW)
    names = [(f"nano-{r}", f"nano-{r}-w") for r in range(3)]
    desired = [statefulset(x, NEW + x, replica=r) for r, pair in enumerate(names) for x in pair]
    live = [statefulset(x, OLD, replica=r) for r, pair in enumerate(names) for x in pair]
    pods = [
        pod(f"{x}-0", OLD, ready=True, owner=x, replica=r)
        for r, pair in enumerate(names)
        for x in pair
    ]

    def hold(spec: RolloutSpec, live_sets: list[Any], pods_now: list[Any]) -> set[str]:
        held = rollouts.hold(
            ("ai", "nano"),
            spec,
            desired,
            live_statefulsets=live_sets,
            pods=pods_now,
            replicas=3,
            nodes_per_replica=2,
            previous=None,
        )
        assert {name for _, name in held.keep} == {o["metadata"]["name"] for o in desired} - {
            o["metadata"]["name"] for o in held.desired
        }
        return {o["metadata"]["name"] for o in held.desired}

    # One replica at a time, the highest first, its leader and worker together.
    assert hold(RolloutSpec(), live, pods) == {"nano-2", "nano-2-w"}
    assert hold(RolloutSpec(max_unavailable=2), live, pods) == {
        "nano-2", "nano-2-w", "nano-1", "nano-1-w",
    }  # fmt: skip
    # Replica 2 updated but not Ready yet: nothing more moves.
    updated = [s for s in live if s["metadata"]["name"] not in names[2]] + [
        s for s in desired if s["metadata"]["name"] in names[2]
    ]
    assert hold(RolloutSpec(), updated, pods) == {"nano-2", "nano-2-w"}
    # Replica 2 Ready on the new revision: replica 1 next; with a canary of 1, nobody.
    ready = [p for p in pods if p["metadata"]["labels"][n.REPLICA] != "2"] + [
        pod(f"{x}-0", NEW + x, ready=True, owner=x, replica=2) for x in names[2]
    ]
    assert hold(RolloutSpec(), updated, ready) == {"nano-2", "nano-2-w", "nano-1", "nano-1-w"}
    canary = RolloutSpec.model_validate({"canary": {"replicas": 1}})
    assert hold(canary, updated, ready) == {"nano-2", "nano-2-w"}


def test_without_spec_rollout_nothing_is_held() -> None:
    desired = [statefulset("nano", NEW)]
    held = Rollouts(clock=lambda: NOW).hold(
        ("ai", "nano"),
        None,
        desired,
        live_statefulsets=[],
        pods=[pod("nano-0", OLD, ready=False)],
        replicas=1,
        nodes_per_replica=1,
        previous=None,
    )
    assert (held.desired, held.keep, held.state) == (desired, frozenset(), None)


PLAN = plan(inventory([node("h1")]), gpu={"count": 1})


def status_of(rollout: RolloutState, ready: int, blocker: Blocker | None) -> Any:
    inputs = StatusInputs(
        generation=2,
        replicas=2,
        selector="app=x",
        endpoint="http://nano.ai.svc:8000/v1",
        plan=PLAN,
        readiness=Readiness(ready, blocker),
        rollout=rollout,
    )
    status: NemotronDeploymentStatus = compute_status(inputs, None, now="2027-01-15T08:00:00Z")
    return status, {c.type: c for c in status.conditions}


def test_a_stalled_rollout_is_degraded_naming_the_pod() -> None:
    stall = Blocker("RolloutStalled", "pod nano-1 of the new revision is not Ready 30 s ...")
    state = RolloutState(True, stall, None, None, 1)
    loading = Blocker("LoadingModel", "pod nano-1 is downloading or loading the model")
    status, conditions = status_of(state, 1, loading)
    assert status.phase == "Degraded"
    degraded = conditions["Degraded"]
    assert (degraded.status, degraded.reason) == ("True", "RolloutStalled")
    assert degraded.message.startswith("pod nano-1 of the new revision")
    assert (conditions["Progressing"].status, conditions["Progressing"].reason) == (
        "False",
        "RolloutStalled",
    )


def test_a_ready_canary_is_not_progressing_and_says_how_to_promote() -> None:
    state = RolloutState(True, None, "the new revision runs on 1 of 2 replicas (canary)", None, 1)
    rolling = Blocker("RolloutInProgress", "StatefulSet nano: 1 of 2 pod(s) updated")
    status, conditions = status_of(state, 2, rolling)
    assert status.phase == "Ready"
    progressing = conditions["Progressing"]
    assert (progressing.status, progressing.reason) == ("False", "CanaryPaused")
    assert conditions["Degraded"].status == "False"


def test_the_rendered_revisions_are_the_serving_templates_config_hashes() -> None:
    def annotated(config: str) -> dict[str, Any]:
        return {"metadata": {"annotations": {n.CONFIG_HASH: config}}}

    desired = [
        {"kind": "StatefulSet", "spec": {"template": annotated("sts0hash")}},
        {
            "kind": "LeaderWorkerSet",
            "spec": {
                "leaderWorkerTemplate": {
                    "leaderTemplate": annotated("lws0lead"),
                    "workerTemplate": annotated("lws0work"),
                }
            },
        },
        {"kind": "Service", "spec": {"template": annotated("not0pod")}},
        {"kind": "StatefulSet", "spec": {"template": {"metadata": {}}}},
    ]
    assert rendered_revisions(desired) == {"sts0hash", "lws0lead"}
    assert rendered_revisions([]) == frozenset()
