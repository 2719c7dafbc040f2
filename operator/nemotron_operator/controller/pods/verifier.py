"""The behavioural check before a serving pod takes traffic.

Rendered pods carry a readiness gate (``spec.readinessGates``: ``serving.nemotron.io/verified``):
the kubelet keeps them out of Ready, so out of the Service's endpoints and any InferencePool,
until that condition is True. Once a pod's vLLM reports ready (``ContainersReady``), the
reconcile hands it here; a background task sends it the requests of ``observe.behaviour`` (what
the deployment promises: chat, the reasoning split, a tool call, JSON output) and sets the
condition (``kube.writes.set_pod_condition``): True, or False naming the failed check with an
excerpt. That pod status change brings the reconcile back, which reads the result from the pods
(``status.verification``) into the ``Verified`` condition (an Event when it turns False).

No retry storm: a pod that failed is checked again only after a back-off (``BACKOFF_FIRST``
doubling to ``BACKOFF_CAP``), and at most ``MAX_CONCURRENT`` checks run at once. No check twice:
once a result is written, the pod as the watch cache still shows it (the write's event not in
yet) is not checked again unless a container restarted since. Workers of a
multi-node replica run no API server: their gate follows their leader's. The results live in the
pods, so an operator restart costs at most one more check of a pod that had failed.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import aiohttp

from nemotron_operator.api import NemotronDeployment
from nemotron_operator.catalog.vllm_rule_input import reasoning_parser, tool_call_parser
from nemotron_operator.controller.decide.desired import Planned
from nemotron_operator.controller.pods.tasks import PodTasks, backoff
from nemotron_operator.kube import ApiError, KubeClient, writes
from nemotron_operator.observe.behaviour import (
    CHAT_PATH,
    REQUEST_TIMEOUT_SECONDS,
    Promises,
    checks_for,
    excerpt,
    verdict,
)
from nemotron_operator.render.engine import SERVE_PORT
from nemotron_operator.status import verification as v
from nemotron_operator.telemetry.metrics import OperatorMetrics

BACKOFF_FIRST = 30.0
BACKOFF_CAP = 900.0
MAX_CONCURRENT = 8
logger = logging.getLogger(__name__)

Key = tuple[str, str]  # the NemotronDeployment's namespace and name
PodKey = tuple[str, str, str]  # namespace, name, uid
Restarts = tuple[tuple[str, int], ...]  # each container's restartCount: which processes ran


def promises(deployment: NemotronDeployment, planned: Planned) -> Promises:
    spec, model = deployment.spec, planned.result.model
    return Promises(
        served_name=spec.model.served_name or deployment.metadata.name,
        reasoning_parser=reasoning_parser(spec, model)[0],
        tool_call_parser=tool_call_parser(spec, model),
        speculative_tokens=planned.result.plan.speculative_tokens,
    )


def _pod_key(pod: Mapping[str, Any]) -> PodKey:
    md = pod.get("metadata") or {}
    return str(md.get("namespace", "")), str(md.get("name", "")), str(md.get("uid", ""))


def _restarts(pod: Mapping[str, Any]) -> Restarts:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    counts = ((str(c.get("name", "")), int(c.get("restartCount") or 0)) for c in statuses)
    return tuple(sorted(counts))


class Verifier:
    def __init__(
        self,
        kube: KubeClient,
        metrics: OperatorMetrics,
        *,
        port: int = SERVE_PORT,
        timeout: float = REQUEST_TIMEOUT_SECONDS,
        backoff_first: float = BACKOFF_FIRST,
        backoff_cap: float = BACKOFF_CAP,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.kube = kube
        self.metrics = metrics
        self.port = port
        self.timeout = timeout
        self.backoff_first = backoff_first
        self.backoff_cap = backoff_cap
        self.clock = clock
        self._running = PodTasks()  # at most one check (or sync) per pod
        # Per deployment, the pods that failed: how often, and no new check before when.
        self._failed: dict[Key, dict[PodKey, tuple[int, float]]] = {}
        # Per deployment, the pods whose result is written, with their restart counts then.
        self._written: dict[Key, dict[PodKey, Restarts]] = {}
        self._slots = asyncio.Semaphore(MAX_CONCURRENT)

    async def seen(
        self,
        key: Key,
        deployment: NemotronDeployment | None,
        planned: Planned | None,
        pods: Sequence[Mapping[str, Any]],
    ) -> v.VerifiedCondition | None:
        """Start the checks these pods need, make workers follow their leaders, and return the
        ``Verified`` condition (None while there is no plan)."""
        if deployment is None or planned is None:
            return None
        enabled = deployment.spec.verification.enabled
        if enabled:
            wanted = promises(deployment, planned)
            for pod in v.leaders(pods):
                if self._due(key, pod):
                    self._start(key, pod, wanted)
            await self._follow_leaders(pods)
        present = {_pod_key(p) for p in pods}
        for kept in (self._failed.get(key, {}), self._written.get(key, {})):
            for pk in [pk for pk in kept if pk not in present]:
                del kept[pk]
        return v.verified_condition(pods, enabled=enabled)

    def revision(self, key: Key) -> tuple[PodKey, ...]:
        """The failed pods whose back-off has passed (``DeploymentPart``, the fingerprint: a
        reconcile skipped on unchanged inputs must still start their next check)."""
        now = self.clock()
        return tuple(sorted(pk for pk, (_, at) in self._failed.get(key, {}).items() if now >= at))

    def forget(self, key: Key) -> None:
        """The deployment is gone."""
        self._failed.pop(key, None)
        self._written.pop(key, None)

    def _due(self, key: Key, pod: Mapping[str, Any]) -> bool:
        pk = _pod_key(pod)
        if pk in self._running or not v.containers_ready(pod):
            return False
        status, reason, _ = v.gate_status(pod)
        written = self._written.get(key, {}).get(pk)
        if status == "True":  # checked again after a restart, once (not again from a stale cache)
            return v.restarted_since_check(pod) and written != _restarts(pod)
        failed = self._failed.get(key, {}).get(pk)
        if failed is not None and reason == v.CHECK_FAILED:
            return self.clock() >= failed[1]  # the failure is shown: its back-off decides
        # A result written for these processes that the cache does not show yet: not again.
        return written != _restarts(pod)

    def _start(self, key: Key, pod: Mapping[str, Any], wanted: Promises) -> None:
        self._running.start(_pod_key(pod), self._check(key, dict(pod), wanted))

    async def _check(self, key: Key, pod: dict[str, Any], wanted: Promises) -> None:
        try:
            await self._check_and_record(key, pod, wanted)
        except Exception:  # a background task: log, the next reconcile tries again
            logger.exception("%s/%s: behavioural check of %s", *key, v.pod_name(pod))

    async def _check_and_record(self, key: Key, pod: dict[str, Any], wanted: Promises) -> None:
        name = v.pod_name(pod)
        async with self._slots:
            failure = await self._run_checks(pod, wanted)
        pk = _pod_key(pod)
        failed = self._failed.setdefault(key, {})
        if failure is None:
            failed.pop(pk, None)
            condition = {"status": "True", "reason": v.PASSED, "message": "all checks passed"}
            logger.info("%s/%s: pod %s passed the behavioural check", *key, name)
        else:
            count = failed.get(pk, (0, 0.0))[0] + 1
            delay = backoff(count, self.backoff_first, self.backoff_cap)
            failed[pk] = (count, self.clock() + delay)
            condition = {"status": "False", "reason": v.CHECK_FAILED, "message": failure}
            logger.warning(
                "%s/%s: pod %s failed the behavioural check (again in %.0f s): %s",
                *key, name, delay, failure,
            )  # fmt: skip
        self.metrics.verification_finished("all", "passed" if failure is None else "failed")
        if await self._set(pod, condition):
            self._written.setdefault(key, {})[pk] = _restarts(pod)

    async def _run_checks(self, pod: Mapping[str, Any], wanted: Promises) -> str | None:
        """None when every check passes; else ``check <name> failed: <what>``."""
        ip = (pod.get("status") or {}).get("podIP")
        if not ip:
            return "check chat failed: the pod has no IP"
        url = f"http://{ip}:{self.port}{CHAT_PATH}"
        timeout = aiohttp.ClientTimeout(total=self.timeout)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            for check in checks_for(wanted):
                try:
                    async with session.post(url, json=check.body) as response:
                        try:
                            answer: Any = await response.json(content_type=None)
                        except ValueError:
                            answer = await response.text()
                        problem = verdict(check, response.status, answer)
                except (aiohttp.ClientError, TimeoutError, OSError) as exc:
                    problem = f"request failed: {excerpt(repr(exc))}"
                result = "passed" if problem is None else "failed"
                self.metrics.verification_finished(check.name, result)
                if problem is not None:
                    return f"check {check.name} failed: {problem}"
        return None

    async def _follow_leaders(self, pods: Sequence[Mapping[str, Any]]) -> None:
        """A worker's gate is True exactly when its replica's leader passed."""
        leaders = {v.replica(p): p for p in v.leaders(pods)}
        for pod in pods:
            if v.role(pod) != "worker" or not v.has_gate(pod):
                continue
            leader = leaders.get(v.replica(pod))
            passed = leader is not None and v.gate_status(leader)[0] == "True"
            status = v.gate_status(pod)[0]
            if passed and status != "True":
                leader_name = v.pod_name(leader) if leader is not None else "?"
                message = f"leader {leader_name} passed the behavioural check"
                await self._set(pod, {"status": "True", "reason": v.FOLLOWING_LEADER,
                                      "message": message})  # fmt: skip
            elif not passed and status == "True":
                message = "the replica's leader has not passed the behavioural check"
                await self._set(pod, {"status": "False", "reason": v.FOLLOWING_LEADER,
                                      "message": message})  # fmt: skip

    async def _set(self, pod: Mapping[str, Any], condition: Mapping[str, str]) -> bool:
        """Write the gate condition; whether it was written. A pod gone or replaced (404, 409)
        needs nothing; any other failure (the API server unavailable) leaves the gate as it was,
        and the next reconcile checks the pod again."""
        try:
            await writes.set_pod_condition(
                self.kube, pod, {"type": v.GATE, **condition}, now=datetime.now(UTC)
            )
        except ApiError as exc:
            if exc.status not in (404, 409):
                logger.warning("could not set %s on pod %s: %s", v.GATE, v.pod_name(pod), exc)
            return False
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            logger.warning("could not set %s on pod %s: %r", v.GATE, v.pod_name(pod), exc)
            return False
        return True
