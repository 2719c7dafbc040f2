"""The scrape timer, the plan check, the autoscaler and the per-deployment metrics, in the running
operator (docs/observability.md).

The reconcile tells this module what it saw (``seen``: the plan, the ready serving pods, the
spec's autoscaling, the capacity) and asks it what status should show (``StatusParts``). A ready
leader never sampled before is scraped right then, so the status that says Ready carries the
plan check and the first throughput. The timer scrapes each known deployment's ready leaders
every ``scrape_seconds``; when a figure moved meaningfully or a pod published its cache config,
it queues the deployment, and the reconcile (status's one writer) writes it. The autoscaler
(driven by the timer only) writes ``spec.replicas`` through the scale subresource, as an HPA
would, and records an Event.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import aiohttp

from nemotron_operator.api import NemotronDeployment, NemotronDeploymentStatus, Plan
from nemotron_operator.api.autoscaling import AutoscalingSpec
from nemotron_operator.api.status import PlanCheck, Throughput
from nemotron_operator.controller.events import event_body
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
    # One scrape at a time (tick, first sample): no rates over milliseconds, no racing bases.
    scraping: asyncio.Lock = field(default_factory=asyncio.Lock)
    tried_inline: set[str] = field(default_factory=set)  # pod keys a reconcile scraped
    scraped_at: float = float("-inf")  # monotonic


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


def _unsampled(state: _State) -> set[str]:
    """Ready leaders never sampled, nor tried by a reconcile."""
    keys = {t.key for t in state.view.targets} if state.view is not None else set()
    return {k for k in keys - state.tried_inline if not state.tracker.sampled(k)}


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
    async def seen(
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
        state.view = _View(
            owner={k: metadata.get(k) for k in ("name", "namespace", "uid", "resourceVersion")},
            plan=plan,
            targets=scrape_targets(pods),
            live_pods=live,
            replicas=int((raw.get("spec") or {}).get("replicas", 1) or 0),
            ready_replicas=ready_replicas,
            autoscaling=deployment.spec.autoscaling if deployment is not None else None,
            replicas_that_fit=replicas_that_fit,
        )
        if deployment is not None and deployment.spec.autoscaling is None:
            state.capacity_problem = None
        state.tried_inline &= live
        await self._first_samples(key, state)
        return self._parts(state)

    async def _first_samples(self, key: Key, state: _State) -> None:
        """A ready leader never sampled (nor tried here): scrape all leaders now (the figures are
        the deployment's), without queueing (status is written next) or autoscaling (the timer's
        job); a pod that does not answer is left to the timer."""
        if self._session is None or self._session.closed or not _unsampled(state):
            return  # the usual case: no wait for a tick scraping a slow pod
        async with state.scraping:
            view, new = state.view, _unsampled(state)
            if view is None or not new or self._states.get(key) is not state:
                return
            state.tried_inline |= new
            try:
                await self._scrape(key, state, view)
            except RuntimeError:  # the timer's session closed under us: the operator is stopping
                if self._session is None or not self._session.closed:
                    raise

    async def _scrape(self, key: Key, state: _State, view: _View) -> bool:
        """Scrape and update the tracker (holding ``state.scraping``); True: status to change."""
        if self._session is None or self._session.closed:
            return False
        result = await scrape_pods(
            self._session,
            view.targets,
            clock=time.monotonic,
            per_pod_timeout=self.config.scrape_timeout_seconds,
            concurrency=self.config.scrape_concurrency,
            wall_clock=time.time,
        )
        for target in view.targets:
            self.metrics.scrape_finished(result.outcome(target.pod))
        if result.failures:
            logger.info("%s/%s: no metrics from %s", *key, result.failures)
        state.scraped_at = time.monotonic()
        if self._states.get(key) is not state:
            return False  # forgotten while scraping
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
        moved = [*update.throughput_changed, *(["planCheck"] if update.plan_check_changed else [])]
        if moved:
            logger.debug("%s/%s: status to update: %s", *key, ", ".join(moved))
        return bool(moved)

    def _parts(self, state: _State) -> StatusParts:
        tracker = state.tracker
        accuracy = None
        check, result = tracker.plan_check_status, tracker.last_plan_check
        planned = state.view is not None and state.view.plan is not None
        if check is not None and result is not None and planned:
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
        async with state.scraping:
            view = state.view
            # Just sampled by a reconcile: rates over a fraction of an interval would be noise.
            recent = time.monotonic() - state.scraped_at < self.config.scrape_seconds / 2
            if not recent and await self._scrape(key, state, view):
                self.queue.add(key)
        if self._states.get(key) is not state:
            return
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
        kind = "Warning" if warning else "Normal"
        event = event_body(owner, kind, reason, message, datetime.now(UTC))
        with contextlib.suppress(ApiError):  # an Event is a courtesy; losing one is no failure
            await self.kube.create(EVENTS, str(owner["namespace"]), event)
