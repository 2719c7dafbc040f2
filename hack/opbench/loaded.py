"""Single deployments applied one at a time while a batch is resident (issue 41: "taken while
1,000 deployments are resident"): the latency a user sees on a loaded cluster, for the floor
and for the operator. Each is applied, then waited for, before the next: apply → children
applied with ``status.plan`` (the collector's "converged"), and apply → first serving pod
created (the pod object exists in the API: the StatefulSet controller made it)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from opbench import profile, report
from opbench.api import Client
from opbench.collector import Collector, Key
from opbench.procs import SimCluster
from opbench.workload import create, expected_children, floor_reconcile, manifest

if TYPE_CHECKING:
    from opbench.run import OperatorPhases

NAMESPACE = "loaded-single"  # the operator's; the floor's is "floor-loaded-single"
# Apply → children and → first pod each get this long before the next is applied.
WAIT_SECONDS = 60.0
MAX_TIMEOUTS = 3
# The operator's phase waits at most this long for a quiet scrape interval (then starts anyway).
QUIET_LIMIT_S = 300.0


def loaded_keys(namespace: str, count: int) -> list[Key]:
    return [(namespace, f"ls-{i:04d}") for i in range(count)]


def summary(collector: Collector, keys: list[Key], what: str) -> dict[str, float]:
    samples = [collector.tracks[k].latency(what) for k in keys]
    out = report.latency_summary([s for s in samples if s is not None])
    missing = sum(s is None for s in samples)
    return {**out, "missing": missing} if missing else out


async def one_at_a_time(
    collector: Collector,
    keys: list[Key],
    apply: Callable[[Key], Awaitable[Any]],
    waits: list[Callable[[Key], Awaitable[bool]]],
    *,
    resident: int,
) -> dict[str, Any]:
    """Apply each key, then run ``waits`` for it in order (stopping at the first that times
    out) before the next; the latencies of every key. After ``MAX_TIMEOUTS`` timeouts the rest
    are not applied (each would wait a minute or two: 200 of them, hours): they count as
    missing samples, a missed target."""
    start = time.perf_counter()
    timed_out = 0
    for key in keys:
        if timed_out >= MAX_TIMEOUTS:
            break
        await apply(key)
        for wait in waits:
            if not await wait(key):
                timed_out += 1
                break
    row: dict[str, Any] = {
        "resident": resident,
        "n": len(keys),
        "converged": summary(collector, keys, "converged"),
        "pod_created": summary(collector, keys, "pod"),
        "wall_s": round(time.perf_counter() - start, 1),
    }
    if timed_out:
        row["timeouts"] = timed_out
    return row


async def cluster_quiet(sim: SimCluster, control_plane_idle: float, limit: float) -> float:
    """Until the simulator uses under 20 % of a CPU over a second, and the control plane under
    20 % more than when idle (a batch's pods are still being created and started after it has
    converged); seconds waited, at most ``limit``."""
    start = time.perf_counter()
    while time.perf_counter() - start < limit:
        own, plane = sim.cpu_seconds(), sim.control_plane_cpu_seconds()
        await asyncio.sleep(1.0)
        if (
            sim.cpu_seconds() - own < 0.2
            and sim.control_plane_cpu_seconds() - plane < control_plane_idle + 0.2
        ):
            break
    return round(time.perf_counter() - start, 1)


async def prepare(client: Client, collector: Collector, keys: list[Key], gpus: Any) -> None:
    """The namespace, the collector's expectations and its pod watch there."""
    namespace = keys[0][0]
    await client.ensure_namespace(namespace)
    for key in keys:
        collector.expect(key, expected_children(manifest(*key), gpus))
    await collector.watch_pods(namespace)


async def floor_loaded(
    client: Client,
    collector: Collector,
    sim: SimCluster,
    *,
    count: int,
    batch: list[Key],
    gpus: Any,
    control_plane_idle: float,
    limits: tuple[float, float],
) -> dict[str, Any]:
    """The floor's single deployments while its ``batch`` is resident, once every one of the
    batch's pods exists (the StatefulSet controller creates them after the batch has converged,
    at its client's pace; the operator's batch waits for Ready, and so for them) and the cluster
    is quiet again. ``limits``: at most this long for the pods, then for quiet."""
    keys = loaded_keys(f"floor-{NAMESPACE}", count)
    report.say(f"floor: {count} single deployments, one at a time, {len(batch)} resident")
    start = time.perf_counter()
    watches = [await collector.watch_pods(n) for n in sorted({k[0] for k in batch})]
    pods_created = await collector.wait(batch, "pod", limits[0])
    for watch in watches:  # the batch's pods change no more than they are deleted
        await collector.unwatch(watch)
    pods_s = round(time.perf_counter() - start, 1)
    waited = await cluster_quiet(sim, control_plane_idle, limits[1])
    await prepare(client, collector, keys, gpus)

    async def apply(key: Key) -> None:
        await floor_reconcile(client, collector, key, gpus)

    async def converged(key: Key) -> bool:
        return await collector.wait([key], "converged", WAIT_SECONDS)

    async def pod(key: Key) -> bool:
        return await collector.wait([key], "pod", WAIT_SECONDS)

    row = await one_at_a_time(collector, keys, apply, [converged, pod], resident=len(batch))
    out = {"namespace": keys[0][0], "waited_for_batch_pods_s": pods_s, **row}
    if not pods_created:
        out["batch_pods_missing"] = len(collector.pending(batch, "pod"))
    return {**out, "waited_for_quiet_s": waited}


async def operator_loaded(phases: OperatorPhases, resident: int) -> dict[str, Any]:
    """The operator's, after the batch's idle window and restart, each waited for (children +
    plan, and its first pod) before the next, not for Ready: the operator may still be taking
    the previous ones to Ready (about a second each) while the next is applied, as under a
    user's stream of applies.

    It starts once the operator is quiet over a whole scrape interval, as the floor's starts on
    a quiet cluster: right after the restart the operator's timer still scrapes every resident
    deployment at the busy pace (its first ticks after the resync's inline samples, and what
    they trigger), and singles applied then would measure the restart's aftermath, not the
    load of 1,000 resident deployments. Profiled (py-spy, kube-apiserver) as
    ``operator-loaded``."""
    keys = loaded_keys(NAMESPACE, phases.args.loaded_singles)
    report.say(f"operator: {len(keys)} single deployments, one at a time, {resident} resident")
    await prepare(phases.client, phases.collector, keys, phases.gpus)
    waited = await phases.quiet_over_interval(QUIET_LIMIT_S)
    operator = phases.running()
    cpu = operator.cpu_seconds()
    window = await profile.start(phases.args, profile.LOADED, resident, operator.pid, "loaded")

    async def apply(key: Key) -> None:
        await create(phases.client, phases.collector, key)

    def until(what: str) -> Callable[[Key], Awaitable[bool]]:
        async def wait(key: Key) -> bool:
            return await phases.wait([key], what, WAIT_SECONDS)

        return wait

    waits = [until("converged"), until("pod")]
    row = await one_at_a_time(phases.collector, keys, apply, waits, resident=resident)
    row["operator_cpu_s"] = round(phases.running().cpu_seconds() - cpu, 2)
    await window.finish()
    return {"namespace": NAMESPACE, "waited_for_quiet_s": waited, **row}
