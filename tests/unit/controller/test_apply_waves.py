"""Children are applied in waves: what lies between two workloads at once, each workload alone and
in its place (``reconcile/apply.py``, ``waves`` and ``sync``)."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from nemotron_operator.controller.reconcile import apply
from nemotron_operator.kube import KubeClient
from nemotron_operator.kube.errors import ApiError
from nemotron_operator.kube.resources import CHILD_RESOURCES, Resource
from tests.unit.controller.fake_kube import FakeKube, KubeBackedCache


def _obj(kind: str, name: str) -> dict[str, Any]:
    api = {"StatefulSet": "apps/v1", "Job": "batch/v1", "Deployment": "apps/v1"}.get(kind, "v1")
    return {"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": "ai"}}


def test_workloads_are_waves_of_their_own_in_their_place() -> None:
    order = [
        _obj("PersistentVolumeClaim", "cache"),
        _obj("Job", "download"),
        _obj("Service", "nano-headless"),
        _obj("Service", "nano"),
        _obj("StatefulSet", "nano-0"),
        _obj("StatefulSet", "nano-0-w"),
        _obj("PodDisruptionBudget", "nano"),
        _obj("NetworkPolicy", "nano"),
    ]
    names = [[o["metadata"]["name"] for o in wave] for wave in apply.waves(order)]
    assert names == [
        ["cache"], ["download"], ["nano-headless", "nano"], ["nano-0"], ["nano-0-w"],
        ["nano", "nano"],
    ]  # fmt: skip


class SlowKube(FakeKube):
    """Applies that take a moment, counting how many are in flight at once."""

    def __init__(self, refuse: str | None = None) -> None:
        super().__init__()
        self.in_flight, self.most, self.refuse = 0, 0, refuse
        self.order: list[tuple[str, str]] = []

    async def apply(self, resource: Resource, obj: dict[str, Any]) -> Any:
        name = obj["metadata"]["name"]
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        self.order.append(("start", name))
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        self.in_flight -= 1
        self.order.append(("end", name))
        if name == self.refuse:
            raise ApiError(422, "Invalid", "spec.selector: field is immutable", "PATCH", name)
        return await super().apply(resource, obj)


async def _sync(kube: SlowKube, desired: list[dict[str, Any]]) -> apply.SyncResult:
    return await apply.sync(
        cast(KubeClient, kube), KubeBackedCache(kube), desired, apply.Live(),
        served=frozenset(CHILD_RESOURCES),
    )  # fmt: skip


async def test_the_services_go_together_and_the_statefulset_after_both() -> None:
    kube = SlowKube()
    desired = [_obj("Service", "a"), _obj("Service", "b"), _obj("StatefulSet", "s")]
    result = await _sync(kube, desired)
    assert result.applied == ["Service/a", "Service/b", "StatefulSet/s"]
    assert kube.most == 2
    assert kube.order.index(("start", "s")) > kube.order.index(("end", "b"))
    assert kube.order.index(("start", "s")) > kube.order.index(("end", "a"))


async def test_a_refused_child_is_raised_after_its_wave_and_stops_the_next_wave() -> None:
    kube = SlowKube(refuse="a")
    desired = [_obj("Service", "a"), _obj("Service", "b"), _obj("StatefulSet", "s")]
    with pytest.raises(ApiError, match="immutable"):
        await _sync(kube, desired)
    assert ("end", "b") in kube.order  # tried in the same wave, and kept
    assert ("start", "s") not in kube.order
