"""The download Job read back (status/download.py) and the serving pods held for it
(controller/decide/download.py): running, retrying with the last failure, failed with the Job's
reason and the failing pod's message, done; the status that follows."""

from __future__ import annotations

from typing import Any

from nemotron_operator.controller.decide.download import gate, split_pods
from nemotron_operator.kube.resources import JOBS, STATEFULSETS
from nemotron_operator.render import names
from nemotron_operator.status import StatusInputs, compute_status
from nemotron_operator.status.download import (
    DOWNLOAD_FAILED,
    DOWNLOADING_WEIGHTS,
    assess_download,
)
from tests.unit.render.fakes import make_plan, of_kind, render

SHARED: dict[str, Any] = {"storage": {"cache": {"shared": True, "accessModes": ["ReadWriteMany"]}}}
TOKEN = {"source": {"huggingFace": {"tokenSecretRef": {"name": "hf", "key": "token"}}}}
NOW = "2026-12-05T07:00:00Z"


def rendered() -> list[dict[str, Any]]:
    return render(SHARED)


def live_job(desired: dict[str, Any], **status: Any) -> dict[str, Any]:
    return {**desired, "status": status}


def failed_pod(job: str, name: str, message: str, finished: str) -> dict[str, Any]:
    terminated = {"exitCode": 1, "reason": "Error", "message": message, "finishedAt": finished}
    return {
        "metadata": {
            "name": name,
            "labels": {
                "batch.kubernetes.io/job-name": job,
                names.COMPONENT: names.COMPONENT_DOWNLOAD,
            },
        },
        "status": {
            "phase": "Failed",
            "containerStatuses": [{"name": "download", "state": {"terminated": terminated}}],
        },
    }


def test_not_created_yet_then_running_then_done() -> None:
    (job,) = of_kind(rendered(), "Job")
    waiting = assess_download(job, None, [])
    assert not waiting.done
    assert waiting.blocker is not None
    assert waiting.blocker.reason == DOWNLOADING_WEIGHTS
    assert "attempt 1 of 3" in waiting.blocker.message
    running = assess_download(job, live_job(job, active=1, startTime=NOW), [])
    assert running.blocker is not None
    assert f"since {NOW}" in running.blocker.message
    done = live_job(job, succeeded=1, conditions=[{"type": "Complete", "status": "True"}])
    assert assess_download(job, done, []) == type(waiting)(True, None)


def test_a_retry_names_the_last_failure_and_a_failed_job_its_reason() -> None:
    (job,) = of_kind(rendered(), "Job")
    name = job["metadata"]["name"]
    pods = [
        failed_pod(name, f"{name}-a", "old error", "2026-12-05T07:00:01Z"),
        failed_pod(
            name, f"{name}-b", "line 1\n\nRevisionNotFoundError: 404", "2026-12-05T07:00:09Z"
        ),
        failed_pod("someone-else", "x", "not ours", "2026-12-05T07:00:30Z"),
    ]
    retrying = assess_download(job, live_job(job, failed=2, active=1), pods)
    assert retrying.blocker is not None
    assert retrying.blocker.reason == DOWNLOADING_WEIGHTS
    assert "attempt 3 of 3" in retrying.blocker.message
    assert f"pod {name}-b: line 1 | RevisionNotFoundError: 404" in retrying.blocker.message
    assert "not ours" not in retrying.blocker.message
    failed_condition = {
        "type": "Failed",
        "status": "True",
        "reason": "DeadlineExceeded",
        "message": "Job was active longer than specified deadline",
    }
    failed = assess_download(job, live_job(job, failed=3, conditions=[failed_condition]), pods)
    assert failed.blocker is not None
    assert failed.blocker.reason == DOWNLOAD_FAILED
    assert "DeadlineExceeded: Job was active longer" in failed.blocker.message
    assert "RevisionNotFoundError" in failed.blocker.message
    assert f"kubectl delete job {name} -n ai" in failed.blocker.message


def test_the_gate_holds_the_statefulsets_until_the_job_succeeded() -> None:
    desired = rendered()
    (job,) = of_kind(desired, "Job")
    (sts,) = of_kind(desired, "StatefulSet")
    old = {**sts, "metadata": {**sts["metadata"], "name": "super-vl"}}
    live = {(STATEFULSETS, "super-vl"): old}
    held = gate(desired, live, [])
    assert of_kind(held.desired, "StatefulSet") == []
    assert of_kind(held.desired, "Job") == [job]
    assert held.keep == frozenset({(STATEFULSETS, "super-vl")})  # the old pods keep serving
    assert held.blocker is not None
    complete = live_job(job, conditions=[{"type": "Complete", "status": "True"}])
    live[(JOBS, job["metadata"]["name"])] = complete
    opened = gate(desired, live, [])
    assert opened.desired == desired
    assert opened.keep == frozenset()
    assert opened.blocker is None
    without_job = render({})
    assert gate(without_job, {}, []).desired == without_job


def test_download_pods_are_not_serving_pods() -> None:
    (job,) = of_kind(rendered(), "Job")
    serving = {"metadata": {"name": "p", "labels": {names.COMPONENT: names.COMPONENT_SERVING}}}
    download = failed_pod(job["metadata"]["name"], "d", "m", NOW)
    assert split_pods([serving, download]) == ([serving], [download])


def status_with(blocker: Any) -> Any:
    inputs = StatusInputs(
        generation=1, replicas=3, selector="s", endpoint="e", plan=make_plan(), download=blocker
    )
    return {c.type: c for c in compute_status(inputs, None, now=NOW).conditions}


def test_downloading_is_progress_and_a_failed_download_degrades() -> None:
    (job,) = of_kind(rendered(), "Job")
    downloading = assess_download(job, None, []).blocker
    conditions = status_with(downloading)
    assert conditions["Progressing"].status == "True"
    assert conditions["Progressing"].reason == DOWNLOADING_WEIGHTS
    assert conditions["Ready"].reason == DOWNLOADING_WEIGHTS
    assert conditions["Degraded"].status == "False"
    failed_condition = {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}
    failed = assess_download(job, live_job(job, conditions=[failed_condition]), []).blocker
    conditions = status_with(failed)
    assert conditions["Progressing"].status == "False"
    assert conditions["Degraded"].status == "True"
    assert conditions["Degraded"].reason == DOWNLOAD_FAILED
    assert "BackoffLimitExceeded" in conditions["Degraded"].message


def test_an_attempt_waiting_for_its_token_secret_says_so() -> None:
    (job,) = of_kind(render(SHARED | {"model": TOKEN}), "Job")
    name = job["metadata"]["name"]
    waiting = {
        "name": "download",
        "state": {
            "waiting": {
                "reason": "CreateContainerConfigError",
                "message": 'secret "hf" not found',
            }
        },
    }
    pod = {
        "metadata": {"name": f"{name}-x", "labels": {"batch.kubernetes.io/job-name": name}},
        "status": {"phase": "Pending", "containerStatuses": [waiting]},
    }
    found = assess_download(job, live_job(job, active=1), [pod]).blocker
    assert found is not None
    assert found.reason == "SecretNotFound"
    assert f"download Job {name}: pod {name}-x container download" in found.message
    assert "spec.model.source.huggingFace.tokenSecretRef" in found.message
    assert status_with(found)["Degraded"].status == "True"  # stuck: waiting will not help
