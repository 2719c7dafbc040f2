"""The one write path (``kube/writes.py``): the request each named write makes, the Lease taken,
renewed and released through it, and no write verb of the client called from anywhere else."""

from __future__ import annotations

import ast
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import pytest

from nemotron_operator.controller.runtime.lease import LeaseGuard
from nemotron_operator.kube import ApiError, KubeClient, writes
from nemotron_operator.kube.resources import LEASES, NEMOTRON_DEPLOYMENTS, PODS
from nemotron_operator.kube.timestamps import (
    format_micro_time,
    format_time,
    parse_time,
    seconds_between,
)
from tests.unit.controller.fake_kube import FakeKube

PACKAGE = Path(__file__).resolve().parents[2] / "operator" / "nemotron_operator"
WRITE_VERBS = {"apply", "delete", "patch", "create", "replace"}
NOW = datetime(2026, 5, 1, 12, 0, 0, 123456, tzinfo=UTC)


@pytest.mark.slow  # parses every module: ~12 s; in the suite, not in make test-fast
def test_nothing_outside_kube_calls_a_write_verb_of_the_client() -> None:
    calls = [
        f"{path.relative_to(PACKAGE)}:{node.lineno}: {ast.unparse(node)}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.parent.name != "kube"
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in WRITE_VERBS
        and "kube" in ast.unparse(node.func.value)
    ]
    assert calls == []


def test_the_two_timestamp_formats_and_their_reading() -> None:
    assert format_time(NOW) == "2026-05-01T12:00:00Z"
    assert format_micro_time(NOW) == "2026-05-01T12:00:00.123456Z"
    plus_two = datetime(2026, 5, 1, 14, 0, tzinfo=UTC).astimezone(UTC).replace(tzinfo=None)
    assert format_time(plus_two) == "2026-05-01T14:00:00Z"  # naive: taken as UTC
    assert parse_time("2026-05-01T12:00:00.123456Z") == NOW
    assert parse_time("2026-05-01T12:00:00Z") == NOW.replace(microsecond=0)
    assert parse_time("yesterday") is None
    assert parse_time(None) is None
    assert seconds_between("2026-05-01T12:00:00Z", "2026-05-01T12:01:30Z") == 90.0
    assert seconds_between("2026-05-01T12:01:30Z", "2026-05-01T12:00:00Z") == 0.0
    assert seconds_between(None, "2026-05-01T12:00:00Z") is None


def test_a_merge_patch_sends_null_for_what_went_at_every_depth() -> None:
    old = {"phase": "Ready", "throughput": {"generationTokensPerSecond": 5.0,
                                            "mtpAcceptanceRate": 0.8}, "gone": 1}  # fmt: skip
    new = {"phase": "Ready", "throughput": {"generationTokensPerSecond": 0.0}}
    assert writes.merge_patch(old, new) == {
        "phase": "Ready",
        "throughput": {"generationTokensPerSecond": 0.0, "mtpAcceptanceRate": None},
        "gone": None,
    }


def nd(kube: FakeKube, **metadata: Any) -> dict[str, Any]:
    return kube.put(
        NEMOTRON_DEPLOYMENTS,
        {"metadata": {"name": "nano", "namespace": "ai", **metadata}, "status": {"phase": "Old"}},
    )


async def test_status_patch_and_finalizers_are_refused_when_the_read_is_stale() -> None:
    kube = FakeKube()
    read = nd(kube)
    client = cast(KubeClient, kube)
    await writes.patch_status(client, read, {"phase": "Ready"})
    assert kube.stored(NEMOTRON_DEPLOYMENTS, "ai", "nano")["status"] == {"phase": "Ready"}
    with pytest.raises(ApiError) as stale:
        await writes.patch_status(client, read, {"phase": "Degraded"})  # the version moved on
    assert stale.value.status == 409
    with pytest.raises(ApiError) as lost:
        await writes.set_finalizers(client, read, ["x"])
    assert lost.value.status == 409  # the JSON patch's failed test (422) is a conflict
    fresh = kube.stored(NEMOTRON_DEPLOYMENTS, "ai", "nano")
    updated = await writes.set_finalizers(client, fresh, ["x"])
    assert updated["metadata"]["finalizers"] == ["x"]


async def test_scale_and_an_event() -> None:
    kube = FakeKube()
    nd(kube, uid="u", resourceVersion="7")
    client = cast(KubeClient, kube)
    await writes.scale(client, "ai", "nano", 3)
    await writes.post_event(
        client,
        {"name": "nano", "namespace": "ai", "uid": "u", "resourceVersion": "7"},
        type_="Warning",
        reason="CrashLoop",
        message="x" * 2000,
        now=NOW,
    )
    scale, event = kube.writes
    assert (str(scale), scale.body) == (
        "patch NemotronDeployment/nano/scale",
        {"spec": {"replicas": 3}},
    )
    body = event.body
    assert body["involvedObject"] == {
        "apiVersion": "serving.nemotron.io/v1alpha1",
        "kind": "NemotronDeployment",
        "name": "nano",
        "namespace": "ai",
        "uid": "u",
        "resourceVersion": "7",
    }
    assert (body["type"], body["reason"], len(body["message"])) == ("Warning", "CrashLoop", 1024)
    assert body["firstTimestamp"] == body["lastTimestamp"] == "2026-05-01T12:00:00Z"
    assert body["metadata"]["name"].startswith("nano.")


async def test_the_lease_is_taken_renewed_left_to_its_holder_and_released() -> None:
    kube = FakeKube()
    client = cast(KubeClient, kube)
    guard = LeaseGuard(client, namespace="ops", name="op", identity="me", duration=30.0)
    assert await guard.try_acquire()  # created
    first = kube.stored(LEASES, "ops", "op")["spec"]
    assert (first["holderIdentity"], first["leaseDurationSeconds"]) == ("me", 30)
    assert first["acquireTime"] == first["renewTime"]
    assert await guard.try_acquire()  # renewed: the same acquireTime, no transition
    second = kube.stored(LEASES, "ops", "op")["spec"]
    assert second["acquireTime"] == first["acquireTime"]
    assert second.get("leaseTransitions", 0) == 0
    other = LeaseGuard(client, namespace="ops", name="op", identity="you", duration=30.0)
    assert not await other.try_acquire()  # held and fresh: left alone
    assert other.holder == "me"
    guard.leader.set()
    await guard.release()
    released = kube.stored(LEASES, "ops", "op")["spec"]
    assert (released["holderIdentity"], released["renewTime"]) == (None, None)
    assert await other.try_acquire()  # released: taken at the first attempt
    taken = kube.stored(LEASES, "ops", "op")["spec"]
    assert (taken["holderIdentity"], taken["leaseTransitions"]) == ("you", 1)
    assert [w.verb for w in kube.writes] == ["create", "replace", "replace", "replace"]


async def test_an_expired_lease_is_taken_over() -> None:
    kube = FakeKube()
    stale = format_micro_time(datetime.now(UTC) - timedelta(seconds=120))
    kube.put(
        LEASES,
        {
            "metadata": {"name": "op", "namespace": "ops"},
            "spec": {"holderIdentity": "gone", "leaseDurationSeconds": 30, "renewTime": stale},
        },
    )
    guard = LeaseGuard(cast(KubeClient, kube), namespace="ops", name="op", identity="me",
                       duration=30.0)  # fmt: skip
    assert await guard.try_acquire()
    assert kube.stored(LEASES, "ops", "op")["spec"]["holderIdentity"] == "me"


async def test_a_pod_condition_is_one_strategic_patch_guarded_by_the_uid() -> None:
    kube = FakeKube()
    kube.put(PODS, {"metadata": {"name": "nano-0", "namespace": "ai", "uid": "p1"},
                    "status": {"conditions": [{"type": "Ready", "status": "False"}]}})  # fmt: skip
    pod = kube.stored(PODS, "ai", "nano-0")
    client = cast(KubeClient, kube)
    gate = {"type": "serving.nemotron.io/verified", "status": "True", "reason": "Passed",
            "message": "all checks passed"}  # fmt: skip
    await writes.set_pod_condition(client, pod, gate, now=NOW)
    [write] = kube.writes
    assert (str(write), write.body) == (
        "patch Pod/nano-0/status",
        {
            "metadata": {"uid": "p1"},
            "status": {
                "conditions": [
                    {**gate, "lastProbeTime": None, "lastTransitionTime": "2026-05-01T12:00:00Z"}
                ]
            },
        },
    )
    types = [c["type"] for c in kube.stored(PODS, "ai", "nano-0")["status"]["conditions"]]
    assert types == ["Ready", "serving.nemotron.io/verified"]
    replaced = {**pod, "metadata": {**pod["metadata"], "uid": "p2"}}
    with pytest.raises(ApiError) as conflict:
        await writes.set_pod_condition(client, replaced, gate, now=NOW)
    assert conflict.value.status == 409
