"""Start-up phases of the serving pods, read from their status (what the watch cache holds), and
the plan's prediction of a start-up. Pure: no clock, times come from the pods' own timestamps.

A serving pod's start, in order (docs/startup.md):

- ``Scheduling``: created, not bound to a node yet (``PodScheduled`` not True);
- ``Downloading``: the ``download`` init container runs (the weights are fetched into the cache;
  it finishes at once when the cache already holds them: "weights present");
- ``Loading``: the vLLM container runs but vLLM's ``/health`` does not answer yet: it reads the
  weights onto the GPUs, compiles (torch.compile) and captures CUDA graphs. vLLM binds its socket
  before loading and answers ``/health`` only once the engine is built (model-facts §4), so from
  outside the pod these three are one phase;
- ``Verifying``: vLLM is up, the operator's behavioural check (a readiness gate) runs;
- ``Ready``.

The durations of a finished start come from the same timestamps: creation → ``PodScheduled``,
the init container's ``startedAt`` → ``finishedAt``, the vLLM container's ``startedAt`` →
``ContainersReady``, → ``Ready``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from nemotron_operator.api import NemotronDeployment, Plan
from nemotron_operator.api.status import (
    ObservedStartup,
    PredictedStartup,
    StartupStatus,
)
from nemotron_operator.render import names as n

SCHEDULING = "Scheduling"
DOWNLOADING = "Downloading"
LOADING = "Loading"
VERIFYING = "Verifying"
READY = "Ready"
ORDER = (SCHEDULING, DOWNLOADING, LOADING, VERIFYING, READY)
DOWNLOAD_CONTAINER = "download"
VLLM_CONTAINER = "vllm"

WHAT = {
    SCHEDULING: "waiting for a node",
    DOWNLOADING: "downloading the weights into the cache",
    LOADING: "vLLM is loading the weights, compiling and capturing CUDA graphs",
    VERIFYING: "vLLM is up; the behavioural check runs",
    READY: "ready",
}

# The prediction's assumptions (docs/startup.md has their sources). The load rate is the startup
# probe's (render/pod.py: a network volume's baseline); a Hugging Face download is taken at the
# same rate; compile and CUDA-graph capture of these models take minutes on a cold cache.
LOAD_BYTES_PER_SECOND = 100_000_000
DOWNLOAD_BYTES_PER_SECOND = 100_000_000
COMPILE_SECONDS = 180
# A streamed load (spec.model.source.objectStore, vLLM's Run:ai streamer) reads the bucket
# straight onto the GPUs: no download, and a faster read. Run:ai publishes 3.51 GiB/s from S3 for
# one 8B checkpoint on one AWS g5.12xlarge (run-ai/runai-model-streamer docs/src/benchmarks.md);
# the prediction takes under a third of that, 1 GB/s, as one measurement is no promise for
# another bucket, region or S3-compatible store.
STREAM_BYTES_PER_SECOND = 1_000_000_000


@dataclass(frozen=True)
class Prediction:
    """The plan's start-up: seconds per phase, from the weight bytes and the load path."""

    download_seconds: int
    load_seconds: int
    compile_seconds: int

    @property
    def total_seconds(self) -> int:
        return self.download_seconds + self.load_seconds + self.compile_seconds


def predict(weight_bytes: int, *, downloads: bool, streams: bool = False) -> Prediction:
    """``downloads``: the weights come from Hugging Face through the download init container
    (an existing claim holds them already); ``streams``: they are streamed from an object store
    (no download, read at the streaming rate)."""
    download = math.ceil(weight_bytes / DOWNLOAD_BYTES_PER_SECOND) if downloads else 0
    rate = STREAM_BYTES_PER_SECOND if streams else LOAD_BYTES_PER_SECOND
    return Prediction(download, math.ceil(weight_bytes / rate), COMPILE_SECONDS)


def predict_for(deployment: NemotronDeployment, plan: Plan) -> Prediction:
    """The prediction for this spec and plan: the plan's weight bytes (the same whatever the
    source), downloaded first from Hugging Face, read from an existing claim, or streamed."""
    source = deployment.spec.model.source
    return predict(
        plan.weights_total_bytes,
        downloads=source.hugging_face is not None,
        streams=source.object_store is not None,
    )


@dataclass(frozen=True)
class PodStartup:
    """One pod's start: where it is, since when, and how long the finished phases took."""

    pod: str
    uid: str
    phase: str
    since: str | None  # when the current phase began (RFC 3339), None when unknown
    seconds: dict[str, float] = field(default_factory=dict)  # finished phases → seconds
    ready_at: str | None = None
    total_seconds: float | None = None  # creation → Ready, once Ready


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _between(start: Any, end: Any) -> float | None:
    a, b = _time(start), _time(end)
    if a is None or b is None:
        return None
    return max(0.0, (b - a).total_seconds())


def _condition(pod: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == type_:
            return condition  # type: ignore[no-any-return]
    return None


def _true_since(pod: Mapping[str, Any], type_: str) -> str | None:
    condition = _condition(pod, type_)
    if condition is None or condition.get("status") != "True":
        return None
    return str(condition.get("lastTransitionTime") or "") or None


def _container(statuses: Iterable[Mapping[str, Any]], name: str) -> Mapping[str, Any] | None:
    return next((c for c in statuses if c.get("name") == name), None)


def _state(container: Mapping[str, Any] | None, kind: str) -> Mapping[str, Any] | None:
    if container is None:
        return None
    found = (container.get("state") or {}).get(kind)
    return found if isinstance(found, Mapping) else None


def _durations(pod: Mapping[str, Any]) -> dict[str, float]:
    """Seconds of each finished phase, from the pod's own timestamps."""
    status = pod.get("status") or {}
    created = (pod.get("metadata") or {}).get("creationTimestamp")
    scheduled = _true_since(pod, "PodScheduled")
    containers_ready = _true_since(pod, "ContainersReady")
    ready = _true_since(pod, "Ready")
    done = _state(
        _container(status.get("initContainerStatuses") or [], DOWNLOAD_CONTAINER), "terminated"
    )
    vllm = _container(status.get("containerStatuses") or [], VLLM_CONTAINER)
    started = (_state(vllm, "running") or {}).get("startedAt")
    spans = {
        SCHEDULING: _between(created, scheduled),
        DOWNLOADING: None
        if done is None
        else _between(done.get("startedAt"), done.get("finishedAt")) or 0.0,
        LOADING: _between(started, containers_ready)
        if containers_ready and (vllm or {}).get("ready")
        else None,
        VERIFYING: _between(containers_ready, ready)
        if (pod.get("spec") or {}).get("readinessGates")
        else None,
    }
    return {phase: seconds for phase, seconds in spans.items() if seconds is not None}


def _phase(pod: Mapping[str, Any]) -> tuple[str, Any]:
    """The phase a pod is in and since when."""
    status = pod.get("status") or {}
    inits = status.get("initContainerStatuses") or []
    mains = status.get("containerStatuses") or []
    scheduled = _true_since(pod, "PodScheduled")
    bound = bool((pod.get("spec") or {}).get("nodeName") or inits or mains) or status.get(
        "phase"
    ) in ("Running", "Succeeded", "Failed")
    if scheduled is None and not bound:
        return SCHEDULING, (pod.get("metadata") or {}).get("creationTimestamp")
    download = _container(inits, DOWNLOAD_CONTAINER)
    running = _state(download, "running")
    if running is not None:
        return DOWNLOADING, running.get("startedAt")
    done = _state(download, "terminated")
    if download is not None and done is None:
        return DOWNLOADING, scheduled  # waiting to start (e.g. for a Secret)
    return _vllm_phase(pod, _container(mains, VLLM_CONTAINER), (done or {}).get("finishedAt"))


def _vllm_phase(
    pod: Mapping[str, Any], vllm: Mapping[str, Any] | None, weights_at: Any
) -> tuple[str, Any]:
    """Once the weights are in place: vLLM loading, the behavioural check, or Ready."""
    started = (_state(vllm, "running") or {}).get("startedAt")
    if started is None:  # about to start
        return LOADING, weights_at or _true_since(pod, "PodScheduled")
    containers_ready = _true_since(pod, "ContainersReady")
    if containers_ready is None or not bool((vllm or {}).get("ready")):
        return LOADING, started
    ready = _true_since(pod, "Ready")
    if ready is None:
        return VERIFYING, containers_ready
    return READY, ready


def pod_startup(pod: Mapping[str, Any]) -> PodStartup:
    metadata = pod.get("metadata") or {}
    phase, since = _phase(pod)
    ready = phase == READY
    return PodStartup(
        str(metadata.get("name", "?")),
        str(metadata.get("uid", "")),
        phase,
        str(since) if since else None,
        _durations(pod),
        ready_at=str(since) if ready and since else None,
        total_seconds=_between(metadata.get("creationTimestamp"), since) if ready else None,
    )


@dataclass(frozen=True)
class Startup:
    """The deployment's start: the pod furthest behind (None when every pod is Ready) and the
    latest finished start among the pods."""

    starting: PodStartup | None
    last_ready: PodStartup | None
    pods: tuple[PodStartup, ...]


def assess_startup(pods: Sequence[Mapping[str, Any]]) -> Startup:
    """``pods``: the instance's pods; the serving ones (leaders and workers) count."""
    serving = [
        p
        for p in pods
        if ((p.get("metadata") or {}).get("labels") or {}).get(n.COMPONENT) == n.COMPONENT_SERVING
    ]
    found = tuple(sorted((pod_startup(p) for p in serving), key=lambda s: s.pod))
    starting = [s for s in found if s.phase != READY]
    behind = (
        min(starting, key=lambda s: (ORDER.index(s.phase), s.since or "")) if starting else None
    )
    ready = [s for s in found if s.phase == READY and s.total_seconds is not None]
    last = max(ready, key=lambda s: (s.ready_at or "", s.pod)) if ready else None
    return Startup(behind, last, found)


def duration(seconds: float) -> str:
    """``75`` → ``1m15s``; ``3725`` → ``1h2m5s``."""
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"


def describe(starting: PodStartup, predicted: Prediction | None) -> str:
    """The LoadingModel message: the phase, since when, and the plan's figure for it."""
    text = f"pod {starting.pod}: {starting.phase} ({WHAT[starting.phase]})"
    if starting.since:
        text += f" since {starting.since}"
    if predicted is not None:
        expected = {
            DOWNLOADING: predicted.download_seconds,
            LOADING: predicted.load_seconds + predicted.compile_seconds,
        }.get(starting.phase)
        if expected is not None:
            text += f"; the plan expects about {duration(expected)} for this phase"
        text += f" and {duration(predicted.total_seconds)} for the whole start-up"
    return text


def startup_status(
    found: Startup, predicted: Prediction | None, previous: StartupStatus | None
) -> StartupStatus:
    """``status.startup``: the pod furthest behind, the plan's figure, and the latest observed
    start (kept from ``previous`` while no pod is Ready, e.g. during a restart)."""
    last = previous.last_observed if previous is not None else None
    done = found.last_ready
    if done is not None and done.ready_at is not None and done.total_seconds is not None:
        observed = ObservedStartup(
            pod=done.pod,
            ready_at=done.ready_at,
            total_seconds=round(done.total_seconds, 1),
            scheduling_seconds=_rounded(done.seconds.get(SCHEDULING)),
            downloading_seconds=_rounded(done.seconds.get(DOWNLOADING)),
            loading_seconds=_rounded(done.seconds.get(LOADING)),
            verifying_seconds=_rounded(done.seconds.get(VERIFYING)),
        )
        if last is None or observed.ready_at >= last.ready_at:
            last = observed
    starting = found.starting
    return StartupStatus(
        phase=starting.phase if starting is not None else None,  # type: ignore[arg-type]
        pod=starting.pod if starting is not None else None,
        since=starting.since if starting is not None else None,
        predicted=None
        if predicted is None
        else PredictedStartup(
            download_seconds=predicted.download_seconds,
            load_seconds=predicted.load_seconds,
            compile_seconds=predicted.compile_seconds,
            total_seconds=predicted.total_seconds,
        ),
        last_observed=last,
    )


def _rounded(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 1)
