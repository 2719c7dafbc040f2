"""The list-then-watch cache (kube/informer.py) against a scripted API: sync, events, bookmarks,
410 relists, 404 ends, write-through and the newer-version rule."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from nemotron_operator.kube import ApiError
from nemotron_operator.kube.informer import Informer
from nemotron_operator.kube.resources import STATEFULSETS

LABEL = "app.kubernetes.io/instance"


def sts(name: str, version: int, *, instance: str = "nano", image: str = "a") -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "ai",
            "resourceVersion": str(version),
            "labels": {LABEL: instance},
            "managedFields": [{"manager": "nemotron-operator"}],
        },
        "spec": {"image": image},
    }


class ScriptedApi:
    """Answers each list with the next of ``lists`` and each watch with the next of
    ``watches`` (a list of events, or an ApiError to raise); then blocks."""

    def __init__(self, lists: list[Any], watches: list[Any]) -> None:
        self.lists = lists
        self.watches = watches
        self.watched_from: list[str] = []

    async def list_versioned(self, *_: Any, **__: Any) -> tuple[list[dict[str, Any]], str]:
        answer = self.lists.pop(0)
        if isinstance(answer, ApiError):
            raise answer
        items, version = answer
        return items, version

    async def watch(self, *_: Any, resource_version: str, **__: Any) -> AsyncIterator[Any]:
        self.watched_from.append(resource_version)
        if not self.watches:
            await asyncio.Event().wait()
        answer = self.watches.pop(0)
        if isinstance(answer, ApiError):
            raise answer
        for event in answer:
            yield event


async def run_until(informer: Informer, done: Any, turns: int = 1000) -> None:
    """Run the informer until ``done()``: turns of the event loop, no wall clock (the scripted
    API answers at once and the back-off is 0 s)."""
    task = asyncio.create_task(informer.run())
    try:
        for _ in range(turns):
            if done() or task.done():
                break
            await asyncio.sleep(0)
        assert done(), "the informer did not get there"
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def make(
    api: ScriptedApi, seen: list[tuple[str, str]], restarts: list[str] | None = None
) -> Informer:
    return Informer(
        api,  # type: ignore[arg-type]
        STATEFULSETS,
        label_selector="app.kubernetes.io/managed-by=nemotron-operator",
        index_label=LABEL,
        listener=lambda kind, obj: seen.append((kind, obj["metadata"]["name"])),
        on_restart=None if restarts is None else restarts.append,
        backoffs=(0.0,),
    )


async def test_the_first_list_syncs_quietly_and_events_follow() -> None:
    seen: list[tuple[str, str]] = []
    api = ScriptedApi(
        lists=[([sts("a", 5), sts("b", 6, instance="other")], "10")],
        watches=[
            [
                {"type": "ADDED", "object": sts("c", 11)},
                {"type": "MODIFIED", "object": sts("a", 12, image="b")},
                {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "15"}}},
                {"type": "DELETED", "object": sts("b", 16, instance="other")},
            ]
        ],
    )
    restarts: list[str] = []
    informer = make(api, seen, restarts)
    assert not informer.synced.is_set()
    await run_until(informer, lambda: len(seen) == 3 and len(api.watched_from) == 2)
    assert informer.synced.is_set()
    assert seen == [("ADDED", "c"), ("MODIFIED", "a"), ("DELETED", "b")]  # none for the list
    assert [o["metadata"]["name"] for o in informer.by_label("ai", "nano")] == ["a", "c"]
    assert informer.by_label("ai", "other") == []
    kept = informer.get("ai", "a")
    assert kept is not None
    assert kept["spec"]["image"] == "b"
    assert kept["kind"] == "StatefulSet"
    assert "managedFields" not in kept["metadata"]  # never compared; not kept
    assert api.watched_from == ["10", "16"]  # the ended stream re-opened from the last version
    assert restarts == ["statefulsets"]
    assert informer.version == "16"


async def test_an_expired_version_lists_again_and_reports_only_the_differences() -> None:
    seen: list[tuple[str, str]] = []
    api = ScriptedApi(
        lists=[
            ([sts("a", 5), sts("b", 6)], "10"),
            ([sts("a", 5), sts("c", 20)], "21"),  # b went, c came while the stream was lost
        ],
        watches=[[{"type": "ERROR", "object": {"code": 410, "message": "too old"}}]],
    )
    informer = make(api, seen)
    await run_until(informer, lambda: informer.lists == 2 and len(seen) == 2)
    assert sorted(seen) == [("ADDED", "c"), ("DELETED", "b")]  # a is unchanged: no event
    assert sorted(o["metadata"]["name"] for o in informer.items()) == ["a", "c"]
    assert api.watched_from[-1] == "21"


async def test_a_kind_no_longer_served_ends_the_loop() -> None:
    api = ScriptedApi(lists=[([], "1")], watches=[ApiError(404, "NotFound", "no such kind")])
    informer = make(api, [])
    await run_until(informer, lambda: informer.not_served)


async def test_failures_back_off_and_are_counted_until_it_works() -> None:
    api = ScriptedApi(
        lists=[
            ApiError(503, "ServiceUnavailable", "down"),
            ApiError(0, "Unreachable", "x"),
            ([sts("a", 1)], "2"),
        ],
        watches=[],
    )
    informer = make(api, [])
    failures: list[int] = []
    original = informer._failed

    async def counting(error: str) -> None:
        await original(error)
        failures.append(informer.failures)

    informer._failed = counting  # type: ignore[method-assign]
    await run_until(informer, informer.synced.is_set)
    assert failures == [1, 2]
    assert informer.failures == 0
    assert informer.failing_for() == 0.0


def test_the_higher_resource_version_wins() -> None:
    informer = make(ScriptedApi([], []), [])
    assert informer.store(sts("a", 7, image="new"))  # an apply's answer, before its event
    assert not informer.store(sts("a", 6, image="old"))  # an older event arrives late
    kept = informer.get("ai", "a")
    assert kept is not None
    assert kept["spec"]["image"] == "new"
    assert not informer.store(sts("a", 7, image="new"))  # its own event: nothing new
    # A version names one content: the same version is not re-encoded nor compared again.
    assert not informer.store(sts("a", 7, image="unseen"))
    assert informer.get("ai", "a")["spec"]["image"] == "new"  # type: ignore[index]
    assert not informer.drop("ai", "a", "6")  # the deletion of an older incarnation
    assert informer.drop("ai", "a", "8")
    assert informer.get("ai", "a") is None
    assert informer.by_label("ai", "nano") == []


@pytest.mark.parametrize("namespace", ["ai", None])
def test_the_index_follows_a_changed_label(namespace: str | None) -> None:
    informer = make(ScriptedApi([], []), [])
    informer.store(sts("a", 1, instance="one"))
    informer.store(sts("a", 2, instance="two"))
    assert informer.by_label(namespace, "one") == []
    assert [o["metadata"]["name"] for o in informer.by_label(namespace, "two")] == ["a"]
