"""The simulated kubelet's clock, logger and event recorder (core/v1 Events, as a real
kubelet writes them, through the cluster's :class:`~nemotron_sim.kubeapi.mirror.Mirror`)."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from nemotron_sim.kubeapi.kinds import EVENTS
from nemotron_sim.kubeapi.store import ObjectStore

log = logging.getLogger("nemotron_sim")
# Events remembered for de-duplication (client-go's event correlator keeps an LRU of 4096).
_REMEMBERED_EVENTS = 4096


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def involved(obj: Mapping[str, Any], api_version: str, kind: str) -> dict[str, Any]:
    md = obj.get("metadata", {})
    ref = {"apiVersion": api_version, "kind": kind, "name": md.get("name", "")}
    if md.get("namespace"):
        ref["namespace"] = md["namespace"]
    if md.get("uid"):
        ref["uid"] = md["uid"]
    return ref


class EventRecorder:
    """Writes core/v1 Events; a repeat of the same reason and message bumps ``count`` (kept
    here, as client-go's event correlator keeps it, so no Event is read back)."""

    def __init__(self, store: ObjectStore, *, enabled: bool = True) -> None:
        self._store = store
        self._enabled = enabled
        self._seen: dict[tuple[str, str, str], tuple[str, int]] = {}

    def record(
        self,
        component: str,
        involved_object: dict[str, Any],
        reason: str,
        message: str,
        *,
        warning: bool = False,
    ) -> None:
        if not self._enabled:
            return
        namespace = involved_object.get("namespace", "default")
        fingerprint = (involved_object.get("uid", involved_object["name"]), reason, message)
        now = now_rfc3339()
        existing = self._seen.get(fingerprint)
        if existing is not None:
            name, count = existing
            patch = {"count": count + 1, "lastTimestamp": now}
            # Queued: a write the API refuses (the Event expired) is logged by the write queue.
            self._store.merge_patch(EVENTS, namespace, name, patch)
            self._seen[fingerprint] = (name, count + 1)
            return
        name = f"{involved_object['name']}.{secrets.token_hex(8)}"
        self._seen[fingerprint] = (name, 1)
        if len(self._seen) > _REMEMBERED_EVENTS:
            del self._seen[next(iter(self._seen))]  # forget the oldest, as the real cache does
        self._store.create(
            EVENTS,
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": name, "namespace": namespace},
                "involvedObject": involved_object,
                "reason": reason,
                "message": message,
                "type": "Warning" if warning else "Normal",
                "count": 1,
                "firstTimestamp": now,
                "lastTimestamp": now,
                "source": {"component": component},
                "reportingComponent": component,
                "reportingInstance": "nemotron-operator-sim",
            },
        )
