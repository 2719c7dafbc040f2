"""The scrape timer and the plan check in the running operator (docs/observability.md).

The reconcile tells the :class:`Scraper` what it saw (``seen``: the plan and the serving pods)
and learns what status should show (:class:`ScrapedParts`). A ready leader never sampled before
is scraped right then, so the status that says Ready carries the plan check and the first
throughput. The timer scrapes each known deployment's ready leaders every ``scrape_seconds``;
when a figure moved meaningfully or a pod published its cache config, it queues the deployment,
and the reconcile (status's one writer) writes it. After each deployment's tick the timer hands
the figures to ``after_tick`` (the autoscaler, ``controller/pods/autoscaler.py``). Nothing
here talks to the API server.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import aiohttp

from nemotron_operator.api import NemotronDeploymentStatus, Plan
from nemotron_operator.api.status import PlanCheck, Throughput
from nemotron_operator.controller.queue import Key, WorkQueue
from nemotron_operator.controller.settings import OperatorConfig
from nemotron_operator.kube.timestamps import format_time
from nemotron_operator.observe.throughput import ThroughputFigures
from nemotron_operator.observe.tracker import DeploymentTracker
from nemotron_operator.render import names as n
from nemotron_operator.render.engine import SERVE_PORT
from nemotron_operator.status.readiness import pod_ready
from nemotron_operator.status.rollout import rendered_revisions
from nemotron_operator.telemetry import OperatorMetrics
from nemotron_operator.telemetry.scraper import ScrapeTarget, scrape_pods

logger = logging.getLogger(__name__)
_MAX_PARALLEL_DEPLOYMENTS = 8
# Called after a deployment's timer tick with the last figures (None: never sampled).
TickHook = Callable[[Key, ThroughputFigures | None], Awaitable[None]]
# Whether a deployment's figures drive something that needs every tick (its autoscaler).
PaceHook = Callable[[Key], bool]


@dataclass(frozen=True)
class PlanAccuracy:
    status: str  # "True" / "False"
    reason: str
    message: str


@dataclass(frozen=True)
class ScrapedParts:
    """What scraping contributes to status; None: keep what status has."""

    throughput: Throughput | None = None
    plan_check: PlanCheck | None = None
    plan_accurate: PlanAccuracy | None = None


@dataclass(frozen=True)
class _View:
    """What the last reconcile saw of one deployment."""

    plan: Plan | None
    targets: list[ScrapeTarget]
    current: frozenset[str] | None = None  # pod keys on the rendered revision; None: all


@dataclass
class _State:
    tracker: DeploymentTracker = field(default_factory=DeploymentTracker)
    view: _View | None = None
    plan_key: tuple[Any, ...] | None = None
    # One scrape at a time (tick, first sample): no rates over milliseconds, no racing bases.
    scraping: asyncio.Lock = field(default_factory=asyncio.Lock)
    tried_inline: set[str] = field(default_factory=set)  # pod keys a reconcile scraped
    scraped_at: float = float("-inf")  # monotonic
    revision: int = 0  # bumped whenever what status takes from here may have changed


def scrape_targets(pods: Sequence[Mapping[str, Any]], port: int = SERVE_PORT) -> list[ScrapeTarget]:
    """Ready serving leaders with an IP: only they run vLLM's API server (workers are headless)."""
    targets = []
    for pod in pods:
        metadata = pod.get("metadata") or {}
        labels = metadata.get("labels") or {}
        ip = (pod.get("status") or {}).get("podIP")
        if labels.get(n.ROLE, n.ROLE_LEADER) != n.ROLE_LEADER or not ip or not pod_ready(pod):
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


def current_pods(
    pods: Sequence[Mapping[str, Any]], desired: Sequence[Mapping[str, Any]]
) -> frozenset[str] | None:
    """Keys of the pods running the revision rendered now; None when nothing rendered says."""
    revisions = rendered_revisions(desired)
    if not revisions:
        return None
    return frozenset(
        str(metadata.get("uid") or metadata.get("name"))
        for metadata in (p.get("metadata") or {} for p in pods)
        if (metadata.get("annotations") or {}).get(n.CONFIG_HASH) in revisions
    )


def _unsampled(state: _State) -> set[str]:
    """Ready leaders never sampled, nor tried by a reconcile."""
    keys = {t.key for t in state.view.targets} if state.view is not None else set()
    return {k for k in keys - state.tried_inline if not state.tracker.sampled(k)}


def _plan_key(plan: Plan | None) -> tuple[Any, ...] | None:
    """The plan's figures the plan check compares against: a change means a re-check."""
    if plan is None:
        return None
    return (plan.gpu_product, plan.kv_cache_blocks, plan.max_model_len, plan.tensor_parallel)


class Scraper:
    def __init__(
        self,
        config: OperatorConfig,
        queue: WorkQueue,
        metrics: OperatorMetrics,
        *,
        after_tick: TickHook,
        keeps_pace: PaceHook = lambda key: False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.queue = queue
        self.metrics = metrics
        self.after_tick = after_tick
        self.keeps_pace = keeps_pace
        self.clock = clock
        self._states: dict[Key, _State] = {}
        self._session: aiohttp.ClientSession | None = None  # while the timer runs

    # -- called by the reconcile ---------------------------------------------------------------
    async def seen(
        self,
        key: Key,
        plan: Plan | None,
        pods: Sequence[Mapping[str, Any]],
        previous: NemotronDeploymentStatus | None,
        desired: Sequence[Mapping[str, Any]] = (),
    ) -> ScrapedParts:
        """``desired``: the objects rendered now; only pods of their revision meet the plan."""
        state = self._states.get(key)
        if state is None:
            state = self._states[key] = _State()
            if previous is not None:  # a restarted operator starts from what status shows
                state.tracker.shown = previous.throughput
                state.tracker.plan_check_status = previous.plan_check
        plan_key = _plan_key(plan)
        if plan_key != state.plan_key and state.plan_key is not None:
            state.tracker.replan()
        state.plan_key = plan_key
        live = {str((p.get("metadata") or {}).get("uid")) for p in pods}
        state.tracker.forget_pods(live)
        state.view = _View(plan, scrape_targets(pods), current_pods(pods, desired))
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
            clock=self.clock,
            per_pod_timeout=self.config.scrape_timeout_seconds,
            concurrency=self.config.scrape_concurrency,
        )
        for target in view.targets:
            self.metrics.scrape_finished(result.outcome(target.pod))
        if result.failures:
            logger.info("%s/%s: no metrics from %s", *key, result.failures)
        state.scraped_at = self.clock()
        if self._states.get(key) is not state:
            return False  # forgotten while scraping
        update = state.tracker.update(
            view.plan,
            result.samples,
            result.pods,
            sorted(result.failures),
            sampled_at=format_time(datetime.now(UTC)),
            shortfall_threshold=self.config.plan_shortfall_threshold,
            current=view.current,
        )
        product = view.plan.gpu_product if view.plan is not None else "unknown"
        if view.targets:
            self.metrics.set_throughput(key[0], key[1], product, update.figures)
        if update.plan_check is not None:
            self.metrics.set_plan_check(key[0], key[1], product, update.plan_check)
        moved = [*update.throughput_changed, *(["planCheck"] if update.plan_check_changed else [])]
        if moved:
            state.revision += 1
            logger.debug("%s/%s: status to update: %s", *key, ", ".join(moved))
        return bool(moved)

    def _quiet_interval(self) -> float:
        """The quiet pace, less half a tick: the timer's ticks land a little late or early."""
        return self._quiet_seconds() - self.config.scrape_seconds / 2

    def _quiet_seconds(self) -> float:
        quiet = self.config.scrape_quiet_seconds
        return 4 * self.config.scrape_seconds if quiet is None else quiet

    def _quiet(self, key: Key, state: _State) -> bool:
        """Every ready leader answered the last scrape, and it saw no request and no token
        since the one before; no autoscaler reads the figures. New traffic shows within
        the quiet interval (the next scrape returns the deployment to the busy pace)."""
        figures = state.tracker.last_figures
        if figures is None or self._quiet_seconds() <= 0 or self.keeps_pace(key):
            return False
        targets = len(state.view.targets) if state.view is not None else 0
        return (
            targets > 0
            and figures.pods_sampled == targets
            and figures.pods_with_rates == targets
            and not figures.unresponsive_pods
            and figures.requests_running == 0
            and figures.requests_waiting == 0
            and figures.generation_tokens_per_second == 0
            and figures.prompt_tokens_per_second == 0
        )

    @staticmethod
    def _parts(state: _State) -> ScrapedParts:
        tracker = state.tracker
        accuracy = None
        check, result = tracker.plan_check_status, tracker.last_plan_check
        planned = state.view is not None and state.view.plan is not None
        if check is not None and result is not None and planned:
            accuracy = PlanAccuracy(
                "True" if result.accurate else "False", result.reason, result.message
            )
        return ScrapedParts(throughput=tracker.shown, plan_check=check, plan_accurate=accuracy)

    def revision(self, key: Key) -> int:
        """Changes with what ``seen`` would give status (for the reconcile's fingerprint); a
        deployment not seen yet has none (-1)."""
        state = self._states.get(key)
        return -1 if state is None else state.revision

    def forget(self, key: Key) -> None:
        """The deployment is gone: nothing more to scrape."""
        self._states.pop(key, None)

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
                    except Exception:
                        logger.exception("%s/%s: scraping failed unexpectedly", *key)

            while True:
                await asyncio.sleep(self.config.scrape_seconds)
                await asyncio.gather(*(guarded(key) for key in list(self._states)))

    async def tick(self, key: Key) -> None:
        """One deployment's turn of the timer: scrape (unless a reconcile just did), queue the
        deployment when status should change, then hand the figures to ``after_tick``."""
        state = self._states.get(key)
        if state is None or state.view is None or self._session is None:
            return
        async with state.scraping:
            view = state.view
            since = self.clock() - state.scraped_at
            # Just sampled by a reconcile: rates over a fraction of an interval would be noise.
            recent = since < self.config.scrape_seconds / 2
            # No traffic and nothing driven by the figures: the quiet pace (docs/observability.md).
            slow = self._quiet(key, state) and since < self._quiet_interval()
            if not recent and not slow and await self._scrape(key, state, view):
                self.queue.add(key)
        if self._states.get(key) is not state:
            return
        await self.after_tick(key, state.tracker.last_figures)
