"""kopf runs a plain (``def``) handler in a thread pool. The handlers that touch the work queue
and the deployment store, which belong to the event loop, must be coroutines: from a thread, the
queue's dict changed while a worker iterated it, and every worker died at 3,000 deployments."""

from __future__ import annotations

import inspect
from typing import Any, cast

from nemotron_operator.controller.queue import WorkQueue
from nemotron_operator.controller.runtime.kopf_wiring import build_registry
from nemotron_operator.controller.settings import OperatorConfig
from nemotron_operator.controller.watch.deployment_store import DeploymentStore
from nemotron_operator.kube.config import Connection


def _registry() -> tuple[Any, WorkQueue, DeploymentStore]:
    queue, deployments = WorkQueue(), DeploymentStore()
    registry = build_registry(OperatorConfig(), cast(Connection, None), queue, deployments)
    return registry, queue, deployments


def test_every_event_handler_runs_on_the_event_loop() -> None:
    registry, _, _ = _registry()
    handlers = registry._watching.get_all_handlers()
    assert handlers  # the NemotronDeployment event handler is registered
    for handler in handlers:
        assert inspect.iscoroutinefunction(handler.fn), handler.id


async def test_an_event_queues_its_deployment_and_a_deletion_does_not() -> None:
    registry, queue, _ = _registry()
    (handler,) = registry._watching.get_all_handlers()
    obj = {"metadata": {"namespace": "ai", "name": "nd", "resourceVersion": "1"}}
    await handler.fn(event={"type": "ADDED", "object": obj}, namespace="ai", name="nd")
    assert len(queue) == 1
    assert await queue.get() == ("ai", "nd")
    queue.done(("ai", "nd"))
    await handler.fn(event={"type": "DELETED", "object": obj}, namespace="ai", name="nd")
    assert len(queue) == 0
