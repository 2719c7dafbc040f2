"""The scrape timer, the plan check, the autoscaler and the per-deployment metrics, in the running
operator (docs/observability.md).

The reconcile tells this module what it saw (``seen``: the plan, the ready serving pods, the
spec's autoscaling, the capacity) and asks it what status should show (``StatusParts``). The
timer scrapes each known deployment's ready leaders every ``scrape_seconds``; when a figure moved
meaningfully or a pod published its cache config, it queues the deployment, and the reconcile
writes status then — the only writer of status stays the reconcile. The autoscaler writes
``spec.replicas`` through the scale subresource, as an HPA would, and records an Event.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import aiohttp

from nemotron_operator.api import NemotronDeployment, NemotronDeploymentStatus, Plan
from nemotron_operator.api.autoscaling import AutoscalingSpec
from nemotron_operator.api.status import PlanCheck, Throughput
from nemotron_operator.controller.queue import Key, WorkQueue
from nemotron_operator.controller.settings import OperatorConfig
from nemotron_operator.kube import ApiError, KubeClient
from nemotron_operator.kube.resources import EVENTS, NEMOTRON_DEPLOYMENTS
from nemotron_operator.observe.autoscale import AutoscaleInputs, decide
from nemotron_operator.observe.tracker import DeploymentTracker
from nemotron_operator.render import names as n
from nemotron_operator.render.engine import SERVE_PORT
from nemotron_operator.telemetry import DeploymentFigures, OperatorMetrics, PlanFigures
from nemotron_operator.telemetry.scraper import ScrapeTarget, scrape_pods

logger = logging.getLogger(__name__)
_COMPONENT = "nemotron-operator"
_MAX_PARALLEL_DEPLOYMENTS = 8


@dataclass(frozen=True)
class PlanAccuracy:
    status: str  # "True" / "False"
    reason: str
    message: str


@dataclass(frozen=True)
class StatusParts:
    """What this module contributes to status; None: keep what status has."""

    throughput: Throughput | None = None
    plan_check: PlanCheck | None = None
    plan_accurate: PlanAccuracy | None = None
    capacity_problem: str | None = None  # the autoscaler wanted replicas that do not fit


@dataclass
class _View:
    """What the last reconcile saw of one deployment."""

    owner: dict[str, Any]  # name, namespace, uid, resourceVersion: for Events
    plan: Plan | None
    targets: list[ScrapeTarget]
    live_pods: set[str]
    replicas: int
    ready_replicas: int
    autoscaling: AutoscalingSpec | None
    replicas_that_fit: int | None


@dataclass
class _State:
    tracker: DeploymentTracker = field(default_factory=DeploymentTracker)
    view: _View | None = None
    plan_key: tuple[Any, ...] | None = None
    capacity_problem: str | None = None
    time_to_ready_set: bool = False


def _pod_ready(pod: Mapping[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def scrape_targets(pods: Sequence[Mapping[str, Any]], port: int = SERVE_PORT) -> list[ScrapeTarget]:
    """Ready serving leaders with an IP: only they run vLLM's API server (workers are headless)."""
    targets = []
    for pod in pods:
        metadata = pod.get("metadata") or {}
        labels = metadata.get("labels") or {}
        ip = (pod.get("status") or {}).get("podIP")
        if labels.get(n.ROLE, n.ROLE_LEADER) != n.ROLE_LEADER or not ip or not _pod_ready(pod):
            continue
        if metadata.get("deletionTimestamp"):
            continue
        targets.append(
            ScrapeTarget(
                key=str(metadata.get("uid") or metadata.get("name")),
                pod=str(metadata.get("name")),
                url=f"http://{ip}:{port}/metrics",
            )
        )
    return sorted(targets, key=lambda t: t.pod)


def _timestamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _seconds_between(start: str | None, end: str | None) -> float | None:
    if not start or not end:
        return None
    try:
        a = datetime.fromisoformat(start.replace("Z", "+00:00"))
        b = datetime.fromisoformat(end.replace("Z", "+00:00"))
    except ValueError:
        return None
    return max(0.0, (b - a).total_seconds())


class Observability:
    def __init__(
        self,
        kube: KubeClient,
        config: OperatorConfig,
        queue: WorkQueue,
        metrics: OperatorMetrics,
    ) -> None:
        self.kube = kube
        self.config = config
        self.queue = queue
        self.metrics = metrics
        self._states: dict[Key, _State] = {}
        self._session: aiohttp.ClientSession | None = None

    # -- called by the reconcile ---------------------------------------------------------------
    def seen(
        self,
        raw: Mapping[str, Any],
        deployment: NemotronDeployment | None,
        plan: Plan | None,
        pods: Sequence[Mapping[str, Any]],
        *,
        ready_replicas: int,
        replicas_that_fit: int | None,
        previous: NemotronDeploymentStatus | None,
    ) -> StatusParts:
        metadata = raw.get("metadata") or {}
        key = (str(metadata.get("namespace")), str(metadata.get("name")))
        state = self._states.get(key)
        if state is None:
            state = self._states[key] = _State()
            if previous is not None:  # a restarted operator starts from what status shows
                state.tracker.shown = previous.throughput
                state.tracker.plan_check_status = previous.plan_check
        tracker = state.tracker
        plan_key = (
            None
            if plan is None
            else (plan.gpu_product, plan.kv_cache_blocks, plan.max_model_len, plan.tensor_parallel)
        )
        if plan_key != state.plan_key and state.plan_key is not None:
            tracker.replan()
        state.plan_key = plan_key
        live = {str((p.get("metadata") or {}).get("uid")) for p in pods}
        tracker.forget_pods(live)
        spec_replicas = int((raw.get("spec") or {}).get("replicas", 1) or 0)
        state.view = _View(
            owner={k: metadata.get(k) for k in ("name", "namespace", "uid", "resourceVersion")},
            plan=plan,
            targets=scrape_targets(pods),
            live_pods=live,
            replicas=spec_replicas,
            ready_replicas=ready_replicas,
            autoscaling=deployment.spec.autoscaling if deployment is not None else None,
            replicas_that_fit=replicas_that_fit,
        )
        if deployment is not None and deployment.spec.autoscaling is None:
            state.capacity_problem = None
        return self._parts(state)

    def _parts(self, state: _State) -> StatusParts:
        tracker = state.tracker
        accuracy = None
        check = tracker.plan_check_status
        if check is not None and state.view is not None and state.view.plan is not None:
            result = tracker.last_plan_check
            if result is not None:
                accuracy = PlanAccuracy(
                    "True" if result.accurate else "False", result.reason, result.message
                )
        return StatusParts(
            throughput=tracker.shown,
            plan_check=check,
            plan_accurate=accuracy,
            capacity_problem=state.capacity_problem,
        )

    def reconciled(
        self, key: Key, status: NemotronDeploymentStatus | None, created: str | None
    ) -> None:
        """Readiness and plan metrics from the status the reconcile computed."""
        state = self._states.get(key)
        if status is None or status.plan is None:
            return
        product = status.plan.gpu_product
        ready_condition = next((c for c in status.conditions if c.type == "Ready"), None)
        is_ready = ready_condition is not None and ready_condition.status == "True"
        seconds = None
        if ready_condition is not None and is_ready and state and not state.time_to_ready_set:
            seconds = _seconds_between(created, ready_condition.last_transition_time)
            state.time_to_ready_set = seconds is not None
        self.metrics.set_readiness(
            key[0],
            key[1],
            product,
            DeploymentFigures(
                desired_replicas=status.replicas or 0,
                ready_replicas=status.ready_replicas or 0,
                ready=is_ready,
                seconds_to_first_ready=seconds,
            ),
        )
        self.metrics.set_plan(key[0], key[1], product, PlanFigures.from_plan(status.plan))

    def forget(self, key: Key) -> None:
        """The deployment is gone: no state, no series."""
        self._states.pop(key, None)
        self.metrics.forget(*key)

    # -- the timer -----------------------------------------------------------------------------
    async def run(self) -> None:
        if self.config.scrape_seconds <= 0:
            return
        async with aiohttp.ClientSession() as session:
            self._session = session
            slots = asyncio.Semaphore(_MAX_PARALLEL_DEPLOYMENTS)

            async def guarded(key: Key) -> None:
                async with slots:
                    try:
                        await self.tick(key)
                    except ApiError as exc:
                        logger.warning("%s/%s: observing failed: %s", *key, exc)
                    except Exception:
                        logger.exception("%s/%s: observing failed unexpectedly", *key)

            while True:
                await asyncio.sleep(self.config.scrape_seconds)
                await asyncio.gather(*(guarded(key) for key in list(self._states)))

    async def tick(self, key: Key) -> None:
        state = self._states.get(key)
        if state is None or state.view is None or self._session is None:
            return
        view = state.view
        result = await scrape_pods(
            self._session,
            view.targets,
            clock=time.monotonic,
            per_pod_timeout=self.config.scrape_timeout_seconds,
            concurrency=self.config.scrape_concurrency,
        )
        for target in view.targets:
            self.metrics.scrape_finished(result.outcome(target.pod))
        if result.failures:
            logger.info("%s/%s: no metrics from %s", *key, result.failures)
        if self._states.get(key) is not state:
            return  # forgotten while scraping
        update = state.tracker.update(
            view.plan,
            result.samples,
            result.pods,
            sorted(result.failures),
            sampled_at=_timestamp(datetime.now(UTC)),
            shortfall_threshold=self.config.plan_shortfall_threshold,
        )
        product = view.plan.gpu_product if view.plan is not None else "unknown"
        if view.targets:
            self.metrics.set_throughput(key[0], key[1], product, update.figures)
        if update.plan_check is not None:
            self.metrics.set_plan_check(key[0], key[1], product, update.plan_check)
        if update.throughput_changed or update.plan_check_changed:
            logger.debug(
                "%s/%s: status to update: %s%s",
                *key,
                ", ".join(update.throughput_changed) or "-",
                "; plan check" if update.plan_check_changed else "",
            )
            self.queue.add(key)
        if view.autoscaling is not None and view.plan is not None:
            await self._autoscale(key, state, view)

    async def _autoscale(self, key: Key, state: _State, view: _View) -> None:
        assert view.autoscaling is not None
        assert view.plan is not None
        figures = state.tracker.last_figures
        answered = figures is not None and figures.pods_sampled > 0
        decision = decide(
            view.autoscaling,
            AutoscaleInputs(
                replicas=view.replicas,
                ready_replicas=view.ready_replicas,
                requests_waiting=figures.requests_waiting if answered and figures else None,
                kv_cache_usage=figures.kv_cache_usage if answered and figures else None,
                gpu_product=view.plan.gpu_product,
                gpus_per_replica=view.plan.gpus_per_replica,
                replicas_that_fit=view.replicas_that_fit,
            ),
            state.tracker.autoscale,
            time.monotonic(),
        )
        state.tracker.autoscale = decision.state
        changed = decision.changed(view.replicas)
        # The status message is stable (no live figure in it), so a stuck autoscaler writes
        # status and posts its Warning once, not every tick.
        problem = None
        if decision.capacity_limited and not changed:
            problem = (
                f"autoscaling wants more replicas than the cluster's {view.plan.gpu_product} GPUs "
                f"hold ({view.replicas_that_fit} replicas of {view.plan.gpus_per_replica} GPUs): "
                f"add {view.plan.gpu_product} nodes or lower spec.autoscaling.maxReplicas"
            )
        if problem != state.capacity_problem:
            state.capacity_problem = problem
            self.queue.add(key)
            if problem is not None:
                await self._event(view.owner, decision.reason, decision.message, warning=True)
        if changed:
            await self.kube.patch(
                NEMOTRON_DEPLOYMENTS,
                key[0],
                key[1],
                {"spec": {"replicas": decision.replicas}},
                subresource="scale",
            )
            view.replicas = decision.replicas
            logger.info("%s/%s: %s", *key, decision.message)
            await self._event(
                view.owner, decision.reason, decision.message, warning=decision.capacity_limited
            )

    async def _event(
        self, owner: Mapping[str, Any], reason: str, message: str, *, warning: bool
    ) -> None:
        stamp = _timestamp(datetime.now(UTC))
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{owner['name']}.{secrets.token_hex(8)}",
                "namespace": owner["namespace"],
            },
            "involvedObject": {
                "apiVersion": NEMOTRON_DEPLOYMENTS.api_version,
                "kind": NEMOTRON_DEPLOYMENTS.kind,
                **owner,
            },
            "type": "Warning" if warning else "Normal",
            "reason": reason,
            "message": message[:1024],
            "source": {"component": _COMPONENT},
            "reportingComponent": _COMPONENT,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        with contextlib.suppress(ApiError):  # an Event is a courtesy; losing one is no failure
            await self.kube.create(EVENTS, str(owner["namespace"]), event)
