"""``run_operator``: the Controller, kopf, the health/metrics server and every task of the
operator in one event loop, until SIGTERM/SIGINT or a failure; then the bounded stop."""

from __future__ import annotations

import asyncio
import logging

from nemotron_operator import __version__
from nemotron_operator.controller.runtime import kopf_wiring, shutdown
from nemotron_operator.controller.runtime.controller import Controller
from nemotron_operator.controller.runtime.health import start_servers
from nemotron_operator.controller.runtime.metrics_auth import MetricsGuard
from nemotron_operator.controller.settings import OperatorConfig
from nemotron_operator.kube import KubeClient, load_connection

logger = logging.getLogger("nemotron_operator")


async def run_operator(config: OperatorConfig) -> int:
    """Run until SIGTERM/SIGINT (exit 0) or until kopf stops on its own (exit 1). The stop is
    bounded in time and releases the Lease (``controller/runtime/shutdown.py`` says why and how)."""
    stop_requested = asyncio.Event()
    shutdown.handle_signals(stop_requested)
    connection = load_connection(config.kubeconfig)
    agent = f"nemotron-operator/{__version__} ({config.identity})"
    async with KubeClient(connection, user_agent=agent) as kube:
        controller = Controller(config, kube)
        registry = kopf_wiring.build_registry(
            config, connection, controller.queue, controller.deployments
        )
        runner, _, _ = await start_servers(
            controller.health,
            host=config.bind_address,
            health_port=config.health_port,
            metrics_port=config.metrics_port,
            guard=MetricsGuard.for_cluster(kube) if config.metrics_auth else None,
        )
        kopf_stop, kopf_ready = asyncio.Event(), asyncio.Event()
        kopf_task = kopf_wiring.start(registry, config, stop_flag=kopf_stop, ready_flag=kopf_ready)
        controller.health.kopf_running = lambda: not kopf_task.done()
        tasks = [
            asyncio.create_task(controller.resync(), name="resync"),
            asyncio.create_task(controller.follow_children(), name="child-cache"),
            *(
                asyncio.create_task(watch.run(), name=f"inventory {watch.resource.plural}")
                for watch in controller.inventory.watches
            ),
            *(
                asyncio.create_task(watch.run(), name=f"crd {resource.plural}")
                for resource, watch in controller.discovery.watches.items()
            ),
        ]
        tasks += [
            asyncio.create_task(controller.worker(), name=f"worker-{i}")
            for i in range(config.workers)
        ]
        if controller.lease is not None:
            tasks.append(asyncio.create_task(controller.lease.run(), name="lease"))
        tasks.append(asyncio.create_task(controller.parts.scraper.run(), name="scraping"))
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
            code = 0 if stop_requested.is_set() else kopf_wiring.outcome(kopf_task)
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
