#!/usr/bin/env python3
"""One watcher process of ``hack/bench-runtime.py``: follows the operator's child kinds and pods
(label-selected on the server, every namespace) with either runtime, and keeps an index of them
by instance label, as the reconcile would read them:

- ``kopf``: ``kopf.operator()`` with one ``@kopf.index`` per kind (kopf's own cache facility),
  the operator's kopf settings, ``settings.watching.label_selectors`` for the server-side filter;
- ``informer``: the operator's ``ChildCache`` (``kube/informer.py``: list, then watch with
  bookmarks, compact JSON per object, indexed by the instance label).

Prints ``events <n>`` whenever the count of events it has taken in changed (at most every
0.2 s), and ``synced`` once its first lists are in. Nothing else: the benchmark measures this
process's CPU and memory from /proc.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "operator"))

import kopf  # noqa: E402

from nemotron_operator.controller.runtime.kopf_wiring import connection_info  # noqa: E402
from nemotron_operator.controller.watch.child_cache import CHILD_SELECTOR, ChildCache  # noqa: E402
from nemotron_operator.kube import KubeClient, load_connection  # noqa: E402
from nemotron_operator.kube.resources import (  # noqa: E402
    PERSISTENT_VOLUME_CLAIMS,
    POD_DISRUPTION_BUDGETS,
    PODS,
    SERVICES,
    STATEFULSETS,
    Resource,
)
from nemotron_operator.render import names as n  # noqa: E402

KINDS = (STATEFULSETS, SERVICES, POD_DISRUPTION_BUDGETS, PERSISTENT_VOLUME_CLAIMS, PODS)


class Counter:
    def __init__(self) -> None:
        self.events = 0

    async def report(self, synced: asyncio.Event) -> None:
        await synced.wait()
        print("synced", flush=True)
        shown = -1
        while True:
            if self.events != shown:
                shown = self.events
                print(f"events {shown}", flush=True)
            await asyncio.sleep(0.2)


def _kopf_spelling(resource: Resource) -> tuple[str, ...]:
    if not resource.group:
        return (resource.version, resource.plural)
    return (resource.group, resource.version, resource.plural)


async def run_kopf(kubeconfig: Path, counter: Counter) -> None:
    connection = load_connection(str(kubeconfig))
    registry = kopf.OperatorRegistry()
    synced = asyncio.Event()

    @kopf.on.startup(registry=registry)
    def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.peering.standalone = True
        settings.scanning.disabled = True
        settings.posting.level = logging.WARNING
        for resource in KINDS:
            settings.watching.label_selectors[_kopf_spelling(resource)] = CHILD_SELECTOR

    @kopf.on.login(registry=registry)
    def login(**_: Any) -> kopf.ConnectionInfo:
        return connection_info(connection)

    def index(namespace: str, labels: Any, name: str, **_: Any) -> Any:
        counter.events += 1
        return {(namespace, labels.get(n.INSTANCE, "")): name}

    for resource in KINDS:
        kopf.index(*_kopf_spelling(resource), registry=registry, id=resource.plural)(index)

    ready = asyncio.Event()
    reporter = asyncio.create_task(counter.report(synced))

    async def mark_synced() -> None:
        await ready.wait()  # kopf's indexes are complete before the operator is ready
        synced.set()

    marker = asyncio.create_task(mark_synced())
    try:
        await kopf.operator(registry=registry, standalone=True, clusterwide=True, ready_flag=ready)
    finally:
        reporter.cancel()
        marker.cancel()


async def run_informer(kubeconfig: Path, counter: Counter) -> None:
    connection = load_connection(str(kubeconfig))
    async with KubeClient(connection) as kube:

        def enqueue(key: tuple[str, str], delay: float) -> None:
            pass

        cache = ChildCache(kube, (), enqueue=enqueue)
        original = cache._changed

        def changed(kind: str, obj: dict[str, Any]) -> None:
            counter.events += 1
            original(kind, obj)

        cache._changed = changed  # type: ignore[method-assign]
        synced = asyncio.Event()
        reporter = asyncio.create_task(counter.report(synced))
        cache.start(KINDS)
        await cache.wait_synced()
        synced.set()
        try:
            await asyncio.Event().wait()
        finally:
            reporter.cancel()
            await cache.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("runtime", choices=("kopf", "informer"))
    parser.add_argument("--kubeconfig", type=Path, required=True)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    counter = Counter()
    runner = run_kopf if args.runtime == "kopf" else run_informer
    asyncio.run(runner(args.kubeconfig, counter))


if __name__ == "__main__":
    main()
