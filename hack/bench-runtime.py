#!/usr/bin/env python3
"""Measure what following the operator's children costs with kopf against the operator's own
watch cache, on the real control plane — the numbers behind the runtime decision in
docs/controller.md ("kopf or an informer for the children").

Enters a network namespace of its own, starts ``python -m sim_cluster`` (etcd, kube-apiserver,
kube-controller-manager, kube-scheduler; one simulated GPU node), then two watcher processes at
once (``hack/runtimebench/watcher.py``), both following StatefulSets, Services,
PodDisruptionBudgets, PVCs and pods labelled ``app.kubernetes.io/managed-by=nemotron-operator``
in every namespace and indexing them by instance:

- ``kopf``: kopf 1.45's ``@kopf.index`` per kind, the operator's kopf settings;
- ``informer``: the operator's ``ChildCache`` (``kube/informer.py``).

The workload writes, per deployment, the four children and a pod, then four pod status changes
(a start-up's conditions), ``--count`` deployments over ``--namespaces`` namespaces. Both watchers
see the same events at the same time; the benchmark reads each one's CPU seconds and resident
memory from /proc: after their first (empty) lists, when every event is in, and after
``--idle-seconds`` with nothing changing. Prints figures and optionally writes JSON; asserts
nothing.

    hack/bench-runtime.py [--count 1000] [--namespaces 10] [--idle-seconds 60] [--json F]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "operator"), str(ROOT / "hack")]


from opbench.api import MERGE, Client  # noqa: E402
from opbench.procs import Child, SimCluster  # noqa: E402
from opbench.report import machine, run_benchmark  # noqa: E402
from runtimebench.workload import START_UP, objects, status_step  # noqa: E402

RUNTIMES = ("kopf", "informer")
SETTLE_SECONDS = 3.0


def count(child: Child) -> int:
    for line in reversed(list(child.lines)):
        if line.startswith("events "):
            return int(line.split()[1])
    return 0


def synced(child: Child) -> bool:
    return any(line == "synced" for line in list(child.lines))


async def wait_for(check: Any, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        await asyncio.sleep(0.1)


async def all_in(watchers: dict[str, Child], expected: int, seconds: float) -> dict[str, float]:
    """Wait until each watcher has at least ``expected`` events and no more arrive for a while;
    the monotonic time each reached its final count."""
    done: dict[str, float] = {}
    last = {name: (-1, time.monotonic()) for name in watchers}
    deadline = time.monotonic() + seconds
    while len(done) < len(watchers):
        if time.monotonic() > deadline:
            raise RuntimeError(f"events missing: { {k: count(c) for k, c in watchers.items()} }")
        for name, child in watchers.items():
            seen, since = last[name]
            now_count = count(child)
            if now_count != seen:
                last[name] = (now_count, time.monotonic())
            elif now_count >= expected and time.monotonic() - since > SETTLE_SECONDS:
                done.setdefault(name, since)
        await asyncio.sleep(0.1)
    return done


def figures(watchers: dict[str, Child], cpu0: dict[str, float]) -> dict[str, dict[str, float]]:
    return {
        name: {
            "cpu_s": round(child.cpu_seconds() - cpu0[name], 3),
            "rss_mib": round(child.rss_mib(), 1),
            "events": count(child),
        }
        for name, child in watchers.items()
    }


async def workload(client: Client, args: argparse.Namespace) -> dict[str, float]:
    gate = asyncio.Semaphore(args.concurrency)
    spaces = [f"rt-{k}" for k in range(args.namespaces)]
    for space in spaces:
        await client.send("POST", "/api/v1/namespaces", {"metadata": {"name": space}})

    async def send(method: str, path: str, body: Any, content_type: str) -> None:
        async with gate:
            await client.send(method, path, body, content_type)

    started = time.monotonic()
    await asyncio.gather(*(
        send("POST", path, body, "application/json")
        for i in range(args.count)
        for path, body in objects(i, spaces[i % len(spaces)])
    ))  # fmt: skip
    created = time.monotonic()
    for step in range(len(START_UP)):
        await asyncio.gather(*(
            send("PATCH", f"/api/v1/namespaces/{spaces[i % len(spaces)]}/pods/bench-{i}-0/status",
                 status_step(step), MERGE)
            for i in range(args.count)
        ))  # fmt: skip
    return {
        "create_s": round(created - started, 1),
        "write_s": round(time.monotonic() - started, 1),
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {
        "count": args.count,
        "machine": machine(),
    }
    path = [str(ROOT / "operator"), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p)}
    with tempfile.TemporaryDirectory(prefix="nemotron-bench-runtime-") as tmp:
        sim = SimCluster("NVIDIA-H200:8x1", Path(tmp), env)
        watchers: dict[str, Child] = {}
        try:
            await asyncio.to_thread(sim.wait_ready)
            assert sim.api is not None
            assert sim.proxy is not None
            for name in RUNTIMES:
                argv = [sys.executable, str(ROOT / "hack/runtimebench/watcher.py"), name,
                        "--kubeconfig", str(sim.kubeconfig)]  # fmt: skip
                watchers[name] = Child(argv, env, name)
            await wait_for(lambda: all(synced(c) for c in watchers.values()), 60, "first lists")
            await asyncio.sleep(1.0)
            cpu0 = {name: child.cpu_seconds() for name, child in watchers.items()}
            results["rss_mib_empty"] = {k: round(c.rss_mib(), 1) for k, c in watchers.items()}
            async with Client(
                sim.api.url, sim.proxy.url, sim.api.token,
                tls=sim.api.ssl_context(), connections=args.concurrency + 4, request_timeout=300.0,
            ) as client:  # fmt: skip
                started = time.monotonic()
                results["workload"] = await workload(client, args)
            expected = args.count * (5 + len(START_UP))
            done = await all_in(watchers, expected, 600)
            results["events_expected_at_least"] = expected
            results["converged"] = figures(watchers, cpu0)
            for name, at in done.items():
                results["converged"][name]["all_in_s"] = round(at - started, 1)
            cpu1 = {name: child.cpu_seconds() for name, child in watchers.items()}
            await asyncio.sleep(args.idle_seconds)
            idle = figures(watchers, cpu1)
            for part in idle.values():
                part["cpu_percent"] = round(100 * part["cpu_s"] / args.idle_seconds, 2)
            results["idle"] = {"seconds": args.idle_seconds, **idle}
        finally:
            for child in watchers.values():
                child.stop()
            results["simulator_exit_code"] = sim.stop()
    return results


def report(results: dict[str, Any]) -> None:
    n = results["count"]
    conv, idle = results["converged"], results["idle"]
    print(f"\nruntime comparison, {n} deployments ({results['workload']})")
    print(f"{'':10} {'events':>8} {'CPU s':>8} {'µs/event':>9} {'RSS MiB':>8} {'idle CPU %':>11}")
    for name in RUNTIMES:
        c = conv[name]
        per = 1e6 * c["cpu_s"] / max(1, c["events"])
        print(f"{name:10} {c['events']:>8} {c['cpu_s']:>8.2f} {per:>9.0f} {c['rss_mib']:>8.1f} "
              f"{idle[name]['cpu_percent']:>11.2f}")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--namespaces", type=int, default=10)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--idle-seconds", type=float, default=60.0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    return run_benchmark("bench-runtime", lambda: run(args), report, args.json)


if __name__ == "__main__":
    sys.exit(main())
