#!/usr/bin/env python3
"""Benchmark the operator against the SIMULATED cluster: how fast and how quietly it converges.

Enters a network namespace of its own, starts ``python -m sim_cluster`` in it (the real control
plane — etcd, kube-apiserver, kube-controller-manager, kube-scheduler — with enough simulated 8x
H200 nodes, kubelets and stand-in vLLMs) and the operator (a real process: ``--operator-cmd``,
through the cluster's fault proxy), then measures and prints a table, and writes JSON:

1. convergence: N NemotronDeployments (the Nano example, 1 GPU each) created at once across 20
   namespaces — time from each create to its children applied with ``status.plan`` written, and
   to ``Ready``, seen through watches: p50/p95/p99/max; single deployments one at a time (idle),
   and ``--loaded-singles`` more one at a time while the ``--idle-at`` batch is resident (apply →
   children + plan, and → first serving pod created), for the operator and the floor;
2. the floor, in the same run, before the operator starts: this client makes the same writes
   itself (plan, ``render_all`` with an owner, one server-side apply per child, ``status.plan``);
   the operator's time ÷ the floor's;
3. API efficiency: requests by verb per deployment (counted per client by the fault proxy in
   front of kube-apiserver, ``/_sim/request-counts``), writes per deployment at convergence,
   writes while idle;
4. footprint: operator RSS and CPU seconds (/proc), idle CPU, RSS growth while idle; the CPU of
   the control plane (its four processes) and of the simulator process, apart;
5. restart: a restarted operator's resync time and the writes it makes;
6. the planner: plans per second over the whole catalog (``hack/bench-plan.py``);
7. growth: per N, wall time to converge (and the floor's), requests and writes per deployment,
   operator CPU seconds per deployment, RSS, and a least-squares fit of CPU against N;
8. versions: kube-apiserver's /version, etcd, the stand-in vLLM, kopf, Python, the commit.

Idle and restart are measured at ``--idle-at`` deployments (1,000 when it is a size), the
larger sizes after. Idle requests are counted on the server side: per client by the fault proxy,
and for all clients from kube-apiserver's ``apiserver_request_total`` before and after.

Modes: default N = 100, 1000, 3000 with 5 min (writes) / 10 min (RSS) of idle — one idle
window, writes counted over its first part; ``--quick`` N = 100, 1000 and 20 s / 30 s idle;
``--tiny`` N = 3, 6 and 1 s / 2 s idle (seconds; what the test suite runs). Figures are printed,
never asserted. Usage:

    hack/bench-operator.py [--quick|--tiny] [--json PATH] [--operator-cmd CMD] [--sizes 1,100]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import importlib.util
import json
import math
import os
import shlex
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "operator"), str(ROOT / "hack")]

import yaml  # noqa: E402

from opbench import profile, report, serverside  # noqa: E402
from opbench.api import Client, bounded, not_bench  # noqa: E402
from opbench.collector import Collector, Key  # noqa: E402
from opbench.figures import lat, ratios, wall  # noqa: E402
from opbench.growth import growth  # noqa: E402
from opbench.loaded import floor_loaded  # noqa: E402
from opbench.procs import CpuMeter, SimCluster  # noqa: E402
from opbench.run import OperatorPhases  # noqa: E402
from opbench.workload import (  # noqa: E402
    expected_children,
    floor_reconcile,
    gpus_per_replica,
    inventory,
    layout,
    manifest,
)
from sim_cluster import netns  # noqa: E402  (the only simulated-cluster module imported here)

DEFAULT_OPERATOR = "{python} -m nemotron_operator.cli run"
# Loopback and free ports: other processes on the machine may hold the defaults (8080, 8081).
OPERATOR_ENV = {
    "NEMOTRON_OPERATOR_BIND_ADDRESS": "127.0.0.1",
    "NEMOTRON_OPERATOR_HEALTH_PORT": "0",
    "NEMOTRON_OPERATOR_METRICS_PORT": "0",
}
MODES = {  # sizes, singles, idle s for writes, idle s for RSS, planner rounds, loaded singles
    "full": ((100, 1000, 3000), 20, 300.0, 600.0, 20, 200),
    "quick": ((100, 1000), 10, 20.0, 30.0, 5, 50),
    "tiny": ((3, 6), 2, 1.0, 2.0, 1, 3),
}
IDLE_AT = 1000  # idle and restart are measured at this many deployments when it is a size
# Before the floor's loaded singles, at most this long for a quiet cluster (the operator's: 60).
QUIET_LIMITS = {"full": 60.0, "quick": 60.0, "tiny": 1.0}


def load_bench_plan() -> Any:
    spec = importlib.util.spec_from_file_location("bench_plan", ROOT / "hack" / "bench-plan.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def floor_phase(
    client: Client, collector: Collector, args: argparse.Namespace, sim: SimCluster, idle: float
) -> dict[str, Any]:
    """The same writes from this client, one deployment at a time, then N at once."""
    gpus = await inventory(client)
    out: dict[str, Any] = {"manager": "nemotron-bench-floor", "batches": {}}
    keys = [("floor-single", f"single-{i:02d}") for i in range(args.singles)]
    report.say(f"floor: {len(keys)} single deployments, then {args.sizes} at once")
    await setup_namespaces(client, collector, keys, gpus)
    for key in keys:
        await floor_reconcile(client, collector, key, gpus)
        await collector.wait([key], "converged", 30)
    out["single"] = {"converged": lat(collector, keys, "converged")}
    namespaces = {"floor-single"}
    for size in args.sizes:
        keys = layout(f"floor-b{size}", size, args.namespaces)
        await setup_namespaces(client, collector, keys, gpus)
        namespaces |= {k[0] for k in keys}
        await client.reset_counts()
        meter = CpuMeter(sim)
        window = await profile.start(args, "floor", size)
        start = time.perf_counter()
        await bounded(
            [functools.partial(floor_reconcile, client, collector, k, gpus) for k in keys],
            args.concurrency,
        )
        await collector.wait(keys, "converged", args.timeout)
        spent = meter.spent()
        counts = await client.counts()
        out["batches"][str(size)] = {
            "converged": lat(collector, keys, "converged"),
            "converged_wall_s": wall(collector, keys, "converged", start),
            "requests_per_deployment": round(counts.total(lambda a: not not_bench(a)) / size, 2),
            "cluster_cpu_s_to_converge": spent["cluster"],
            "control_plane_cpu_s_to_converge": spent["control_plane"],
            "simulator_cpu_s_to_converge": spent["simulator"],
            "bench_cpu_s_to_converge": spent["bench"],
        }
        await window.finish()
        batch_namespaces = {k[0] for k in keys}
        if size == args.idle_at and args.loaded_singles:  # while this batch is resident
            out["loaded_single"] = await floor_loaded(
                client, collector, sim, count=args.loaded_singles, batch=keys, gpus=gpus,
                control_plane_idle=idle, limits=(args.timeout, QUIET_LIMITS[args.mode]),
            )  # fmt: skip
            batch_namespaces.add(out["loaded_single"]["namespace"])
        # Each size alone, as the operator's batches are: the next size starts on a cluster
        # without this one's objects (and needs no nodes for them).
        out["batches"][str(size)]["delete_s"] = round(
            await client.delete_namespaces(
                batch_namespaces, args.timeout, until_gone=args.mode != "tiny"
            ),
            2,
        )
        namespaces -= batch_namespaces
    out["cleanup_s"] = round(
        await client.delete_namespaces(namespaces, args.timeout, until_gone=args.mode != "tiny"), 2
    )
    return out


async def setup_namespaces(
    client: Client, collector: Collector, keys: list[Key], gpus: Any
) -> None:
    for namespace in sorted({k[0] for k in keys}):
        await client.ensure_namespace(namespace)
    for key in keys:
        collector.expect(key, expected_children(manifest(*key), gpus))


async def run(args: argparse.Namespace, results: dict[str, Any]) -> None:
    bench_plan = load_bench_plan()
    report.say("planner: plans per second over the catalog")
    results["planner"] = bench_plan.catalog_throughput(args.planner_rounds)
    path = [str(ROOT / "operator"), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p)}
    with tempfile.TemporaryDirectory(prefix="nemotron-bench-op-") as tmp:
        sim = SimCluster(
            args.nodes, Path(tmp), env, controller_qps=args.controller_qps, profiling=args.profile
        )
        try:
            report.say(f"starting the simulated cluster ({args.nodes})")
            await asyncio.to_thread(sim.wait_ready)
            assert sim.api is not None
            assert sim.proxy is not None
            results["cluster"] = {
                "nodes": args.nodes,
                "start_s": round(time.perf_counter() - sim.started, 1),
                "rss_mib_start": round(sim.rss_mib(), 1),
                "control_plane_rss_mib_start": round(sim.control_plane_rss_mib(), 1),
            }
            async with Client(
                sim.api.url, sim.proxy.url, sim.api.token,
                tls=sim.api.ssl_context(), connections=args.concurrency + 16,
            ) as client:  # fmt: skip
                crds = sorted((ROOT / "crds").glob("*.yaml"))
                await client.install_crds(yaml.safe_load(c.read_text()) for c in crds)
                warm_up = await client.warm_up(manifest("default", "warm-up"))
                results["cluster"]["first_create_s"] = round(warm_up, 2)
                results["versions"] = await versions(client, sim, env)
                idle = await control_plane_idle(sim)
                results["cluster"]["control_plane_idle_cpu_percent"] = round(100 * idle, 1)
                profile.begin(args, client, sim)
                collector = Collector(client)
                await collector.start()
                gpus = await inventory(client)
                results["cluster"]["gpus_per_deployment"] = gpus_per_replica(gpus)
                results["floor"] = await floor_phase(client, collector, args, sim, idle)
                operator_env = {
                    **env,
                    **OPERATOR_ENV,
                    # The operator reaches kube-apiserver through the fault proxy, which counts
                    # its requests.
                    "KUBECONFIG": str(sim.proxy_kubeconfig),
                    **args.operator_env,
                }
                phases = OperatorPhases(client, collector, sim, args, env=operator_env, gpus=gpus)
                phases.control_plane_idle = idle
                await phases.run(results)
                results["floor"]["ratio"] = ratios(results)
                results["cluster"]["cpu_s_total"] = round(sim.cpu_seconds(), 1)
                results["cluster"]["control_plane_cpu_s_total"] = {
                    name: round(seconds, 1) for name, seconds in sim.control_plane_cpu().items()
                }
                results["cluster"]["rss_mib_end"] = round(sim.rss_mib(), 1)
                results["cluster"]["control_plane_rss_mib_end"] = round(
                    sim.control_plane_rss_mib(), 1
                )
                results["collector_watch_events"] = collector.events
                await collector.stop()
        finally:
            sim.stop()


async def versions(client: Client, sim: SimCluster, env: dict[str, str]) -> dict[str, Any]:
    """What ran: kube-apiserver's /version, etcd's binary, the stand-in vLLM, kopf, Python."""
    etcd = serverside.binary_version(Path(f"/proc/{sim.control_plane_pids()['etcd']}/exe"))
    vllm = await asyncio.to_thread(serverside.vllm_stand_in_version, env)
    out = serverside.versions(await client.send("GET", "/version"), etcd, vllm)
    out["commit"] = report.machine()["commit"]
    return out


async def control_plane_idle(sim: SimCluster, seconds: float = 3.0) -> float:
    """The control plane's CPU (cores) with nothing to do but the nodes' Lease renewals."""
    before = sim.control_plane_cpu_seconds()
    await asyncio.sleep(seconds)
    return (sim.control_plane_cpu_seconds() - before) / seconds


def operator_argv(command: str) -> list[str] | None:
    if command.strip().lower() == "none":
        return None
    return [part.replace("{python}", sys.executable) for part in shlex.split(command)]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="N = 100, 1000; short idle")
    mode.add_argument("--tiny", action="store_true", help="N = 3, 6; seconds (the test suite)")
    parser.add_argument("--sizes", help="comma-separated batch sizes, each applied at once "
                        "(full 100,1000,3000; quick 100,1000; tiny 3,6)")  # fmt: skip
    parser.add_argument("--singles", type=int, help="single deployments applied one at a time")
    parser.add_argument("--loaded-singles", type=int, help="singles one at a time while the "
                        "--idle-at batch is resident (full 200, quick 50, tiny 3)")  # fmt: skip
    parser.add_argument("--namespaces", type=int, default=20)
    parser.add_argument("--concurrency", type=int, default=16, help="creates in flight")
    parser.add_argument(
        "--idle-writes-seconds",
        type=float,
        help="idle window in which writes are counted (full 300, quick 20)",
    )
    parser.add_argument(
        "--idle-rss-seconds",
        type=float,
        help="idle window for RSS growth and idle CPU (full 600, quick 30)",
    )
    parser.add_argument(
        "--idle-sample-seconds",
        type=float,
        help="operator CPU sampled this often over the idle window, for the plot (5; tiny 0.5)",
    )
    parser.add_argument(
        "--idle-at",
        type=int,
        help="the batch size at which idle and restart are measured (1000 when it is one of "
        "the sizes, otherwise the largest)",
    )
    parser.add_argument(
        "--restart-settle-seconds",
        type=float,
        default=None,
        help="after a restart, how long without operator activity means resynced",
    )
    parser.add_argument("--timeout", type=float, default=None, help="per phase (default by N)")
    parser.add_argument("--nodes", help="default: enough 8x NVIDIA-H200 nodes for every phase")
    parser.add_argument(
        "--controller-qps", type=int, default=20,
        help="kube-controller-manager's --kube-api-qps (default: its own, 20)",
    )  # fmt: skip
    parser.add_argument("--operator-cmd", default=DEFAULT_OPERATOR,
                        help="the operator's command line ({python}: this interpreter); "
                        "'none' measures the floor and the planner only")  # fmt: skip
    parser.add_argument("--operator-env", action="append", default=[], metavar="KEY=VALUE",
                        help="extra environment for the operator (repeatable)")  # fmt: skip
    profile.add_arguments(parser)
    parser.add_argument("--planner-rounds", type=int)
    parser.add_argument("--json", type=Path, help="write the figures here "
                        "(default docs/benchmarks/operator.json in the full mode)")  # fmt: skip
    args = parser.parse_args(argv)
    name = "tiny" if args.tiny else "quick" if args.quick else "full"
    sizes, singles, idle_writes, idle_rss, rounds, loaded_singles = MODES[name]
    args.mode = name
    args.sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else list(sizes)
    args.singles = singles if args.singles is None else args.singles
    args.loaded_singles = loaded_singles if args.loaded_singles is None else args.loaded_singles
    if args.loaded_singles < 0:
        parser.error(f"--loaded-singles {args.loaded_singles}: give 0 (none) or more")
    args.idle_writes_seconds = args.idle_writes_seconds or idle_writes
    args.idle_rss_seconds = max(args.idle_rss_seconds or idle_rss, args.idle_writes_seconds)
    args.planner_rounds = args.planner_rounds or rounds
    args.idle_sample_seconds = args.idle_sample_seconds or (0.5 if name == "tiny" else 5.0)
    if args.idle_at is None:
        args.idle_at = IDLE_AT if IDLE_AT in args.sizes else max(args.sizes)
    elif args.idle_at not in args.sizes:
        parser.error(f"--idle-at {args.idle_at} is not one of --sizes {args.sizes}")
    args.restart_settle_seconds = args.restart_settle_seconds or (1.0 if name == "tiny" else 5.0)
    args.timeout = args.timeout or max(120.0, 0.6 * max(args.sizes))
    if args.json is None and name == "full":
        args.json = ROOT / "docs" / "benchmarks" / "operator.json"
    profile.configure(args)
    args.operator_argv = operator_argv(args.operator_cmd)
    args.operator_env = dict(item.split("=", 1) for item in args.operator_env)
    if name == "tiny":  # the idle window waits one scrape interval after the last Ready
        args.operator_env.setdefault("NEMOTRON_OPERATOR_SCRAPE_SECONDS", "2")
    # Every batch (the floor's and the operator's) is deleted before the next: the singles and
    # the largest batch, or the --idle-at batch and its loaded singles, are the most at once.
    deployments = args.singles + max(*args.sizes, args.idle_at + args.loaded_singles)
    args.nodes = args.nodes or f"NVIDIA-H200:8x{math.ceil(deployments * 1.1 / 8) + 1}"
    return args


def main() -> int:
    args = parse_args()
    # Before any thread starts: the cluster started below, the operator and this client then
    # share a network namespace where the cluster's 10.x addresses are local (none outside).
    try:
        netns.enter()
    except (netns.NamespaceError, OSError) as error:
        print(f"bench-operator: cannot make a network namespace: {error}", file=sys.stderr)
        return 3
    results: dict[str, Any] = {
        "machine": report.machine(),
        "config": {k: v for k, v in vars(args).items() if k not in ("json",)},
    }
    results["config"]["operator_env"] = sorted(args.operator_env)
    started = time.perf_counter()
    try:
        asyncio.run(run(args, results))
    finally:
        results["wall_s"] = round(time.perf_counter() - started, 1)
        results["machine"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
        for section in ("convergence", "floor", "api", "footprint", "restart", "planner"):
            results.setdefault(section, {"error": "not reached (the run stopped earlier)"})
        results["growth"] = growth(results)
        results["targets"] = report.targets(results)
        results["profiles"] = profile.summarise(args)
        report.print_table(results)
        profile.print_section(results)
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            text = json.dumps(results, indent=2, default=str) + "\n"
            # No machine paths in a published file: the interpreter and the checkout.
            text = text.replace(sys.executable, "python").replace(str(ROOT), ".")
            args.json.write_text(text)
            print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
