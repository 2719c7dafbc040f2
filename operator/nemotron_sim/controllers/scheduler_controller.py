"""The simulated kube-scheduler: binds pending pods to nodes, or marks them Unschedulable.

It keeps its own account of what bound pods request (the real scheduler's "assumed pods"
cache), so a pod bound a moment ago counts before its watch event comes back.
"""

from __future__ import annotations

import asyncio
import contextlib
from fractions import Fraction
from typing import Any

from nemotron_sim.apiserver.errors import ApiError
from nemotron_sim.apiserver.store import Store
from nemotron_sim.controllers import scheduler
from nemotron_sim.controllers.kinds import NODES, PODS
from nemotron_sim.controllers.pod_status import scheduled_condition
from nemotron_sim.controllers.runtime import EventRecorder, involved, log, now_rfc3339
from nemotron_sim.kubeapi.resources import WatchEvent

COMPONENT = "default-scheduler"
_FINISHED = ("Succeeded", "Failed")


class SchedulerController:
    def __init__(self, store: Store, recorder: EventRecorder) -> None:
        self._store = store
        self._recorder = recorder
        self._pending: dict[tuple[str, str], None] = {}
        self._bound: dict[str, tuple[str, dict[str, Fraction]]] = {}
        self._usage: scheduler.Usage = {}
        self._wake = asyncio.Event()
        self.passes = 0

    def observe(self, event: WatchEvent) -> None:
        if event.key == NODES:
            self._wake.set()
        if event.key != PODS:
            return
        pod = event.obj
        md = pod.get("metadata", {})
        uid, key = md.get("uid", ""), (md.get("namespace", ""), md.get("name", ""))
        node = (pod.get("spec") or {}).get("nodeName")
        finished = (pod.get("status") or {}).get("phase") in _FINISHED
        if event.type == "DELETED" or finished:
            self._pending.pop(key, None)
            if self._forget(uid):
                self._wake.set()  # resources came free: pending pods may fit now
        elif node:
            self._pending.pop(key, None)
            self._assume(uid, node, pod)
        elif not md.get("deletionTimestamp") and key not in self._pending:
            self._pending[key] = None
            self._wake.set()

    def _assume(self, uid: str, node: str, pod: dict[str, Any]) -> None:
        if uid in self._bound:
            return
        requests = scheduler.pod_requests(pod)
        self._bound[uid] = (node, requests)
        scheduler.add_usage(self._usage, node, requests)

    def _forget(self, uid: str) -> bool:
        bound = self._bound.pop(uid, None)
        if bound is None:
            return False
        node, requests = bound
        scheduler.add_usage(self._usage, node, {k: -v for k, v in requests.items()})
        return True

    async def run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                self.schedule_pending()
            except Exception:  # noqa: BLE001 - a bug in one pass must not stop scheduling
                log.exception("scheduler: a scheduling pass failed")
            await asyncio.sleep(0)

    def schedule_pending(self) -> None:
        """One pass over every pending pod, oldest first."""
        self.passes += 1
        nodes = list(self._store.scan(NODES))
        for key in list(self._pending):
            pod = self._store.peek(PODS, *key)
            if pod is None or (pod.get("spec") or {}).get("nodeName"):
                self._pending.pop(key, None)
                continue
            with contextlib.suppress(ApiError):
                self._schedule_one(pod, nodes)

    def _schedule_one(self, pod: dict[str, Any], nodes: list[dict[str, Any]]) -> None:
        md = pod["metadata"]
        namespace, name = md.get("namespace", ""), md["name"]
        decision = scheduler.schedule(pod, nodes, self._usage)
        now = now_rfc3339()
        if decision.node is None:
            if _scheduled_message(pod) != decision.message:
                status = {
                    "phase": "Pending",
                    "conditions": [scheduled_condition(False, now, decision.message)],
                }
                self._store.merge_patch(
                    PODS, namespace, name, {"status": status}, subresource="status"
                )
                self._recorder.record(
                    COMPONENT,
                    involved(pod, "v1", "Pod"),
                    "FailedScheduling",
                    decision.message,
                    warning=True,
                )
            return
        # A real binding sets PodScheduled=True in the same write; here the kubelet's first
        # status write, right after this one, carries it (one write per pod less).
        bound = self._store.merge_patch(
            PODS, namespace, name, {"spec": {"nodeName": decision.node}}
        )
        self._pending.pop((namespace, name), None)
        self._assume(md.get("uid", ""), decision.node, bound)
        self._recorder.record(
            COMPONENT,
            involved(pod, "v1", "Pod"),
            "Scheduled",
            f"Successfully assigned {namespace}/{name} to {decision.node}",
        )


def _scheduled_message(pod: dict[str, Any]) -> str | None:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return str(condition.get("message", ""))
    return None
