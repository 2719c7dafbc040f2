"""``run_operator``: kopf's watches, the work queue and its workers, the resync timer, the Lease,
and the health/metrics server, in one event loop.

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
from typing import Any

import kopf
from prometheus_client import REGISTRY

from nemotron_operator import __version__
from nemotron_operator.controller.pods.autoscaler import Autoscaler
from nemotron_operator.controller.pods.scraper import Scraper
from nemotron_operator.controller.queue import Key, WorkQueue
from nemotron_operator.controller.reconcile.reconciler import Outcome, Reconciler
from nemotron_operator.controller.runtime import shutdown
from nemotron_operator.controller.runtime.health import HealthState, start_servers
from nemotron_operator.controller.runtime.kopf_wiring import WATCHED, build_registry
from nemotron_operator.controller.runtime.lease import LeaseGuard
from nemotron_operator.controller.runtime.metrics_auth import MetricsGuard
from nemotron_operator.controller.settings import OperatorConfig
from nemotron_operator.controller.watch.child_cache import ChildCache
from nemotron_operator.controller.watch.deployment_store import DeploymentStore
from nemotron_operator.kube import Action, ApiError, KubeClient, load_connection, retry_delay
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
        )
        self.autoscaler = Autoscaler(kube, self.queue)
        self.scraper = Scraper(
            config,
            self.queue,
            self.metrics,
            after_tick=self.autoscaler.tick,
            keeps_pace=self.autoscaler.scales,
        )
        self.reconciler = Reconciler(
            kube,
            config,
            deployments=self.deployments,
            cache=self.cache,
            scraper=self.scraper,
            autoscaler=self.autoscaler,
        )
        for watch in self.reconciler.inventory.follow():
            watch.on_restart = self.metrics.watch_restarted
        kube.on_response = self.metrics.api_request
        namespaces = len(config.namespaces) or 1
        self.health = HealthState(
            stale_after=config.liveness_stale_after,
            expected_watchers=len(WATCHED) * namespaces,
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
        for watch in self.reconciler.inventory.watches:
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
        discovery = self.reconciler.discovery
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
                for watch in self.reconciler.inventory.watches:
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
        self.scraper.forget(key)
        self.autoscaler.forget(key)
        self.series.forget(key)
        self.reconciler.last_inputs.forget(key)

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
        self.reconciler.inventory.invalidate()

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


def configure_logging(config: OperatorConfig) -> None:
    log_format = kopf.LogFormat.JSON if config.log_format == "json" else kopf.LogFormat.FULL
    kopf.configure(debug=config.log_level == "DEBUG", log_format=log_format)
    logging.getLogger().setLevel(config.log_level)
    # aiohttp's access log would print every probe; kopf logs each on.event call at INFO
    # ("Handler ... succeeded"), one line per watch event: keep those for DEBUG.
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    if config.log_level != "DEBUG":
        logging.getLogger("kopf.objects").setLevel(logging.WARNING)


async def run_operator(config: OperatorConfig) -> int:
    """Run until SIGTERM/SIGINT (exit 0) or until kopf stops on its own (exit 1). The stop is
    bounded in time and releases the Lease (``controller/runtime/shutdown.py`` says why and how)."""
    stop_requested = asyncio.Event()
    shutdown.handle_signals(stop_requested)
    connection = load_connection(config.kubeconfig)
    agent = f"nemotron-operator/{__version__} ({config.identity})"
    async with KubeClient(connection, user_agent=agent) as kube:
        controller = Controller(config, kube)
        registry = build_registry(config, connection, controller.queue, controller.deployments)
        runner, _, _ = await start_servers(
            controller.health,
            host=config.bind_address,
            health_port=config.health_port,
            metrics_port=config.metrics_port,
            guard=MetricsGuard.for_cluster(kube) if config.metrics_auth else None,
        )
        kopf_stop, kopf_ready = asyncio.Event(), asyncio.Event()
        kopf_identity: Any = config.identity  # kopf's Identity: a str NewType it does not export
        kopf_task = asyncio.create_task(
            kopf.operator(
                registry=registry,
                standalone=True,
                clusterwide=not config.namespaces,
                namespaces=list(config.namespaces),
                stop_flag=kopf_stop,
                ready_flag=kopf_ready,
                # Without an identity kopf asks getpass.getuser(), which raises KeyError for a
                # UID with no passwd entry: the chart's 65532 on any image without one
                # (detect_own_id in kopf/_core/engines/peering.py). Ours is the pod's name.
                identity=kopf_identity,
            ),
            name="kopf",
        )
        controller.health.kopf_running = lambda: not kopf_task.done()
        tasks = [
            asyncio.create_task(controller.resync(), name="resync"),
            asyncio.create_task(controller.follow_children(), name="child-cache"),
            *(
                asyncio.create_task(watch.run(), name=f"inventory {watch.resource.plural}")
                for watch in controller.reconciler.inventory.watches
            ),
            *(
                asyncio.create_task(watch.run(), name=f"crd {resource.plural}")
                for resource, watch in controller.reconciler.discovery.watches.items()
            ),
        ]
        tasks += [
            asyncio.create_task(controller.worker(), name=f"worker-{i}")
            for i in range(config.workers)
        ]
        if controller.lease is not None:
            tasks.append(asyncio.create_task(controller.lease.run(), name="lease"))
        tasks.append(asyncio.create_task(controller.scraper.run(), name="scraping"))
        tasks.append(
            asyncio.create_task(
                shutdown.reclaim_signals_when(kopf_ready, stop_requested), name="signals"
            )
        )
        logger.info(
            "nemotron-operator running: namespaces %s, resync every %.0f s, %s",
            ",".join(config.namespaces) or "all",
            config.resync_seconds,
            "standalone" if controller.lease is None else f"Lease {config.lease_name}",
        )
        requested = asyncio.create_task(stop_requested.wait(), name="stop-requested")
        failed = await shutdown.first_failure(tasks, until={kopf_task, requested})
        requested.cancel()
        if failed is not None:
            # A worker, the resync or a watch died: without it the operator would sit idle with
            # work queued and /healthz green. Stop, and let Kubernetes restart the pod.
            logger.error(
                "task %s failed; stopping (exit 1) so that the operator restarts",
                failed.get_name(),
                exc_info=failed.exception(),
            )
            code = 1
        else:
            code = 0 if stop_requested.is_set() else _kopf_outcome(kopf_task)
        # Stop taking work first, then hand the Lease over, then let kopf close its watches.
        await shutdown.stop_tasks(tasks, shutdown.TASKS_SECONDS)
        await shutdown.bounded(controller.cache.stop(), shutdown.TASKS_SECONDS, "closing watches")
        if controller.lease is not None:
            await shutdown.bounded(
                controller.lease.release(), shutdown.RELEASE_SECONDS, "releasing the Lease"
            )
        await shutdown.bounded(runner.cleanup(), shutdown.SERVER_SECONDS, "stopping the server")
        kopf_stop.set()
        if not await shutdown.stop_kopf(kopf_task, shutdown.KOPF_SECONDS):
            code = code or 1
        logger.info("nemotron-operator stopped (exit %d)", code)
        return code


def _kopf_outcome(kopf_task: asyncio.Task[None]) -> int:
    """kopf stopped without our asking: 1 (and why), or 0 if a signal reached kopf's handler
    before we had taken it back (kopf returns normally then)."""
    if kopf_task.cancelled():
        logger.error("kopf stopped: cancelled")
        return 1
    error = kopf_task.exception()
    if error is None:
        return 0
    logger.error("kopf stopped", exc_info=error)
    return 1
