"""The serving pods of a shared cache wait for its download Job (render/download_job.py).

Until the rendered Job has succeeded, the StatefulSets are not applied: a first deployment gets
none (no pod starts, none downloads, no GPU is held for a download), and a deployment that
already serves keeps its StatefulSets as they are (its pods keep serving the weights they
loaded) until the new revision's weights are complete; then the new template rolls. Level-based:
decided from the Job's status in the watch cache at every reconcile.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nemotron_operator.kube.resources import JOBS, STATEFULSETS, Resource, resource_of
from nemotron_operator.render import names as n
from nemotron_operator.status.download import assess_download
from nemotron_operator.status.readiness import Blocker


@dataclass(frozen=True)
class Gated:
    desired: list[dict[str, Any]]
    keep: frozenset[tuple[Resource, str]]  # live StatefulSets held as they are
    blocker: Blocker | None  # the download, while the serving pods wait for it


def is_download_pod(pod: dict[str, Any]) -> bool:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return labels.get(n.COMPONENT) == n.COMPONENT_DOWNLOAD


def split_pods(
    pods: Sequence[dict[str, Any]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the serving pods, the download Job's pods)."""
    return [p for p in pods if not is_download_pod(p)], [p for p in pods if is_download_pod(p)]


def gate(
    desired: list[dict[str, Any]],
    live: Mapping[tuple[Resource, str], dict[str, Any]],
    download_pods: Sequence[dict[str, Any]],
) -> Gated:
    """``desired`` without the StatefulSets while the download Job of ``desired`` has not
    succeeded; ``live`` is the children found, by resource and name."""
    job = next((obj for obj in desired if resource_of(obj) == JOBS), None)
    if job is None:
        return Gated(desired, frozenset(), None)
    state = assess_download(job, live.get((JOBS, job["metadata"]["name"])), download_pods)
    if state.done:
        return Gated(desired, frozenset(), None)
    held = [obj for obj in desired if resource_of(obj) != STATEFULSETS]
    keep = frozenset((res, name) for res, name in live if res == STATEFULSETS)
    return Gated(held, keep, state.blocker)
