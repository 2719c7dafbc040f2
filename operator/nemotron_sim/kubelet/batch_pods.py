"""Pods that run to completion (``restartPolicy: Never`` or ``OnFailure``, e.g. a Job's) whose
containers are stand-ins: each container "runs" for ``init_seconds`` and exits, and the pod ends
``Succeeded`` (every exit 0) or ``Failed``, so that kube-controller-manager's Job controller sees
its Job complete or fail.

A container that runs the weight download (``MODEL_ID`` and ``MODEL_REVISION`` set, the
operator's download script, render/storage.py) is the stand-in Hub's client: it "fetches" by
writing the download script's completion marker into ``MODEL_DIR`` through the container's
mounts (no bytes move), and its LoRA adapters as the init container's are (stand_in_volumes.py).

Fault knob: a ``MODEL_REVISION`` beginning with ``missing`` does not exist on the stand-in Hub:
the container exits 1 with the error ``hf download`` prints for an unknown revision, as its
termination message (what ``FallbackToLogsOnError`` would take from the log).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from nemotron_sim.kubelet.events import log, now_rfc3339
from nemotron_sim.kubelet.pod_status import PodModel
from nemotron_sim.kubelet.podenv import container_env
from nemotron_sim.kubelet.stand_in_volumes import (
    COMPLETE_MARKER,
    StandInVolumes,
    fetch_adapters,
)
from nemotron_sim.vllm.lora import resolve_mount

MISSING_REVISION_PREFIX = "missing"
RUN_TO_COMPLETION = frozenset({"Never", "OnFailure"})


def runs_to_completion(pod: Mapping[str, Any]) -> bool:
    return (pod.get("spec") or {}).get("restartPolicy") in RUN_TO_COMPLETION


def stand_in_download(env: Mapping[str, str], mounts: Mapping[str, str]) -> tuple[int, str]:
    """(exit code, termination message) of the download script's base-weights step."""
    model, revision = env.get("MODEL_ID", ""), env.get("MODEL_REVISION", "")
    if not model:
        return 0, ""
    if revision.startswith(MISSING_REVISION_PREFIX):
        return 1, (
            f"huggingface_hub.errors.RevisionNotFoundError: 404 Client Error. (Request ID: sim)\n"
            f"Revision Not Found for url: https://huggingface.co/api/models/{model}/revision/"
            f"{revision}.\nInvalid rev id: {revision}"
        )
    _write_marker(env, mounts)
    return 0, ""


def _write_marker(env: Mapping[str, str], mounts: Mapping[str, str]) -> None:
    marker = _weights_marker(env, mounts)
    if marker is not None:
        marker.parent.mkdir(parents=True, exist_ok=True)
        want = f"{env.get('MODEL_ID', '')}@{env.get('MODEL_REVISION', '')}"
        marker.write_text(want + "\n", encoding="utf-8")


def _weights_marker(env: Mapping[str, str], mounts: Mapping[str, str]) -> Path | None:
    directory = env.get("MODEL_DIR", "")
    target = resolve_mount(directory, mounts)
    if target is None:
        log.info("stand-in download: %s is on no volume; the weights are lost", directory)
        return None
    return target / COMPLETE_MARKER


def weights_present(env: Mapping[str, str], mounts: Mapping[str, str]) -> bool:
    """The download script's check: the marker names this ``MODEL_ID@MODEL_REVISION`` (True
    when the step fetches no base weights at all)."""
    if not env.get("MODEL_ID"):
        return True
    marker = _weights_marker(env, mounts)
    want = f"{env['MODEL_ID']}@{env.get('MODEL_REVISION', '')}"
    return marker is None or (
        marker.is_file() and marker.read_text(encoding="utf-8").strip() == want
    )


async def run_init_download(
    env: Mapping[str, str], mounts: Mapping[str, str], *, init_seconds: float, download: float
) -> None:
    """The serving pods' download init container: ``download`` seconds when its weights are
    not in the cache yet (then the marker is written), else ``init_seconds`` — how a second
    start on the same node-local cache or claim skips the download. The fault knob does not
    apply here. Then its adapters (stand_in_volumes.py)."""
    fetch = not weights_present(env, mounts)
    await asyncio.sleep(download if fetch else init_seconds)
    if fetch:
        _write_marker(env, mounts)
    fetch_adapters(env, mounts)


async def run_to_completion(
    pod: Mapping[str, Any],
    model: PodModel,
    volumes: StandInVolumes,
    write: Callable[[], None],
    seconds: float,
) -> None:
    """Run every container of ``pod`` once; the pod's phase follows their exit codes."""
    specs = (pod.get("spec") or {}).get("containers") or []
    model.phase = "Running"
    codes = []
    for state, spec in zip(model.containers, specs, strict=False):
        started = now_rfc3339()
        state.run(started)
        write()
        await asyncio.sleep(seconds)
        mounts = volumes.mounts(spec)
        env = container_env(pod, spec)
        code, message = stand_in_download(env, mounts)
        if code == 0:
            fetch_adapters(env, mounts)
        state.exited(code, message, started, now_rfc3339())
        codes.append(code)
    model.phase = "Succeeded" if all(code == 0 for code in codes) else "Failed"
    write()
