"""Start-up phases from a serving pod's status, the plan's prediction and status.startup."""

from __future__ import annotations

from nemotron_operator.api.status import ObservedStartup, StartupStatus
from nemotron_operator.render import names as n
from nemotron_operator.status import startup as s
from tests.unit.status.startup_pods import T0, at, downloading, loading, ready, serving_pod


def test_a_pod_not_bound_yet_is_scheduling_since_its_creation() -> None:
    found = s.pod_startup(serving_pod())
    assert (found.phase, found.since, found.seconds) == (s.SCHEDULING, T0, {})


def test_a_running_download_is_downloading_since_it_started() -> None:
    found = s.pod_startup(downloading())
    assert (found.phase, found.since) == (s.DOWNLOADING, at(3))
    assert found.seconds == {s.SCHEDULING: 2.0}


def test_vllm_running_but_not_ready_is_loading_since_its_start() -> None:
    found = s.pod_startup(loading())
    assert (found.phase, found.since) == (s.LOADING, at(34))
    assert found.seconds == {s.SCHEDULING: 2.0, s.DOWNLOADING: 30.0}


def test_vllm_up_behind_the_readiness_gate_is_verifying() -> None:
    pod = ready(gate=True)
    pod["status"]["conditions"][2]["status"] = "False"
    found = s.pod_startup(pod)
    assert (found.phase, found.since) == (s.VERIFYING, at(94))
    assert found.seconds[s.LOADING] == 60.0


def test_a_ready_pod_has_every_phase_timed_and_its_total() -> None:
    found = s.pod_startup(ready(gate=True))
    assert found.phase == s.READY
    assert found.seconds == {
        s.SCHEDULING: 2.0,
        s.DOWNLOADING: 30.0,
        s.LOADING: 60.0,
        s.VERIFYING: 6.0,
    }
    assert (found.ready_at, found.total_seconds) == (at(100), 100.0)


def test_the_deployment_reports_the_pod_furthest_behind_and_the_latest_ready() -> None:
    found = s.assess_startup([ready("a-0", "ua"), loading(), downloading("c-0")])
    assert found.starting is not None
    assert (found.starting.pod, found.starting.phase) == ("c-0", s.DOWNLOADING)
    assert found.last_ready is not None
    assert found.last_ready.pod == "a-0"
    everything = s.assess_startup([ready("a-0", "ua")])
    assert everything.starting is None


def test_pods_of_other_components_do_not_count() -> None:
    other = downloading()
    other["metadata"]["labels"] = {n.COMPONENT: "endpoint-picker"}
    assert s.assess_startup([other]).pods == ()


def test_the_prediction_grows_with_the_weight_bytes_and_the_download() -> None:
    small = s.predict(10_000_000_000, downloads=True)
    large = s.predict(250_000_000_000, downloads=True)
    present = s.predict(250_000_000_000, downloads=False)
    assert (small.download_seconds, small.load_seconds) == (100, 100)
    assert large.total_seconds > small.total_seconds
    assert present.download_seconds == 0
    assert present.total_seconds == large.total_seconds - large.download_seconds


def test_the_loading_message_names_the_phase_since_when_and_the_plans_figure() -> None:
    message = s.describe(s.pod_startup(loading()), s.predict(10_000_000_000, downloads=True))
    assert message == (
        f"pod nano-0: Loading (vLLM is loading the weights, compiling and capturing CUDA graphs) "
        f"since {at(34)}; the plan expects about 4m40s for this phase and 6m20s for the whole "
        "start-up"
    )


def test_status_keeps_the_last_observed_start_while_no_pod_is_ready() -> None:
    predicted = s.predict(10_000_000_000, downloads=True)
    first = s.startup_status(s.assess_startup([ready(gate=True)]), predicted, None)
    assert first.phase is None
    assert first.last_observed == ObservedStartup(
        pod="nano-0",
        ready_at=at(100),
        total_seconds=100.0,
        scheduling_seconds=2.0,
        downloading_seconds=30.0,
        loading_seconds=60.0,
        verifying_seconds=6.0,
    )
    assert first.predicted is not None
    assert first.predicted.total_seconds == 380
    restarting = s.startup_status(s.assess_startup([loading()]), predicted, first)
    assert (restarting.phase, restarting.pod, restarting.since) == ("Loading", "nano-0", at(34))
    assert restarting.last_observed == first.last_observed


def test_an_older_ready_pod_does_not_replace_a_newer_observation() -> None:
    newer = ObservedStartup(pod="b-0", ready_at=at(500), total_seconds=12.0)
    found = s.startup_status(s.assess_startup([ready()]), None, StartupStatus(last_observed=newer))
    assert found.last_observed == newer


def test_durations_read_as_hours_minutes_and_seconds() -> None:
    assert [s.duration(x) for x in (0, 59.6, 75, 3725)] == ["0s", "1m0s", "1m15s", "1h2m5s"]
