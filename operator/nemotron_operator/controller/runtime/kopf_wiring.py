"""The kopf side: settings, login, and a thin ``on.event`` handler that only queues work.

Why only ``on.event`` (read in kopf 1.45.2's ``_core/reactor/processing.py``): with no
``on.create/update/resume/delete/field`` handler kopf stores no ``last-handled-configuration``
annotation; with no timer, daemon or mandatory ``on.delete`` it adds no finalizer; ``on.event``
handlers are never retried, so no progress annotations; returning ``None`` patches nothing into
status. kopf therefore never writes to a NemotronDeployment. The reconcile, its retries and the
periodic resync live in :mod:`nemotron_operator.controller.runtime.controller`.

kopf watches NemotronDeployments only; each event goes into the
:class:`~nemotron_operator.controller.watch.deployment_store.DeploymentStore` the reconcile and the
resync read, then queues the object. The children and their pods are followed by the operator's own
watch cache (:mod:`nemotron_operator.controller.watch.child_cache`): kopf costs several times more
CPU per event than that cache (``hack/bench-runtime.py``; docs/controller.md has the figures).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Iterable, Iterator
from typing import Any

import kopf

from nemotron_operator.controller.queue import WorkQueue
from nemotron_operator.controller.settings import OperatorConfig
from nemotron_operator.controller.watch.deployment_store import DeploymentStore
from nemotron_operator.kube import Connection
from nemotron_operator.kube.resources import NEMOTRON_DEPLOYMENTS
from nemotron_operator.render import names as n

WATCHED = (NEMOTRON_DEPLOYMENTS,)  # by kopf; the children by the watch cache
WATCHER_TASK_PREFIX = "watcher for "  # kopf names its watch tasks so (_core/reactor/orchestration)
logger = logging.getLogger("nemotron_operator")


class EndlessBackoffs:
    """The configured delays, then the last one for ever. Not a ``Sized``: kopf 1.45's request
    loop (``_cogs/clients/api.py``) then never reaches its last attempt and never escalates."""

    def __init__(self, delays: Iterable[float]) -> None:
        self.delays = tuple(delays) or (1.0,)

    def __iter__(self) -> Iterator[float]:
        return itertools.chain(self.delays, itertools.repeat(self.delays[-1]))


def connection_info(connection: Connection) -> kopf.ConnectionInfo:
    """kopf's login: the operator's own connection (kubeconfig or in-cluster)."""
    return kopf.ConnectionInfo(
        server=connection.server,
        ca_path=connection.ca_path,
        insecure=not connection.verify,
        token=connection.token,
        certificate_path=connection.certificate_path,
        private_key_path=connection.private_key_path,
    )


def build_registry(
    config: OperatorConfig, connection: Connection, queue: WorkQueue, deployments: DeploymentStore
) -> kopf.OperatorRegistry:
    registry = kopf.OperatorRegistry()

    @kopf.on.startup(registry=registry)
    def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.peering.standalone = True  # the single-replica guard is our Lease
        settings.scanning.disabled = True  # fixed resources; no CRD/namespace watch or RBAC
        # Never used (no handler needs a finalizer or a diffbase), but in our group if ever.
        settings.persistence.finalizer = f"{n.DOMAIN}/kopf-finalizer"
        settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=n.DOMAIN)
        settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(prefix=n.DOMAIN)
        settings.posting.level = logging.WARNING
        # kopf ends a watcher (and 1.45 then exits) once these retries are spent on a failing
        # list or watch request. A 403 (RBAC revoked) is one of the errors it retries, and a
        # restart cannot mend it: exiting would be a crash loop. So the delays never run out
        # (the last one repeats); a long outage shows in /healthz through the operator's own
        # watches instead.
        settings.networking.error_backoffs = EndlessBackoffs(config.watch_error_backoffs)
        settings.networking.request_timeout = 60
        settings.networking.connect_timeout = 10
        settings.watching.server_timeout = 300  # a clean reconnect every 5 minutes
        settings.watching.client_timeout = 330
        settings.watching.connect_timeout = 10
        settings.watching.inactivity_timeout = 70  # a silent stream is re-opened (bookmarks)

    @kopf.on.login(registry=registry)
    def login(**_: Any) -> kopf.ConnectionInfo:
        return connection_info(connection)

    nd = NEMOTRON_DEPLOYMENTS

    # async: kopf runs a plain function in a thread pool, and this one touches the work queue and
    # the store, which belong to the event loop. From a thread it raced the workers ("dictionary
    # changed size during iteration" killed every worker at 3,000 deployments, and an
    # asyncio.Event set from a thread may wake no one).
    @kopf.on.event(nd.group, nd.version, nd.plural, registry=registry)
    async def deployment_event(event: Any, **kwargs: Any) -> None:
        kind, obj = event.get("type"), event.get("object")
        if isinstance(obj, dict):
            deployments.event(kind, obj)
        if kind == "DELETED":
            return
        queue.add((str(kwargs["namespace"]), str(kwargs["name"])))

    return registry


def configure_logging(config: OperatorConfig) -> None:
    log_format = kopf.LogFormat.JSON if config.log_format == "json" else kopf.LogFormat.FULL
    kopf.configure(debug=config.log_level == "DEBUG", log_format=log_format)
    logging.getLogger().setLevel(config.log_level)
    # aiohttp's access log would print every probe; kopf logs each on.event call at INFO
    # ("Handler ... succeeded"), one line per watch event: keep those for DEBUG.
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    if config.log_level != "DEBUG":
        logging.getLogger("kopf.objects").setLevel(logging.WARNING)


def start(
    registry: kopf.OperatorRegistry,
    config: OperatorConfig,
    *,
    stop_flag: asyncio.Event,
    ready_flag: asyncio.Event,
) -> asyncio.Task[None]:
    """kopf's operator loop as a task: it sets ``ready_flag`` once started (it has installed its
    signal handlers by then) and stops when ``stop_flag`` is set."""
    identity: Any = config.identity  # kopf's Identity: a str NewType it does not export
    return asyncio.create_task(
        kopf.operator(
            registry=registry,
            standalone=True,
            clusterwide=not config.namespaces,
            namespaces=list(config.namespaces),
            stop_flag=stop_flag,
            ready_flag=ready_flag,
            # Without an identity kopf asks getpass.getuser(), which raises KeyError for a
            # UID with no passwd entry: the chart's 65532 on any image without one
            # (detect_own_id in kopf/_core/engines/peering.py). Ours is the pod's name.
            identity=identity,
        ),
        name="kopf",
    )


def running_watchers() -> int:
    """kopf's watch streams still running (for ``/healthz``: kopf does not report a dead one)."""
    return sum(
        1
        for t in asyncio.all_tasks()
        if t.get_name().startswith(WATCHER_TASK_PREFIX) and not t.done()
    )


def outcome(kopf_task: asyncio.Task[None]) -> int:
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
