"""The idle window: everything converged and Ready, the operator's timers keep running.

Counted on the server side: the fault proxy in front of kube-apiserver counts the operator's
requests (per client), and kube-apiserver's own ``apiserver_request_total`` is read before and
after the window (every client: the control plane's controllers and the simulated kubelets
too). The operator's CPU is sampled every ``--idle-sample-seconds`` so it can be plotted.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from opbench import report, serverside
from opbench.api import RequestCounts, not_bench
from opbench.procs import CpuMeter
from opbench.statusdiff import status_changes

if TYPE_CHECKING:
    from opbench.run import OperatorPhases


def operator_request_rates(counts: RequestCounts, seconds: float) -> dict[str, Any]:
    """The operator's requests per second by verb and resource, and the rate of those that are
    neither Lease renewals nor watches (the issue's target: 0 per second)."""
    rows = counts.by_verb_and_resource(not_bench)
    other = {
        k: v for k, v in rows.items()
        if not k.startswith("watch ") and k.split(" ", 1)[1] != "leases"
    }  # fmt: skip
    return {
        "per_second_by_verb_and_resource": serverside.per_second(rows, seconds),
        "other_than_lease_and_watch": other,
        "other_than_lease_and_watch_per_second": round(sum(other.values()) / seconds, 3)
        if seconds > 0
        else None,
    }


async def idle(phases: OperatorPhases, results: dict[str, Any]) -> None:
    client, args = phases.client, phases.args
    operator = phases.running()
    writes_window, rss_window = args.idle_writes_seconds, args.idle_rss_seconds
    sample = args.idle_sample_seconds
    report.say(f"operator: idle for {rss_window:.0f} s (writes counted over {writes_window:.0f} s)")
    waited = await phases.first_ticks_after_ready()
    await phases.quiet_writes()
    before = await phases.statuses()
    metrics_before = serverside.request_totals(await client.text("/metrics"))
    await client.reset_counts()
    cpu, rss_start = operator.cpu_seconds(), operator.rss_mib()
    start = time.perf_counter()
    rss_samples = [rss_start]
    cpu_samples: list[dict[str, float]] = []
    last_t, last_cpu = start, cpu
    meter = CpuMeter(phases.sim)
    at_writes: RequestCounts | None = None
    while (elapsed := time.perf_counter() - start) < rss_window:
        if at_writes is None and elapsed >= writes_window:
            at_writes = await client.counts()
        step = min(sample, rss_window - elapsed)
        if at_writes is None:
            step = min(step, max(0.05, writes_window - elapsed))
        await asyncio.sleep(step)
        now, now_cpu = time.perf_counter(), phases.running().cpu_seconds()
        rss_samples.append(phases.running().rss_mib())
        cpu_samples.append({
            "t_s": round(now - start, 2),
            "cpu_percent": round(100 * (now_cpu - last_cpu) / (now - last_t), 2),
            "rss_mib": round(rss_samples[-1], 1),
        })  # fmt: skip
        last_t, last_cpu = now, now_cpu
    whole = await client.counts()
    seconds = time.perf_counter() - start
    metrics_after = serverside.request_totals(await client.text("/metrics"))
    at_writes = at_writes or whole
    cluster = meter.spent()
    all_clients = serverside.difference(metrics_before, metrics_after)
    other = serverside.without_leases_and_watches(all_clients)
    results["api"]["idle"] = {
        "seconds": writes_window,
        "writes": at_writes.writes(not_bench),
        "lease_writes": at_writes.writes(not_bench, leases=True),
        "by_verb": at_writes.by_verb(not_bench),
        "by_verb_and_resource": at_writes.by_verb_and_resource(not_bench),
        "waited_for_first_scrape_ticks_s": waited,
        "writes_whole_window": whole.writes(not_bench),
        "whole_window_seconds": round(seconds, 1),
        "status_changes": status_changes(before, await phases.statuses()),
        # The operator's requests, counted by the fault proxy it goes through (per client).
        "operator": operator_request_rates(whole, seconds),
        # kube-apiserver's apiserver_request_total over the whole window: ALL clients (the
        # control plane's controllers, the simulated kubelets' node Leases, this benchmark's
        # two scrapes of /metrics), by verb and resource.
        "apiserver_all_clients": {
            "source": "kube-apiserver /metrics apiserver_request_total, difference over the "
            "window, all clients",
            "counts": all_clients,
            "per_second": serverside.per_second(all_clients, seconds),
            "other_than_lease_and_watch": other,
            "audit_log": None if serverside.AUDIT_HOOK is None else "hook",
        },
    }
    results["footprint"].update(
        cluster_idle_cpu_percent=round(100 * cluster["cluster"] / seconds, 1),
        control_plane_idle_cpu_percent=round(100 * cluster["control_plane"] / seconds, 1),
        simulator_idle_cpu_percent=round(100 * cluster["simulator"] / seconds, 1),
        idle_cpu_percent=round(100 * (operator.cpu_seconds() - cpu) / seconds, 2),
        idle_cpu_samples=cpu_samples,
        idle_sample_seconds=sample,
        idle_rss_seconds=round(seconds, 1),
        rss_mib_idle_start=round(rss_start, 1),
        rss_mib_idle_end=round(rss_samples[-1], 1),
        rss_mib_idle_max=round(max(rss_samples), 1),
        rss_growth_mib=round(rss_samples[-1] - rss_start, 1),
    )
