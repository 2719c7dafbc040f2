#!/usr/bin/env python3
"""Benchmark the planner and the ``plan`` command; prints figures (docs/sizing.md quotes them).

1. ``plan_deployment`` over the whole GPU catalog (no --gpu, no inventory) for several models:
   median and 95th percentile of warm runs. Target: well under 10 ms.
2. Plans per second over the whole catalog: every catalog model, each planned over every GPU
   product (``catalog_throughput``; ``hack/bench-operator.py`` reports it too).
3. ``nemotron-operator plan MODEL -o json`` from a cold start, as a fresh process. Target: < 1 s.

Usage: .venv/bin/python hack/bench-plan.py [--runs N] [--cold-runs N]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "operator"))

from nemotron_operator.api import NemotronDeploymentSpec  # noqa: E402
from nemotron_operator.catalog import MODELS as CATALOG  # noqa: E402
from nemotron_operator.sizing import PlanningError, plan_deployment  # noqa: E402

MODELS = (
    "nvidia/NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-BF16",
    "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4",
    "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
    "nvidia/Nemotron-H-56B-Base-8K",
)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def bench_planner(runs: int) -> None:
    print(f"plan_deployment over the whole GPU catalog ({runs} warm runs each):")
    for model in MODELS:
        spec = NemotronDeploymentSpec.model_validate({"model": {"id": model}})
        plan_deployment(spec)  # warm-up: imports, first-use caches
        samples = []
        for _ in range(runs):
            start = time.perf_counter()
            result = plan_deployment(spec)
            samples.append((time.perf_counter() - start) * 1000)
        plan = result.plan
        print(
            f"  {model:55s} median {statistics.median(samples):6.2f} ms  "
            f"p95 {percentile(samples, 0.95):6.2f} ms  -> {plan.gpu_product} "
            f"x{plan.gpus_per_replica}, {len(plan.rejected)} rejected"
        )


def catalog_throughput(rounds: int) -> dict[str, float]:
    """Plan every catalog model over the whole GPU catalog, ``rounds`` times (after one warm-up
    round): plans per second, and the median and slowest single plan."""
    specs = [
        NemotronDeploymentSpec.model_validate({"model": {"id": m.hf_id}})
        for m in CATALOG
        if m.in_catalog
    ]
    samples: list[float] = []
    infeasible = 0
    for round_index in range(rounds + 1):
        for spec in specs:
            start = time.perf_counter()
            try:
                plan_deployment(spec)
            except PlanningError:
                infeasible += round_index > 0
            if round_index > 0:
                samples.append(time.perf_counter() - start)
    total = sum(samples)
    return {
        "models": len(specs),
        "plans": len(samples),
        "infeasible": infeasible,
        "plans_per_second": len(samples) / total,
        "median_ms": 1000 * statistics.median(samples),
        "max_ms": 1000 * max(samples),
    }


def bench_catalog(rounds: int) -> None:
    figures = catalog_throughput(rounds)
    print(
        f"every catalog model ({figures['models']:.0f}) over every GPU product, "
        f"{rounds} rounds: {figures['plans_per_second']:.0f} plans/s, "
        f"median {figures['median_ms']:.2f} ms, max {figures['max_ms']:.2f} ms"
    )


def bench_cold(runs: int) -> None:
    command = [sys.executable, "-m", "nemotron_operator.cli", "plan", MODELS[0], "-o", "json"]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "operator")}
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True, env=env)
        samples.append(time.perf_counter() - start)
    print(f"nemotron-operator plan {MODELS[0]} -o json, cold process ({runs} runs):")
    print(
        f"  median {statistics.median(samples):.3f} s  max {max(samples):.3f} s  "
        f"min {min(samples):.3f} s"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--catalog-rounds", type=int, default=20)
    parser.add_argument("--cold-runs", type=int, default=5)
    args = parser.parse_args()
    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs")
    bench_planner(args.runs)
    bench_catalog(args.catalog_rounds)
    bench_cold(args.cold_runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
