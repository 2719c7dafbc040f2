"""The controller's pure pieces: the desired-vs-live comparison, configuration from flags and
environment, the retry delays, the work queue's ordering, which condition changes get Events."""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

import pytest

from nemotron_operator.api import Condition
from nemotron_operator.controller.queue import WorkQueue
from nemotron_operator.controller.reconcile.apply import APPLIED, contains, stamped, up_to_date
from nemotron_operator.controller.reconcile.events import event_type, worth_an_event
from nemotron_operator.controller.runtime import kopf_wiring
from nemotron_operator.controller.runtime.health import HealthState
from nemotron_operator.controller.settings import add_arguments, config_from_args
from nemotron_operator.kube.errors import Action, ApiError, retry_delay
from nemotron_operator.kube.resources import CHILD_RESOURCES
from nemotron_operator.render import KIND_ORDER

DESIRED: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "nano", "namespace": "ai", "labels": {"a": "b"}},
    "spec": {"ports": [{"name": "http", "port": 8000}], "selector": {"a": "b"}},
}


def test_a_live_object_with_server_defaults_is_up_to_date() -> None:
    desired = stamped(DESIRED)
    live = {
        **desired,
        "metadata": {**desired["metadata"], "uid": "u", "resourceVersion": "7"},
        "spec": {
            "ports": [{"name": "http", "port": 8000, "protocol": "TCP", "targetPort": 8000}],
            "selector": {"a": "b"},
            "clusterIP": "10.0.0.1",
        },
    }
    assert up_to_date(live, desired)
    assert desired["metadata"]["annotations"][APPLIED]
    assert "annotations" not in DESIRED["metadata"]  # stamping does not mutate its input


def test_drift_removed_fields_and_absence_are_not_up_to_date() -> None:
    desired = stamped(DESIRED)
    edited = {**desired, "spec": {**desired["spec"], "selector": {"a": "c"}}}
    assert not up_to_date(edited, desired)
    assert not up_to_date(None, desired)
    # We stopped applying a label: the digest differs although the live object has a superset.
    smaller = stamped({**DESIRED, "metadata": {**DESIRED["metadata"], "labels": {}}})
    assert not up_to_date(desired, smaller)


def test_contains_compares_quantities_and_lists_by_value() -> None:
    assert contains({"gpu": "4"}, {"gpu": 4})
    assert not contains({"gpu": "4"}, {"gpu": 8})
    assert not contains([1, 2, 3], [1, 2])
    assert not contains({"x": 1}, {"x": True})
    assert contains({"x": True}, {"x": True})


def _config(argv: list[str], environ: dict[str, str]) -> Any:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return config_from_args(parser.parse_args(argv), environ)


def test_configuration_from_flags_and_environment() -> None:
    default = _config([], {})
    assert default.namespaces == ()
    assert default.resync_seconds == 60
    assert default.log_format == "plain"
    assert default.bind_address == "0.0.0.0"
    assert not default.standalone
    environ = {
        "NEMOTRON_OPERATOR_NAMESPACES": "ai, ml",
        "NEMOTRON_OPERATOR_RESYNC_SECONDS": "5",
        "NEMOTRON_OPERATOR_STANDALONE": "true",
        "KUBERNETES_SERVICE_HOST": "10.0.0.1",
        "POD_NAMESPACE": "ops",
    }
    from_env = _config([], environ)
    assert from_env.namespaces == ("ai", "ml")
    assert from_env.resync_seconds == 5
    assert from_env.standalone
    assert from_env.log_format == "json"  # in a pod
    assert from_env.lease_namespace == "ops"
    flags_win = _config(["--resync-seconds=2", "--log-format=plain"], environ)
    assert flags_win.resync_seconds == 2
    assert flags_win.log_format == "plain"
    assert flags_win.liveness_stale_after == 3 * 2 + 60
    with pytest.raises(ValueError, match="resync"):
        _config(["--resync-seconds=0"], {})


def test_the_quiet_scrape_pace_is_checked_against_the_busy_one() -> None:
    assert _config([], {}).scrape_quiet_seconds is None  # 4 x --scrape-seconds
    assert _config(["--scrape-quiet-seconds=0"], {}).scrape_quiet_seconds == 0
    environ = {"NEMOTRON_OPERATOR_SCRAPE_QUIET_SECONDS": "600"}
    assert _config([], environ).scrape_quiet_seconds == 600
    with pytest.raises(ValueError, match=r"--scrape-quiet-seconds .* ≥ --scrape-seconds \(30\)"):
        _config(["--scrape-quiet-seconds=10"], {})


def test_retry_delays_honour_retry_after_and_back_off() -> None:
    throttled = ApiError(429, "TooManyRequests", "slow down", retry_after=7)
    assert throttled.action is Action.RETRY_LATER
    assert retry_delay(throttled, 1, base=1, cap=60) == 7
    broken = ApiError(503, "ServiceUnavailable", "down")
    assert [retry_delay(broken, n, base=1, cap=4) for n in (1, 2, 3, 4)] == [1, 2, 4, 4]
    conflict = ApiError(409, "Conflict", "stale")
    assert conflict.action is Action.RETRY_SOON
    assert retry_delay(conflict, 5, base=0.5, cap=60) == 0.5
    assert ApiError(422, "Invalid", "bad").action is Action.REPORT
    assert ApiError(404, "NotFound", "gone").action is Action.GONE


def test_queue_deduplicates_and_never_hands_a_key_out_twice() -> None:
    async def scenario() -> list[tuple[str, str]]:
        queue = WorkQueue()
        queue.add(("ai", "a"))
        queue.add(("ai", "a"))
        queue.add(("ai", "b"))
        first = await queue.get()
        second = await queue.get()
        queue.add(first)  # re-added while being processed: waits for done()
        assert len(queue) == 1
        queue.done(first)
        third = await queue.get()
        queue.done(second)
        queue.done(third)
        return [first, second, third]

    assert asyncio.run(scenario()) == [("ai", "a"), ("ai", "b"), ("ai", "a")]


def _condition(type_: str, status: str, reason: str) -> Condition:
    return Condition.model_validate(
        {"type": type_, "status": status, "reason": reason, "lastTransitionTime": "t"}
    )


def test_events_for_warnings_ready_changes_and_recoveries_only() -> None:
    degraded = _condition("Degraded", "True", "CrashLoop")
    healthy = _condition("Degraded", "False", "AsExpected")
    assert worth_an_event(None, degraded)
    assert not worth_an_event(None, healthy)  # a first healthy value is no news
    assert worth_an_event(degraded, healthy)  # a recovery is
    # Progress before the first Ready is in status only; Ready regained and the loss of Ready
    # are Events (docs/controller.md).
    waiting = _condition("Ready", "False", "WaitingForPods")
    loading = _condition("Ready", "False", "LoadingModel")
    ready = _condition("Ready", "True", "AllReplicasReady")
    assert not worth_an_event(None, waiting)
    assert not worth_an_event(waiting, loading)
    assert worth_an_event(loading, ready)  # Ready again after a pod had been Ready: news
    assert worth_an_event(None, ready)
    # The first Ready (no serving pod of it was Ready before) is in status, not an Event.
    assert not worth_an_event(loading, ready, first_ready=True)
    assert not worth_an_event(None, ready, first_ready=True)
    assert worth_an_event(_condition("Ready", "False", "CrashLoop"), ready, first_ready=True)
    assert worth_an_event(ready, _condition("Ready", "False", "RolloutInProgress"))
    assert worth_an_event(ready, _condition("Ready", "False", "ScaledToZero"))
    assert worth_an_event(None, _condition("Ready", "False", "CrashLoop"))  # a Warning
    assert worth_an_event(_condition("Ready", "False", "CrashLoop"), loading)  # a recovery
    assert event_type(degraded) == "Warning"
    assert event_type(_condition("Ready", "False", "LoadingModel")) == "Normal"
    assert event_type(_condition("Ready", "False", "CrashLoop")) == "Warning"


def test_health_fails_without_watch_streams_kopf_or_a_recent_resync() -> None:
    async def scenario() -> list[list[str]]:
        now = time.monotonic()
        state = HealthState(
            stale_after=60.0,
            expected_watchers=1,
            started=now - 120.0,
            watchers_running=kopf_wiring.running_watchers,
        )
        state.last_resync = now
        results = [state.problems()]  # no watcher task at all
        watcher = asyncio.create_task(asyncio.Event().wait(), name="watcher for pods.v1@None")
        results.append(state.problems())  # healthy
        state.last_resync = now - 61.0
        results.append(state.problems())  # resync is stale
        state.last_resync = now
        state.kopf_running = lambda: False
        results.append(state.problems())
        watcher.cancel()
        return results

    missing, healthy, stale, stopped = asyncio.run(scenario())
    assert missing == ["0 of 1 watch streams running"]
    assert healthy == []
    assert len(stale) == 1
    assert stale[0].startswith("no resync for 61 s")
    assert stopped == ["kopf has stopped"]


def test_health_fails_when_work_waits_and_no_reconcile_finishes() -> None:
    async def scenario() -> list[list[str]]:
        now = time.monotonic()
        due: list[float | None] = [None]
        state = HealthState(
            stale_after=60.0,
            expected_watchers=0,
            started=now - 300.0,
            waiting_since=lambda: due[0],
        )
        state.last_resync = now
        results = [state.problems()]  # nothing waits
        due[0] = now - 120.0
        results.append(state.problems())  # waits, and nothing finished since the start
        state.worked()  # a reconcile finished just now: busy, not stuck
        results.append(state.problems())
        return results

    idle, stuck, busy = asyncio.run(scenario())
    assert idle == []
    assert len(stuck) == 1
    assert "(workers stuck)" in stuck[0]
    assert busy == []


def test_queue_reports_its_longest_waiting_due_key() -> None:
    now = [500.0]  # a fake clock: time passes when the test moves it

    async def scenario() -> tuple[float | None, float | None, float | None]:
        queue = WorkQueue(clock=lambda: now[0])
        empty = queue.oldest_due()
        queue.add(("ai", "later"), 30.0)
        only_later = queue.oldest_due()
        queue.add(("ai", "now"))
        now[0] += 0.01
        return empty, only_later, queue.oldest_due()

    empty, only_later, oldest = asyncio.run(scenario())
    assert empty is None
    assert only_later is None  # not due yet
    assert oldest == 500.0  # due since it was added


def test_the_child_kinds_are_the_renderers_in_its_apply_order() -> None:
    assert tuple(r.kind for r in CHILD_RESOURCES) == KIND_ORDER
