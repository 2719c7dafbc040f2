"""Figures taken out of a phase's observations: latency summaries, wall times, requests per
deployment, reads of deployments, and the operator ÷ floor ratios."""

from __future__ import annotations

from typing import Any

from opbench import report
from opbench.api import RequestCounts, not_bench
from opbench.collector import Collector, Key


def lat(collector: Collector, keys: list[Key], what: str) -> dict[str, float]:
    samples = [collector.tracks[k].latency(what) for k in keys]
    summary = report.latency_summary([s for s in samples if s is not None])
    missing = sum(s is None for s in samples)
    return {**summary, "missing": missing} if missing else summary


def wall(collector: Collector, keys: list[Key], what: str, start: float) -> float | None:
    tracks = [collector.tracks[k] for k in keys]
    ends = [t.converged if what == "converged" else getattr(t, what) for t in tracks]
    if any(e is None for e in ends):
        return None
    return round(max(e for e in ends if e is not None) - start, 2)


def reads_of_deployments(counts: RequestCounts, deployments: int) -> int:
    """Deployments the operator has read back: one GET each, or all of them in a LIST (kopf's,
    which an operator that reads its objects from the watch does instead of GETs)."""
    gets, listed = 0, False
    for r in counts.of(not_bench):
        if r["resource"] == "nemotrondeployments":
            gets += r["count"] if r["verb"] == "get" else 0
            listed = listed or r["verb"] == "list"
    return deployments if listed else min(gets, deployments)


def per_deployment(counts: RequestCounts, deployments: int) -> dict[str, Any]:
    by_verb = counts.by_verb(not_bench)
    return {
        "requests": counts.total(not_bench),
        "requests_per_deployment": round(counts.total(not_bench) / deployments, 2),
        "per_deployment_by_verb": {v: round(n / deployments, 2) for v, n in by_verb.items()},
        "writes_per_deployment": round(counts.writes(not_bench) / deployments, 2),
        "writes_per_deployment_by_kind": {
            k: round(n / deployments, 2) for k, n in counts.writes_by_kind(not_bench).items()
        },
        "lease_writes": counts.writes(not_bench, leases=True),
        "by_verb_and_resource": counts.by_verb_and_resource(not_bench),
    }


def ratios(results: dict[str, Any]) -> dict[str, dict[str, float | None]]:
    """Operator ÷ floor: wall time for a batch to converge, and the median deployment."""
    operator, floor = results.get("convergence") or {}, results["floor"]

    def divide(a: Any, b: Any) -> float | None:
        return round(a / b, 2) if isinstance(a, int | float) and b else None

    out = {
        "single": {
            "converged_p50": divide(
                (operator.get("single") or {}).get("converged", {}).get("p50_ms"),
                floor["single"]["converged"].get("p50_ms"),
            )
        }
    }
    for size, row in (operator.get("batches") or {}).items():
        base = floor["batches"].get(size) or {}
        out[size] = {
            "converged_wall": divide(row.get("converged_wall_s"), base.get("converged_wall_s")),
            "converged_p50": divide(
                row["converged"].get("p50_ms"), base.get("converged", {}).get("p50_ms")
            ),
        }
    return out
