#!/usr/bin/env python3
"""Benchmark the SIMULATED cluster at the scale the operator's benchmarks need.

Starts ``python -m nemotron_sim.homemade_cli`` (the home-made API server) as its own process (so its
CPU time is measured apart from this client), then over HTTP, as the operator would:

1. creates N NemotronDeployment custom resources (validated against the CRD on admission);
2. creates N StatefulSets of one pod each (init container, ``vllm serve`` with a readiness probe,
   a claim template, 1 GPU) and waits, through a watch, until every pod is Ready: each runs a
   stand-in vLLM on its own loopback IP;
3. measures list latencies (all CRs, all pods, all StatefulSets, a label-selected pod, one get);
4. measures watch latency: time from a PATCH being sent to its MODIFIED event arriving on an
   open watch, with several watchers open;
5. reports the cluster process's CPU time per phase, its idle CPU with everything running, and
   its resident memory.

With ``--as-service-account`` every request after the setup carries the bearer token of a
ServiceAccount bound to a ClusterRole with just the verbs the benchmark uses, so each one is
authenticated and authorized by RBAC (the admin path skips both).

Prints figures; asserts nothing (speed targets are read, not unit-tested). Usage:

    hack/bench-sim.py [--count 1000] [--concurrency 16] [--as-service-account]
                      [--json results.json]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import yaml

ROOT = Path(__file__).resolve().parent.parent
GROUP_PATH = "/apis/serving.nemotron.io/v1alpha1"
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
NAMESPACE = "bench"
MODEL = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
_CLK_TCK = os.sysconf("SC_CLK_TCK")
_START_SECONDS = 60.0
_READY_SECONDS = 600.0  # generous bound for N pods to become Ready; the run reports the time


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, math.ceil(fraction * len(ordered)) - 1))
    return ordered[index]


def summary(samples: list[float]) -> dict[str, float]:
    return {
        "n": len(samples),
        "p50_ms": 1000 * statistics.median(samples),
        "p95_ms": 1000 * percentile(samples, 0.95),
        "max_ms": 1000 * max(samples),
    }


class SimProcess:
    """The simulated cluster as a child process; CPU and memory read from /proc."""

    def __init__(self, nodes: str, workdir: Path) -> None:
        self.kubeconfig = workdir / "kubeconfig"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "nemotron_sim.homemade_cli", "--nodes", nodes,
             "--kubeconfig", str(self.kubeconfig)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        self.url = ""

    def wait_ready(self) -> None:
        assert self.process.stdout is not None
        deadline = time.monotonic() + _START_SECONDS
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line:
                break
            if "API server:" in line:
                self.url = line.split("API server:", 1)[1].strip()
            if "SIMULATED cluster ready" in line:
                return
        raise RuntimeError("the simulated cluster did not start")

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _CLK_TCK  # utime + stime

    def rss_mib(self) -> float:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        if self.process.stdout is not None:
            self.process.stdout.close()


def custom_resource(index: int) -> dict[str, Any]:
    return {
        "apiVersion": "serving.nemotron.io/v1alpha1",
        "kind": "NemotronDeployment",
        "metadata": {"name": f"nd-{index:04d}", "namespace": NAMESPACE,
                     "labels": {"bench": "yes", "index": str(index)}},
        "spec": {"model": {"id": MODEL}, "engine": {"maxModelLen": 131072}},
    }  # fmt: skip


def statefulset(index: int) -> dict[str, Any]:
    name = f"sts-{index:04d}"
    container = {
        "name": "vllm",
        "image": "vllm/vllm-openai:v0.31.0",
        "command": ["vllm", "serve", MODEL, "--served-model-name", name],
        "ports": [{"name": "http", "containerPort": 8000}],
        "resources": {"limits": {"nvidia.com/gpu": "1"}},
        "readinessProbe": {"httpGet": {"path": "/health", "port": "http"}},
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"bench": "yes"}},
        "spec": {
            "replicas": 1,
            "serviceName": name,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name, "bench": "yes"}},
                "spec": {
                    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
                    "initContainers": [{"name": "download", "image": "hf", "command": ["hf"]}],
                    "containers": [container],
                },
            },
            "volumeClaimTemplates": [{
                "metadata": {"name": "weights"},
                "spec": {"accessModes": ["ReadWriteOnce"],
                         "resources": {"requests": {"storage": "65Gi"}}},
            }],
        },
    }  # fmt: skip


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


class Client:
    def __init__(self, session: aiohttp.ClientSession, url: str) -> None:
        self.session, self.url = session, url

    async def send(self, method: str, path: str, body: Any = None, **kw: Any) -> Any:
        headers = {"Content-Type": kw.pop("content_type", "application/json")}
        async with self.session.request(
            method, self.url + path, json=body, headers=headers, **kw
        ) as response:
            payload = await response.json()
            if response.status >= 300:
                raise RuntimeError(f"{method} {path}: {response.status} {payload}")
            return payload

    def post(self, path: str, body: dict[str, Any]) -> Callable[[], Awaitable[None]]:
        async def call() -> None:
            await self.send("POST", path, body)

        return call


BENCH_ROLE = {
    "metadata": {"name": "bench"},
    "rules": [
        {
            "apiGroups": ["serving.nemotron.io"],
            "resources": ["nemotrondeployments"],
            "verbs": ["create", "get", "list", "watch", "patch"],
        },
        {
            "apiGroups": ["apps"],
            "resources": ["statefulsets"],
            "verbs": ["create", "list", "watch"],
        },
        {"apiGroups": [""], "resources": ["pods", "nodes"], "verbs": ["list"]},
        {
            "apiGroups": [""],
            "resources": ["configmaps"],
            "verbs": ["create", "list", "watch", "patch"],
        },
    ],
}


async def service_account_token(client: Client) -> str:
    """A ServiceAccount bound to BENCH_ROLE, and a token for it (TokenRequest API)."""
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    await client.send("POST", f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts",
                      {"metadata": {"name": "bench"}})  # fmt: skip
    await client.send("POST", f"{rbac}/clusterroles", BENCH_ROLE)
    binding = {
        "metadata": {"name": "bench"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "bench"},
        "subjects": [{"kind": "ServiceAccount", "name": "bench", "namespace": NAMESPACE}],
    }  # fmt: skip
    await client.send("POST", f"{rbac}/clusterrolebindings", binding)
    answer = await client.send(
        "POST", f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/bench/token", {"spec": {}}
    )
    return str(answer["status"]["token"])


async def wait_all_ready(client: Client, count: int) -> tuple[float, int]:
    """Watch StatefulSets until ``count`` report readyReplicas 1; (seconds, events seen)."""
    listing = await client.send("GET", f"/apis/apps/v1/namespaces/{NAMESPACE}/statefulsets")
    ready = {
        s["metadata"]["name"]
        for s in listing["items"]
        if (s.get("status") or {}).get("readyReplicas") == 1
    }
    rv = listing["metadata"]["resourceVersion"]
    events = 0
    start = time.perf_counter()
    path = (
        f"/apis/apps/v1/namespaces/{NAMESPACE}/statefulsets?watch=1&resourceVersion={rv}"
        f"&timeoutSeconds={int(_READY_SECONDS)}"
    )
    async with client.session.get(client.url + path) as response:
        while len(ready) < count:
            line = await response.content.readline()
            if not line:
                raise RuntimeError(f"watch ended with {len(ready)}/{count} ready")
            event = json.loads(line)
            events += 1
            obj = event["object"]
            if (obj.get("status") or {}).get("readyReplicas") == 1:
                ready.add(obj["metadata"]["name"])
    return time.perf_counter() - start, events


async def list_latencies(client: Client, repeats: int) -> dict[str, dict[str, float]]:
    paths = {
        "list all CRs": f"{GROUP_PATH}/namespaces/{NAMESPACE}/nemotrondeployments",
        "list all pods": "/api/v1/pods",
        "list all statefulsets": "/apis/apps/v1/statefulsets",
        "list pods, label selector (1 match)": f"/api/v1/namespaces/{NAMESPACE}/pods"
        "?labelSelector=app%3Dsts-0007",
        "list nodes": "/api/v1/nodes",
        "get one CR": f"{GROUP_PATH}/namespaces/{NAMESPACE}/nemotrondeployments/nd-0007",
    }
    results = {}
    for label, path in paths.items():
        samples = []
        for _ in range(repeats):
            start = time.perf_counter()
            await client.send("GET", path)
            samples.append(time.perf_counter() - start)
        results[label] = summary(samples)
    return results


async def watch_latency(
    client: Client, collection: str, names: list[str], samples: int, watchers: int
) -> dict[str, Any]:
    """PATCH an object, time until its MODIFIED event reaches the first of ``watchers``."""
    listing = await client.send("GET", collection)
    rv = listing["metadata"]["resourceVersion"]
    path = f"{collection}?watch=1&resourceVersion={rv}"
    responses = [await client.session.get(client.url + path) for _ in range(watchers)]
    latencies: list[float] = []
    try:
        for i in range(samples):
            marker = f"m{i}"
            start = time.perf_counter()
            await client.send(
                "PATCH",
                f"{collection}/{names[(i * 7) % len(names)]}",
                {"metadata": {"labels": {"marker": marker}}},
                content_type="application/merge-patch+json",
            )
            while True:
                event = json.loads(await responses[0].content.readline())
                labels = event["object"]["metadata"].get("labels") or {}
                if labels.get("marker") == marker:
                    latencies.append(time.perf_counter() - start)
                    break
            for other in responses[1:]:  # keep the other watchers drained
                await other.content.readline()
    finally:
        for response in responses:
            response.close()
    return {"watchers": watchers, **summary(latencies)}


async def watch_latencies(client: Client, args: argparse.Namespace) -> dict[str, Any]:
    configmaps = f"/api/v1/namespaces/{NAMESPACE}/configmaps"
    names = [f"cm-{i:03d}" for i in range(20)]
    for name in names:
        await client.send("POST", configmaps, {"metadata": {"name": name}, "data": {"k": "v"}})
    crs = f"{GROUP_PATH}/namespaces/{NAMESPACE}/nemotrondeployments"
    cr_names = [f"nd-{i:04d}" for i in range(args.count)]
    return {
        "custom resources (admission validates each patch)": await watch_latency(
            client, crs, cr_names, args.watch_samples, args.watchers
        ),
        "configmaps": await watch_latency(
            client, configmaps, names, args.watch_samples, args.watchers
        ),
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {
        "count": args.count,
        "nodes": args.nodes,
        "as_service_account": args.as_service_account,
    }
    with tempfile.TemporaryDirectory(prefix="nemotron-bench-") as tmp:
        sim = SimProcess(args.nodes, Path(tmp))
        try:
            sim.wait_ready()
            results["rss_mib_start"] = sim.rss_mib()
            connector = aiohttp.TCPConnector(limit=args.concurrency + args.watchers + 4)
            timeout = aiohttp.ClientTimeout(total=_READY_SECONDS)
            async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
                client = Client(session, sim.url)
                await client.send("POST", "/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
                for crd in sorted((ROOT / "crds").glob("*.yaml")):
                    await client.send("POST", CRD_PATH, yaml.safe_load(crd.read_text()))
                if args.as_service_account:
                    token = await service_account_token(client)
                    session.headers["Authorization"] = f"Bearer {token}"
                cpu = sim.cpu_seconds()
                crs = [
                    client.post(f"{GROUP_PATH}/namespaces/{NAMESPACE}/nemotrondeployments",
                                custom_resource(i))
                    for i in range(args.count)
                ]  # fmt: skip
                wall, lat = await timed_all(crs, args.concurrency)
                results["create_crs"] = {
                    "wall_s": wall,
                    "per_s": args.count / wall,
                    "cluster_cpu_s": sim.cpu_seconds() - cpu,
                    **summary(lat),
                }
                cpu = sim.cpu_seconds()
                start = time.perf_counter()
                sts_path = f"/apis/apps/v1/namespaces/{NAMESPACE}/statefulsets"
                sts = [client.post(sts_path, statefulset(i)) for i in range(args.count)]
                wall, lat = await timed_all(sts, args.concurrency)
                results["create_statefulsets"] = {"wall_s": wall, "per_s": args.count / wall,
                                                  **summary(lat)}  # fmt: skip
                ready_s, events = await wait_all_ready(client, args.count)
                total = time.perf_counter() - start
                results["pods_ready"] = {
                    "all_ready_after_create_s": total,
                    "after_last_create_s": ready_s,
                    "watch_events": events,
                    "cluster_cpu_s": sim.cpu_seconds() - cpu,
                }
                results["rss_mib_running"] = sim.rss_mib()
                cpu = sim.cpu_seconds()
                await asyncio.sleep(args.idle_seconds)
                results["idle_cpu_percent"] = 100 * (sim.cpu_seconds() - cpu) / args.idle_seconds
                results["lists"] = await list_latencies(client, args.repeats)
                results["watch"] = await watch_latencies(client, args)
        finally:
            sim.stop()
    return results


def report(results: dict[str, Any]) -> None:
    n = results["count"]
    print(f"SIMULATED cluster benchmark: {n} NemotronDeployments, {n} StatefulSets / pods")
    print(f"nodes {results['nodes']}; {os.cpu_count()} CPUs; cluster in its own process")
    if results["as_service_account"]:
        print("every request as a ServiceAccount (bearer token, RBAC-authorized)")
    crs, sts, ready = results["create_crs"], results["create_statefulsets"], results["pods_ready"]
    print(
        f"  create CRs           {crs['per_s']:7.0f}/s  p50 {crs['p50_ms']:6.1f} ms  "
        f"p95 {crs['p95_ms']:6.1f} ms  (cluster CPU {crs['cluster_cpu_s']:.1f} s)"
    )
    print(
        f"  create StatefulSets  {sts['per_s']:7.0f}/s  p50 {sts['p50_ms']:6.1f} ms  "
        f"p95 {sts['p95_ms']:6.1f} ms"
    )
    print(
        f"  all {n} pods Ready   {ready['all_ready_after_create_s']:7.1f} s after the first "
        f"create (cluster CPU {ready['cluster_cpu_s']:.1f} s, {ready['watch_events']} "
        "watch events)"
    )
    print(
        f"  idle with {n} stand-in vLLMs: cluster CPU {results['idle_cpu_percent']:.1f} %; "
        f"RSS {results['rss_mib_start']:.0f} MiB at start, "
        f"{results['rss_mib_running']:.0f} MiB running"
    )
    for label, row in results["lists"].items():
        print(f"  {label:38s} p50 {row['p50_ms']:7.1f} ms  p95 {row['p95_ms']:7.1f} ms")
    for label, watch in results["watch"].items():
        print(f"  watch, PATCH -> MODIFIED event ({watch['watchers']} watchers), {label}: "
              f"p50 {watch['p50_ms']:.1f} ms  p95 {watch['p95_ms']:.1f} ms  "
              f"max {watch['max_ms']:.1f} ms")  # fmt: skip


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
    args = parser.parse_args()
    args.nodes = args.nodes or f"NVIDIA-H200:8x{math.ceil(args.count / 8)}"
    results = asyncio.run(run(args))
    report(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
