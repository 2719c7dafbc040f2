"""``Controller``: builds every part of the operator complete — the work queue, the watches, the
parts beside the reconcile (``controller/part.py``), the ``Reconciler``, the Lease and the health
state — and runs the workers, the resync timer and the watch cache's discovery loop
(``runtime/run.py`` starts them with kopf and the health/metrics server).

Each NemotronDeployment is reconciled (``Reconciler.reconcile``) when it or one of its children
changes, every ``resync_seconds`` (the timer, from the watches: a reconcile whose inputs did not
change is skipped), and after a failure with a delay: ``Retry-After`` on 429, an exponential
back-off on 5xx and network errors, a short one on 409. Nothing sleeps inside a handler; a key is
never reconciled twice at once. Every read of a reconcile is served by a watch: kopf's of the
NemotronDeployments (``DeploymentStore``), the watch cache's of the children and pods, the
inventory's of nodes and unfinished pods.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from prometheus_client import REGISTRY

from nemotron_operator.controller.decide.rollout import Rollouts
from nemotron_operator.controller.pods.adapters import AdapterSync
from nemotron_operator.controller.pods.autoscaler import Autoscaler
from nemotron_operator.controller.pods.scraper import Scraper
from nemotron_operator.controller.pods.verifier import Verifier
from nemotron_operator.controller.queue import Key, WorkQueue
from nemotron_operator.controller.reconcile.parts import Parts
from nemotron_operator.controller.reconcile.progress_hold import ProgressHold
from nemotron_operator.controller.reconcile.reconciler import Outcome, Reconciler
from nemotron_operator.controller.runtime.health import HealthState
from nemotron_operator.controller.runtime.kopf_wiring import WATCHED, running_watchers
from nemotron_operator.controller.runtime.lease import LeaseGuard
from nemotron_operator.controller.settings import OperatorConfig
from nemotron_operator.controller.watch.child_cache import ChildCache
from nemotron_operator.controller.watch.deployment_store import DeploymentStore
from nemotron_operator.controller.watch.inventory import InventoryReader
from nemotron_operator.controller.watch.served_kinds import ServedKinds
from nemotron_operator.kube import Action, ApiError, KubeClient, retry_delay
from nemotron_operator.kube.resources import OPTIONAL_RESOURCES
from nemotron_operator.telemetry import OperatorMetrics
from nemotron_operator.telemetry.deployment_series import DeploymentSeries

logger = logging.getLogger("nemotron_operator")
CACHE_DISCOVERY_SECONDS = 30.0
CACHE_SYNC_WAIT_SECONDS = 10.0
RECONCILE_TIMEOUT_SECONDS = 120.0  # a reconcile takes well under a second; a bound, not a budget


class Controller:
    def __init__(self, config: OperatorConfig, kube: KubeClient) -> None:
        self.config = config
        self.kube = kube
        self.queue = WorkQueue()
        self.deployments = DeploymentStore()
        self.metrics = OperatorMetrics(REGISTRY)
        self.series = DeploymentSeries(self.metrics)
        self.cache = ChildCache(
            kube,
            config.namespaces,
            enqueue=self.queue.add,
            on_restart=self.metrics.watch_restarted,
            on_open=self.metrics.watch_opened,
        )
        # The watches every reconcile reads, and the parts beside it (controller/part.py).
        self.inventory = InventoryReader(
            kube, ttl=min(5.0, config.resync_seconds / 2), dra=config.dra
        )
        self.discovery = ServedKinds(kube, OPTIONAL_RESOURCES)
        for watch in self.inventory.follow():
            watch.on_restart = self.metrics.watch_restarted
            watch.on_open = self.metrics.watch_opened
        autoscaler = Autoscaler(kube, self.queue)
        scraper = Scraper(
            config,
            self.queue,
            self.metrics,
            after_tick=autoscaler.tick,
            keeps_pace=autoscaler.scales,
        )
        self.parts = Parts(
            scraper=scraper,
            autoscaler=autoscaler,
            verifier=Verifier(kube, self.metrics),
            adapters=AdapterSync(self.queue),
            rollouts=Rollouts(),
            progress=ProgressHold(config.progress_hold_seconds),
        )
        self.reconciler = Reconciler(
            kube,
            config,
            deployments=self.deployments,
            cache=self.cache,
            inventory=self.inventory,
            discovery=self.discovery,
            parts=self.parts,
        )
        kube.on_response = self.metrics.api_request
        namespaces = len(config.namespaces) or 1
        self.health = HealthState(
            stale_after=config.liveness_stale_after,
            expected_watchers=len(WATCHED) * namespaces,
            watchers_running=running_watchers,
            more_problems=self._watch_problems,
            waiting_since=self.queue.oldest_due,
        )
        self.lease: LeaseGuard | None = None
        if not config.standalone:
            self.lease = LeaseGuard(
                kube,
                namespace=config.lease_namespace,
                name=config.lease_name,
                identity=config.identity,
                duration=config.lease_seconds,
            )

    @property
    def leading(self) -> bool:
        return self.lease is None or self.lease.valid()

    async def _wait_leading(self) -> None:
        if self.lease is not None:
            await self.lease.leader.wait()

    def _watch_problems(self) -> list[str]:
        stale = self.config.liveness_stale_after
        problems = self.cache.problems(stale)
        for watch in self.inventory.watches:
            if watch.failing_for() > stale and not watch.forbidden:
                problems.append(
                    f"the watch of {watch.resource.plural} has failed for "
                    f"{watch.failing_for():.0f} s: {watch.last_error}"
                )
        return problems

    async def resync(self) -> None:
        """The timer: queue every NemotronDeployment kopf's watch holds (no request; a reconcile
        whose inputs did not change is skipped, and writes happen only where one differs)."""
        while True:
            await asyncio.sleep(self.config.resync_seconds)
            for key in self.deployments.sweep():
                logger.info("%s/%s: not listed again by kopf's watch; forgotten", *key)
                self._forget(key)
            self.health.resynced()
            if self.leading:
                for key in self.deployments.object_keys():
                    self.queue.add(key)

    async def follow_children(self) -> None:
        """Start the watch cache for every served child kind, and again whenever an optional
        CRD (PodMonitor, NodePool) is installed or removed: as its watch reports it, or at the
        next discovery while the CRD watches have not listed."""
        discovery = self.discovery
        while True:
            try:
                discovery.changed.clear()
                self.cache.start(await self.reconciler.served())
            except ApiError as exc:
                logger.warning("discovery failed: %s; the watch cache waits for it", exc)
            if discovery.served() is None:
                await asyncio.sleep(CACHE_DISCOVERY_SECONDS)
            else:
                await discovery.changed.wait()

    async def worker(self) -> None:
        # A (re)started operator reads its children from the cache once it is filled; until
        # then, or if it takes long, a reconcile lists them (correct either way, only slower).
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(CACHE_SYNC_WAIT_SECONDS):
                await self.cache.wait_synced()
                for watch in self.inventory.watches:
                    await watch.synced.wait()
        while True:
            await self._wait_leading()
            key = await self.queue.get()
            started = time.monotonic()
            outcome: Outcome | None = None
            try:
                if not self.leading:
                    self.queue.add(key, 1.0)
                    continue
                # asyncio.timeout, not wait_for: Python 3.11's wait_for returns the result of a
                # reconcile that finishes as the worker is cancelled, swallowing the cancel, and
                # the operator's stop then waits forever for this worker.
                async with asyncio.timeout(RECONCILE_TIMEOUT_SECONDS):
                    outcome = await self.reconciler.reconcile(*key)
                self.queue.forget(key)
                self._log(key, outcome)
                if outcome.retry_after is not None:
                    self.queue.add(key, outcome.retry_after)
                if outcome.backoff is not None:  # child events must not bring it back sooner
                    self.queue.retry(key, outcome.backoff)
            except ApiError as exc:
                self._retry(key, exc)
            except TimeoutError:
                # Every await of a reconcile is bounded (requests, scrapes); one that still
                # hangs must not take a worker with it. The traceback says where it hung.
                logger.exception(
                    "reconcile of %s/%s did not finish in %.0f s", *key, RECONCILE_TIMEOUT_SECONDS
                )
                self.queue.retry(key, self.config.retry_max_seconds)
            except Exception:
                logger.exception("reconcile of %s/%s failed unexpectedly", *key)
                attempt = self.queue.failed(key)
                self.queue.retry(key, min(self.config.retry_max_seconds, 2.0**attempt))
            finally:
                self.queue.done(key)
                self.health.worked()
                self._record(key, outcome, time.monotonic() - started)

    def _record(self, key: Key, outcome: Outcome | None, elapsed: float) -> None:
        """The operator's reconcile metrics and the deployment's readiness and plan series; a
        deployment that is gone is forgotten by every part that kept something of it."""
        self.metrics.reconcile_finished(outcome.result if outcome else "error", elapsed)
        if outcome is None:
            return
        if outcome.result in ("gone", "finalized"):
            self._forget(key)
        elif outcome.result != "unchanged":
            self.series.reconciled(key, outcome.status, outcome.created, outcome.startup)

    def _forget(self, key: Key) -> None:
        self.reconciler.forget(key)  # every part
        self.series.forget(key)

    def _retry(self, key: Key, exc: ApiError) -> None:
        if exc.action is Action.GONE:
            logger.info("%s/%s: %s (gone; nothing to do until it changes)", *key, exc)
            self.deployments.forget(key)
            return
        attempt = self.queue.failed(key)
        if exc.action is Action.REPORT:
            delay = self.config.retry_max_seconds
        else:
            delay = retry_delay(
                exc,
                attempt,
                base=self.config.retry_base_seconds,
                cap=self.config.retry_max_seconds,
            )
        if exc.action is Action.RETRY_LATER and exc.status == 429 and exc.retry_after:
            delay = max(delay, exc.retry_after)
        self.inventory_invalidate()
        logger.warning("%s/%s: %s; retrying in %.1f s (attempt %d)", *key, exc, delay, attempt)
        self.queue.retry(key, delay)

    def inventory_invalidate(self) -> None:
        self.inventory.invalidate()

    @staticmethod
    def _log(key: Key, outcome: Outcome) -> None:
        changed = outcome.applied or outcome.deleted or outcome.status_written
        level = (
            logging.INFO if changed or outcome.result not in ("ok", "infeasible") else logging.DEBUG
        )
        phase = outcome.status.phase if outcome.status is not None else None
        logger.log(
            level,
            "reconciled %s/%s: %s; applied %s; deleted %s; status %s (phase %s)",
            *key,
            outcome.result,
            outcome.applied or "nothing",
            outcome.deleted or "nothing",
            "written" if outcome.status_written else "unchanged",
            phase,
        )
