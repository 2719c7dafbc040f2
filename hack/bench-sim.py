#!/usr/bin/env python3
"""Benchmark the SIMULATED cluster at the scale the operator's benchmarks need.

Enters a network namespace of its own and starts ``python -m sim_cluster`` in it: the REAL
control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler) with SIMULATED GPU
nodes, kubelets and stand-in vLLMs in one Python process (the simulator). Then, over HTTPS to
kube-apiserver (``--via-proxy``: through the cluster's fault proxy, as the operator goes):

1. creates N NemotronDeployment custom resources (kube-apiserver validates each against the
   CRD's schema and CEL rules);
2. creates N StatefulSets of one pod each (init container, ``vllm serve`` with a readiness probe,
   a claim template, 1 GPU) and waits, through a watch, until every pod is Ready: kube-scheduler
   places each, kube-controller-manager's StatefulSet and PV controllers make and bind its claim,
   and the simulated kubelet runs a stand-in vLLM on the pod's own IP;
3. measures list latencies (all CRs, all pods, all StatefulSets, a label-selected pod, one get);
4. measures watch latency: time from a PATCH being sent to its MODIFIED event arriving on an
   open watch, with several watchers open;
5. reports the CPU time of the control plane (its four processes) and of the simulator process
   apart for each phase, both idle with everything running, and their resident memory.

With ``--as-service-account`` every request after the setup carries the bearer token
(TokenRequest) of a ServiceAccount bound to a ClusterRole with just the verbs the benchmark uses,
so kube-apiserver's RBAC authorizer evaluates each against its rules (the admin is in
``system:masters``, which RBAC allows without looking at a rule).

Prints figures; asserts nothing (speed targets are read, not unit-tested). Usage:

    hack/bench-sim.py [--count 1000] [--concurrency 16] [--as-service-account] [--via-proxy]
                      [--json results.json]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "operator"), str(ROOT / "hack")]

import yaml  # noqa: E402

from opbench.api import GROUP_PATH, Client  # noqa: E402
from opbench.procs import CpuMeter, SimCluster  # noqa: E402
from opbench.report import latency_summary, run_benchmark  # noqa: E402
from simbench.phases import (  # noqa: E402
    NAMESPACE,
    custom_resource,
    list_latencies,
    service_account_token,
    statefulset,
    wait_all_ready,
    watch_latencies,
)

_READY_SECONDS = 600.0  # generous bound for N pods to become Ready; the run reports the time


async def timed_all(
    calls: list[Callable[[], Awaitable[None]]], concurrency: int
) -> tuple[float, list[float]]:
    """Run ``calls`` with at most ``concurrency`` in flight; (wall seconds, per-call seconds)."""
    gate = asyncio.Semaphore(concurrency)
    latencies: list[float] = []

    async def one(call: Callable[[], Awaitable[None]]) -> None:
        async with gate:
            start = time.perf_counter()
            await call()
            latencies.append(time.perf_counter() - start)

    start = time.perf_counter()
    await asyncio.gather(*(one(c) for c in calls))
    return time.perf_counter() - start, latencies


def post(client: Client, path: str, body: dict[str, Any]) -> Callable[[], Awaitable[None]]:
    async def call() -> None:
        await client.send("POST", path, body)

    return call


def cpu_fields(meter: CpuMeter) -> dict[str, float]:
    """The cluster's CPU seconds since ``meter`` started: the whole, the control plane's and the
    simulator's (``cluster_cpu_s`` is their sum, the one process it was before)."""
    spent = meter.spent()
    return {
        "cluster_cpu_s": spent["cluster"],
        "control_plane_cpu_s": spent["control_plane"],
        "simulator_cpu_s": spent["simulator"],
    }


def memory(sim: SimCluster) -> dict[str, Any]:
    return {
        "simulator": round(sim.rss_mib(), 1),
        "control_plane": {k: round(v, 1) for k, v in sim.control_plane_rss().items()},
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {
        "count": args.count,
        "nodes": args.nodes,
        "as_service_account": args.as_service_account,
        "via_proxy": args.via_proxy,
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
    }
    path = [str(ROOT / "operator"), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p)}
    with tempfile.TemporaryDirectory(prefix="nemotron-bench-") as tmp:
        sim = SimCluster(args.nodes, Path(tmp), env, events=True)
        try:
            await asyncio.to_thread(sim.wait_ready)
            assert sim.api is not None
            assert sim.proxy is not None
            results["start_s"] = round(time.perf_counter() - sim.started, 1)
            results["rss_mib_start"] = sim.rss_mib()
            results["memory_mib_start"] = memory(sim)
            await phases(sim, args, results)
        finally:
            results["simulator_exit_code"] = sim.stop()
    return results


async def phases(sim: SimCluster, args: argparse.Namespace, results: dict[str, Any]) -> None:
    assert sim.api is not None
    assert sim.proxy is not None
    url = sim.proxy.url if args.via_proxy else sim.api.url

    opened: list[Client] = []

    def connect(token: str) -> Client:
        opened.append(Client(
            url, sim.proxy.url, token, tls=sim.api.ssl_context(),
            connections=args.concurrency + args.watchers + 4, request_timeout=_READY_SECONDS,
        ))  # fmt: skip
        return opened[-1]

    try:
        await measure(connect(sim.api.token), connect, sim, args, results)
    finally:
        for client in opened:
            await client.close()


async def measure(
    client: Client,
    connect: Callable[[str], Client],
    sim: SimCluster,
    args: argparse.Namespace,
    results: dict[str, Any],
) -> None:
    await client.send("POST", "/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
    crds = sorted((ROOT / "crds").glob("*.yaml"))
    await client.install_crds(yaml.safe_load(c.read_text()) for c in crds)
    results["first_create_s"] = await client.warm_up(custom_resource(0))
    if args.as_service_account:
        token = await service_account_token(client)
        client = connect(token)

    meter = CpuMeter(sim)
    crs_path = f"{GROUP_PATH}/namespaces/{NAMESPACE}/nemotrondeployments"
    crs = [post(client, crs_path, custom_resource(i)) for i in range(args.count)]
    wall, lat = await timed_all(crs, args.concurrency)
    results["create_crs"] = {
        "wall_s": wall, "per_s": args.count / wall, **cpu_fields(meter), **latency_summary(lat)
    }  # fmt: skip

    meter = CpuMeter(sim)
    start = time.perf_counter()
    sts_path = f"/apis/apps/v1/namespaces/{NAMESPACE}/statefulsets"
    sts = [post(client, sts_path, statefulset(i)) for i in range(args.count)]
    wall, lat = await timed_all(sts, args.concurrency)
    results["create_statefulsets"] = {
        "wall_s": wall, "per_s": args.count / wall, **latency_summary(lat)
    }  # fmt: skip
    ready_s, events = await wait_all_ready(client, args.count, _READY_SECONDS)
    results["pods_ready"] = {
        "all_ready_after_create_s": time.perf_counter() - start,
        "after_last_create_s": ready_s,
        "watch_events": events,
        **cpu_fields(meter),
    }
    results["rss_mib_running"] = sim.rss_mib()
    results["memory_mib_running"] = memory(sim)

    meter = CpuMeter(sim)
    await asyncio.sleep(args.idle_seconds)
    idle = cpu_fields(meter)
    for suffix, part in (("", "cluster"), ("_control_plane", "control_plane"),
                         ("_simulator", "simulator")):  # fmt: skip
        results[f"idle_cpu_percent{suffix}"] = 100 * idle[f"{part}_cpu_s"] / args.idle_seconds

    meter = CpuMeter(sim)
    results["lists"] = await list_latencies(client, args.repeats)
    results["lists_cpu"] = cpu_fields(meter)
    meter = CpuMeter(sim)
    results["watch"] = await watch_latencies(client, args)
    results["watch_cpu"] = cpu_fields(meter)


def cpu_text(row: dict[str, Any]) -> str:
    return (f"control plane {row['control_plane_cpu_s']:.1f} s + simulator "
            f"{row['simulator_cpu_s']:.1f} s")  # fmt: skip


def report(results: dict[str, Any]) -> None:
    n = results["count"]
    print(f"SIMULATED cluster benchmark: {n} NemotronDeployments, {n} StatefulSets / pods")
    print(f"REAL control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler); "
          f"simulated nodes {results['nodes']}, kubelets and vLLMs in one process; "
          f"{os.cpu_count()} CPUs, load {results['load_average_at_start']} at start; "
          f"started in {results['start_s']:.1f} s; kube-apiserver took "
          f"{results['first_create_s']:.1f} s for the first write of the new CRD "
          "(not timed)")  # fmt: skip
    if results["as_service_account"]:
        print("every request as a ServiceAccount (bearer token, RBAC-authorized)")
    if results["via_proxy"]:
        print("every request through the fault proxy (in the simulator process)")
    crs, sts, ready = results["create_crs"], results["create_statefulsets"], results["pods_ready"]
    print(
        f"  create CRs           {crs['per_s']:7.0f}/s  p50 {crs['p50_ms']:6.1f} ms  "
        f"p95 {crs['p95_ms']:6.1f} ms  (CPU: {cpu_text(crs)})"
    )
    print(
        f"  create StatefulSets  {sts['per_s']:7.0f}/s  p50 {sts['p50_ms']:6.1f} ms  "
        f"p95 {sts['p95_ms']:6.1f} ms"
    )
    print(
        f"  all {n} pods Ready   {ready['all_ready_after_create_s']:7.1f} s after the first "
        f"create (CPU: {cpu_text(ready)}; {ready['watch_events']} watch events)"
    )
    start, running = results["memory_mib_start"], results["memory_mib_running"]
    print(
        f"  idle with {n} stand-in vLLMs: CPU control plane "
        f"{results['idle_cpu_percent_control_plane']:.1f} %, simulator "
        f"{results['idle_cpu_percent_simulator']:.1f} % of a core"
    )
    print(
        f"  RSS MiB at start / running: simulator {start['simulator']:.0f} / "
        f"{running['simulator']:.0f}; "
        + ", ".join(
            f"{name} {start['control_plane'][name]:.0f} / {mib:.0f}"
            for name, mib in running["control_plane"].items()
        )
    )
    for label, row in results["lists"].items():
        print(f"  {label:38s} p50 {row['p50_ms']:7.1f} ms  p95 {row['p95_ms']:7.1f} ms")
    for label, watch in results["watch"].items():
        print(f"  watch, PATCH -> MODIFIED event ({watch['watchers']} watchers), {label}: "
              f"p50 {watch['p50_ms']:.1f} ms  p95 {watch['p95_ms']:.1f} ms  "
              f"max {watch['max_ms']:.1f} ms")  # fmt: skip
    print(f"  CPU while listing: {cpu_text(results['lists_cpu'])}; while watching: "
          f"{cpu_text(results['watch_cpu'])}")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--nodes", default=None, help="default: enough 8x H200 nodes for --count")
    parser.add_argument("--concurrency", type=int, default=16, help="requests in flight")
    parser.add_argument("--repeats", type=int, default=20, help="samples per list")
    parser.add_argument("--watch-samples", type=int, default=200)
    parser.add_argument("--watchers", type=int, default=5)
    parser.add_argument("--idle-seconds", type=float, default=5.0)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument(
        "--as-service-account",
        action="store_true",
        help="send every request with a ServiceAccount's token (RBAC on each request)",
    )
    parser.add_argument(
        "--via-proxy",
        action="store_true",
        help="send every request through the fault proxy, as the operator's go",
    )
    args = parser.parse_args()
    args.nodes = args.nodes or f"NVIDIA-H200:8x{math.ceil(args.count / 8)}"
    return run_benchmark("bench-sim", lambda: run(args), report, args.json)


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
