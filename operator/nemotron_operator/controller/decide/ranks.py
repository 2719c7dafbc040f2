"""A multi-node replica on StatefulSets: a worker rank that died takes its leader down too.

The ranks of one replica are one torch.distributed job: when a worker's container dies (and its
kubelet restarts it), the leader and the other ranks wait on a peer that is gone, and the
restarted worker cannot rejoin a group that is not re-forming. A LeaderWorkerSet recreates the
whole group (``RecreateGroupOnPodRestart``); on StatefulSets the operator does what it can: it
deletes the leader pod of a replica one of whose workers died after that leader started, so the
leader starts again and every rank re-forms the group (the workers reconnect to the new leader).
What it cannot do: restart the workers when the leader dies (a StatefulSet restarts only its own
pod), nor notice a worker pod deleted or evicted and recreated by its StatefulSet (only a
container restart is reported). Times are the kubelet's, in whole seconds: a worker that dies
in the same second its leader started is taken for a death before that start (no restart), so a
group is never restarted twice for one death. docs/rendering.md, "A replica across nodes".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nemotron_operator.render import names as n


def _labels(pod: Mapping[str, Any]) -> Mapping[str, str]:
    labels: Mapping[str, str] = (pod.get("metadata") or {}).get("labels") or {}
    return labels


def _statuses(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    statuses: list[Mapping[str, Any]] = (pod.get("status") or {}).get("containerStatuses") or []
    return statuses


def _leader_started(pod: Mapping[str, Any]) -> str | None:
    """When the leader's containers were last started (RFC 3339, comparable as text)."""
    started = [
        str(((s.get("state") or {}).get("running") or {}).get("startedAt") or "")
        for s in _statuses(pod)
    ]
    return min(started) if started and all(started) else None


def _last_death(pod: Mapping[str, Any]) -> str:
    """When a container of the pod last died (its ``lastState.terminated.finishedAt``)."""
    return max(
        (
            str(((s.get("lastState") or {}).get("terminated") or {}).get("finishedAt") or "")
            for s in _statuses(pod)
        ),
        default="",
    )


def leaders_to_restart(pods: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The leader pods (StatefulSet layout: labelled with their replica) one of whose workers'
    containers died after the leader's own containers started."""
    replicas: dict[str, tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]] = {}
    for pod in pods:
        labels = _labels(pod)
        replica = labels.get(n.REPLICA)
        if replica is None or (pod.get("metadata") or {}).get("deletionTimestamp"):
            continue
        leaders, workers = replicas.setdefault(replica, ([], []))
        (leaders if labels.get(n.ROLE) == n.ROLE_LEADER else workers).append(pod)
    restart = []
    for leaders, workers in replicas.values():
        for leader in leaders:
            started = _leader_started(leader)
            if started is not None and any(_last_death(w) > started for w in workers):
                restart.append(leader)
    return restart
