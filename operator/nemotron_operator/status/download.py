"""The weight download Job of a shared cache (render/download_job.py), read from its status and
its pods: done, still downloading, or failed with the reason and the failing pod's message.
Pure; every message is built from the objects' own fields, so it changes only when they do (no
status write per reconcile).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nemotron_operator.render import names as n
from nemotron_operator.status.readiness import (
    STUCK,
    UNSCHEDULABLE,
    WAITING_FOR_STORAGE,
    Blocker,
    pod_blocker,
)

DOWNLOADING_WEIGHTS = "DownloadingWeights"
DOWNLOAD_FAILED = "DownloadFailed"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"  # set by the Job controller on its pods
DOWNLOAD_CONTAINER = "download"
MESSAGE_LINES = 3  # of a failing pod's termination message (its log's tail)
MESSAGE_CHARS = 400


@dataclass(frozen=True)
class DownloadState:
    done: bool
    blocker: Blocker | None  # why the serving pods wait; None once done


def _condition(job: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition.get("type") == type_ and condition.get("status") == "True":
            return dict(condition)
    return None


def _terminated(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for container in (pod.get("status") or {}).get("containerStatuses") or []:
        if container.get("name") != DOWNLOAD_CONTAINER:
            continue
        for state in (container.get("state") or {}, container.get("lastState") or {}):
            terminated = state.get("terminated")
            if terminated and terminated.get("exitCode", 0) != 0:
                return dict(terminated)
    return None


def failure_message(job_name: str, pods: Sequence[Mapping[str, Any]]) -> str | None:
    """The last failed attempt's message: its termination message (the log's last lines, by
    ``FallbackToLogsOnError``), else its reason and exit code. None when no attempt failed."""
    failed = []
    for pod in pods:
        if ((pod.get("metadata") or {}).get("labels") or {}).get(JOB_NAME_LABEL) != job_name:
            continue
        terminated = _terminated(pod)
        if terminated is not None:
            failed.append((str(terminated.get("finishedAt") or ""), pod, terminated))
    if not failed:
        return None
    _, pod, terminated = max(failed, key=lambda item: (item[0], item[1]["metadata"]["name"]))
    lines = [line.strip() for line in str(terminated.get("message") or "").splitlines()]
    text = " | ".join([line for line in lines if line][-MESSAGE_LINES:])[-MESSAGE_CHARS:]
    if not text:
        text = f"{terminated.get('reason', 'Error')}, exit code {terminated.get('exitCode')}"
    return f"pod {pod['metadata']['name']}: {text}"


def _stuck_attempt(job_name: str, pods: Sequence[Mapping[str, Any]]) -> Blocker | None:
    """An attempt that cannot start or keeps waiting (a missing token Secret, an image that
    cannot be pulled, no node for it): the Job would wait for its deadline without failing, so
    the pod's own blocker is reported, naming the Job."""
    for pod in pods:
        if ((pod.get("metadata") or {}).get("labels") or {}).get(JOB_NAME_LABEL) != job_name:
            continue
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        found = pod_blocker(pod)
        waits = (UNSCHEDULABLE, WAITING_FOR_STORAGE)
        if found is not None and (found.reason in STUCK or found.reason in waits):
            return Blocker(found.reason, f"download Job {job_name}: {found.message}")
    return None


def assess_download(
    desired: Mapping[str, Any], live: Mapping[str, Any] | None, pods: Sequence[Mapping[str, Any]]
) -> DownloadState:
    """``desired``: the rendered Job; ``live``: the Job as the cluster has it (None: not yet);
    ``pods``: the deployment's pods (the Job's are picked by the Job controller's label)."""
    metadata = desired["metadata"]
    name = metadata["name"]
    annotations = metadata.get("annotations") or {}
    what = f"{annotations.get(n.MODEL)}@{annotations.get(n.MODEL_REVISION)}"
    if live is not None and _condition(live, "Complete") is not None:
        return DownloadState(True, None)
    attempts = int(desired["spec"].get("backoffLimit", 0)) + 1
    last_failure = failure_message(name, pods)
    failed = _condition(live, "Failed") if live is not None else None
    if failed is not None:
        reason = str(failed.get("reason") or "Failed")
        detail = f"{reason}: {failed.get('message') or 'the Job failed'}"
        cause = f"; the last attempt failed: {last_failure}" if last_failure else ""
        return DownloadState(
            False,
            Blocker(
                DOWNLOAD_FAILED,
                f"Job {name} could not download {what} ({detail}){cause}; fix the cause "
                "(spec.model.revision, spec.model.source.huggingFace.tokenSecretRef, "
                "spec.storage.cache.size) or delete the Job to try again "
                f"(kubectl delete job {name} -n {metadata['namespace']}): the operator "
                "creates it again",
            ),
        )
    stuck = _stuck_attempt(name, pods)
    if stuck is not None:
        return DownloadState(False, stuck)
    status = (live or {}).get("status") or {}
    failures = int(status.get("failed") or 0)
    since = f" since {status['startTime']}" if status.get("startTime") else ""
    text = (
        f"Job {name} downloads {what} into the shared cache{since}, attempt "
        f"{min(failures + 1, attempts)} of {attempts}; the serving pods start once it succeeded"
    )
    if last_failure is not None:
        text += f"; the last attempt failed: {last_failure}"
    return DownloadState(False, Blocker(DOWNLOADING_WEIGHTS, text))
