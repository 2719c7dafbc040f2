"""The reconcile against an in-memory API server (``fake_kube.FakeKube``), one row per situation:
the write requests it makes (in order), its outcome, and the status it computes.

Each row starts from a world (a new object, or one already converged and Ready), changes one
thing, reconciles once and compares every write the fake saw with the row's list, so a write too
many, one missing or one out of order fails the row.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from nemotron_operator.controller.reconcile.finalizer import FINALIZER
from nemotron_operator.kube import Action, ApiError
from nemotron_operator.kube.resources import (
    NEMOTRON_DEPLOYMENTS,
    NODE_POOLS,
    PODS,
    SERVICES,
    STATEFULSETS,
)
from tests.unit.controller.fake_kube import FakeKube
from tests.unit.controller.world import (
    CHILDREN,
    KARPENTER,
    NAME,
    NAMES,
    NS,
    STATUS,
    World,
    deleting,
    deployment,
    new,
    other_pod,
    pod_event,
    ready,
    serving_pod,
    watched,
    world,
)


def nothing(_: World) -> None:
    pass


def edit_image(w: World) -> None:
    sts = w.kube.stored(STATEFULSETS, NS, NAMES.statefulset)
    sts["spec"]["template"]["spec"]["containers"][0]["image"] = "vllm/vllm-openai:edited"


def delete_service(w: World) -> None:
    del w.kube.objects[w.kube.key(SERVICES, NS, NAMES.service)]


def too_long(w: World) -> None:
    w.edit_spec(engine={"maxModelLen": 16777216})  # admitted by the CRD; longer than Nano's


def unknown_field(w: World) -> None:
    w.edit_spec(engine={"maxModelLen": 131072, "maxModelLenn": 1})


def crash(w: World) -> None:
    waiting = {"reason": "CrashLoopBackOff", "message": "back-off 5m0s restarting failed container"}
    w.kube.put(PODS, serving_pod(ready=False, waiting=waiting))


def crash_and_someone_writes_first(w: World) -> None:
    crash(w)

    def bump(kube: FakeKube) -> None:  # another writer between kopf's event and the PATCH
        kube.put(NEMOTRON_DEPLOYMENTS, kube.stored(NEMOTRON_DEPLOYMENTS, NS, NAME))

    w.after_delivery = bump


async def full_nodes() -> World:
    found = world()
    for name in ("h200-a", "h200-b"):
        found.kube.put(PODS, other_pod(name, 8))
    found.kube.put(NEMOTRON_DEPLOYMENTS, deployment())
    return found


@dataclass(frozen=True)
class Row:
    name: str
    start: Callable[[], Any]  # an async function returning the World
    change: Callable[[World], None]
    writes: list[str]
    result: str = "ok"
    phase: str | None = None
    conditions: dict[str, tuple[str, str]] = field(default_factory=dict)  # type → status, reason
    raises: int | None = None  # the HTTP status of the ApiError the reconcile raises


ROWS = [
    Row(
        "created: every child applied, status written, no Event (progress is in status)",
        new,
        nothing,
        [*CHILDREN, STATUS],
        phase="Deploying",
        conditions={
            "Feasible": ("True", "Planned"),
            "CapacityAvailable": ("True", "GPUsAvailable"),
            "Ready": ("False", "WaitingForPods"),
        },
    ),
    Row(
        "unchanged: no write at all",
        ready,
        nothing,
        [],
        phase="Ready",
        conditions={"Ready": ("True", "AllReplicasReady"), "Degraded": ("False", "AsExpected")},
    ),
    Row(
        "drift: an edited image is applied again, status unchanged",
        ready,
        edit_image,
        ["apply StatefulSet/nano"],
        phase="Ready",
    ),
    Row(
        "drift: a deleted Service is applied again",
        ready,
        delete_service,
        ["apply Service/nano"],
        phase="Ready",
    ),
    Row(
        "infeasible: nothing applied or deleted, status says why",
        ready,
        too_long,
        [
            STATUS,
            "create Event Warning MaxModelLenTooLong",
            "create Event Warning MaxModelLenTooLong",
        ],
        result="infeasible",
        phase="Infeasible",
        conditions={
            "Feasible": ("False", "MaxModelLenTooLong"),
            "Ready": ("False", "MaxModelLenTooLong"),
        },
    ),
    Row(
        "invalid spec: nothing applied or deleted, the field named",
        ready,
        unknown_field,
        [STATUS, "create Event Warning InvalidSpec", "create Event Warning InvalidSpec"],
        result="infeasible",
        phase="Infeasible",
        conditions={"Feasible": ("False", "InvalidSpec")},
    ),
    Row(
        "capacity missing: applied anyway, CapacityAvailable=False",
        full_nodes,
        nothing,
        [
            *CHILDREN,
            STATUS,
            "create Event Warning InsufficientGPUs",
        ],
        phase="WaitingForCapacity",
        conditions={"CapacityAvailable": ("False", "InsufficientGPUs")},
    ),
    Row(
        "deleting: the NodePool goes first",
        lambda: deleting(with_pool=True),
        nothing,
        [f"delete NodePool/{NAMES.node_pool}"],
        result="finalizing",
    ),
    Row(
        "deleting: then the finalizer",
        lambda: deleting(with_pool=False),
        nothing,
        ["patch NemotronDeployment/nano"],
        result="finalized",
    ),
    Row(
        "pods crash-looping: Ready=False and Degraded=True, each with a Warning",
        ready,
        crash,
        [STATUS, "create Event Warning CrashLoop", "create Event Warning CrashLoop"],
        phase="Degraded",
        conditions={
            "Progressing": ("False", "CrashLoop"),
            "Ready": ("False", "CrashLoop"),
            "Degraded": ("True", "CrashLoop"),
        },
    ),
    Row(
        "status write conflict: a 409 for the worker to retry, no Event",
        ready,
        crash_and_someone_writes_first,
        [STATUS],
        raises=409,
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
async def test_reconcile(row: Row) -> None:
    w = await row.start()
    row.change(w)
    if row.raises is not None:
        mark = len(w.kube.writes)
        w.deliver()
        with pytest.raises(ApiError) as raised:
            await w.reconciler.reconcile(NS, NAME)
        assert raised.value.status == row.raises
        assert raised.value.action is Action.RETRY_SOON
        assert w.kube.written()[mark:] == row.writes
        return
    outcome, writes = await w.reconcile()
    assert writes == row.writes
    assert outcome.result == row.result
    if row.phase is not None:
        assert outcome.status is not None
        assert outcome.status.phase == row.phase
        assert outcome.status_written == (STATUS in writes)
    conditions = outcome.status.conditions if outcome.status is not None else []
    found = {c.type: (c.status, c.reason) for c in conditions}
    for type_, expected in row.conditions.items():
        assert found[type_] == expected, type_


async def test_a_converged_object_stays_quiet_over_many_reconciles() -> None:
    w = await ready()
    for _ in range(3):
        _, writes = await w.reconcile()
        assert writes == []


async def test_infeasible_keeps_the_children_of_the_earlier_spec() -> None:
    w = await ready()
    before = {key for key in w.kube.objects if key[0] in (SERVICES, STATEFULSETS)}
    too_long(w)
    await w.reconcile()
    after = {key for key in w.kube.objects if key[0] in (SERVICES, STATEFULSETS)}
    assert after == before
    # Fixed again: the same children, so nothing is applied; status goes back to Ready.
    w.edit_spec(engine={"maxModelLen": 131072})
    outcome, writes = await w.reconcile()
    assert outcome.status is not None
    assert outcome.status.phase == "Ready"
    assert [x for x in writes if x.startswith("apply")] == []


async def test_the_status_patch_carries_the_version_read_and_removes_what_went() -> None:
    w = await ready()
    crash(w)
    await w.reconcile()
    patch = next(x for x in reversed(w.kube.writes) if x.subresource == "status")
    assert patch.body["metadata"]["resourceVersion"]
    assert patch.body["status"]["phase"] == "Degraded"
    stored = w.nd()["status"]
    assert stored["phase"] == "Degraded"
    assert stored["readyReplicas"] == 0


async def test_a_karpenter_pool_gets_the_finalizer_before_it_is_applied() -> None:
    w = world(crds=frozenset({NODE_POOLS}))
    w.kube.put(NEMOTRON_DEPLOYMENTS, deployment(nodePool=KARPENTER))
    _, writes = await w.reconcile()
    assert writes[:2] == ["patch NemotronDeployment/nano", f"apply NodePool/{NAMES.node_pool}"]
    assert w.nd()["metadata"]["finalizers"] == [FINALIZER]
    # Switched back to no provisioner: the pool is pruned and the finalizer removed.
    w.edit_spec(nodePool={"provisioner": "None"})
    _, writes = await w.reconcile()
    assert f"delete NodePool/{NAMES.node_pool}" in writes
    assert "patch NemotronDeployment/nano" in writes
    assert "finalizers" not in w.nd()["metadata"] or w.nd()["metadata"]["finalizers"] == []


async def test_gone_is_nothing_to_do() -> None:
    w = world()
    outcome, writes = await w.reconcile()
    assert outcome.result == "gone"
    assert writes == []


async def test_a_reconcile_on_unchanged_inputs_is_skipped_without_a_request() -> None:
    w = await ready()
    watched(w)
    first, _ = await w.reconcile()  # the first with watched inputs runs in full
    assert first.result == "ok"
    # It may have written (status): its own write is a new input, so one more runs, writing
    # nothing; from then on the inputs are the same.
    settled, writes = await w.reconcile()
    assert (settled.result, writes) == ("ok", [])
    requests: list[str] = []
    get, list_ = w.kube.get, w.kube.list

    async def counting_get(*args: Any, **kwargs: Any) -> Any:
        requests.append("get")
        return await get(*args, **kwargs)

    async def counting_list(*args: Any, **kwargs: Any) -> Any:
        requests.append("list")
        return await list_(*args, **kwargs)

    w.kube.get, w.kube.list = counting_get, counting_list  # type: ignore[method-assign]
    for _ in range(3):  # the resync timer, three times
        outcome, writes = await w.reconcile()
        assert (outcome.result, writes) == ("unchanged", [])
    assert requests == []

    # a pod starts crash-looping: the pod's version is an input, so the reconcile runs
    crashing = serving_pod(ready=False, waiting={"reason": "CrashLoopBackOff"})
    pod_event(w, crashing)
    outcome, writes = await w.reconcile()
    assert outcome.result == "ok"
    assert STATUS in writes

    # an edit of the spec is a new resourceVersion of the object: it runs
    w.edit_spec(replicas=2)
    outcome, _ = await w.reconcile()
    assert outcome.result == "ok"


async def test_the_pod_disruption_budget_follows_whether_more_than_one_pod_can_serve() -> None:
    w = await new(replicas=2)
    _, writes = await w.reconcile()
    assert "apply PodDisruptionBudget/nano" in writes
    w.edit_spec(replicas=1)  # and an older operator's budget on a one-pod deployment goes too
    _, writes = await w.reconcile()
    assert "delete PodDisruptionBudget/nano" in writes
