"""How the operator's cost grows with N: one row per batch size and a least-squares fit.

Pure: reads the figures the batches wrote (``convergence``, ``api``, ``floor``) and derives the
per-deployment costs, so a reader sees whether the cost per deployment stays flat.
"""

from __future__ import annotations

from typing import Any


def least_squares(points: list[tuple[float, float]]) -> dict[str, float] | None:
    """The line ``y = intercept + slope * x`` through ``points`` (None under two distinct x)."""
    if len({x for x, _ in points}) < 2:
        return None
    n = len(points)
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    sxx = sum((x - mean_x) ** 2 for x, _ in points)
    sxy = sum((x - mean_x) * (y - mean_y) for x, y in points)
    slope = sxy / sxx
    return {"slope": slope, "intercept": mean_y - slope * mean_x}


def _per(value: Any, size: int, digits: int = 4) -> float | None:
    return round(value / size, digits) if isinstance(value, int | float) else None


def growth(results: dict[str, Any]) -> dict[str, Any]:
    """Per N: wall time to converge (operator and floor), API requests and writes per
    deployment, operator CPU seconds per deployment, RSS; then the fits over N."""
    batches = (results.get("convergence") or {}).get("batches") or {}
    api = (results.get("api") or {}).get("batches") or {}
    floor = (results.get("floor") or {}).get("batches") or {}
    rows: dict[str, dict[str, Any]] = {}
    for key in sorted(batches, key=int):
        size, row = int(key), batches[key]
        cpu = row.get("operator_cpu_s_to_converge")
        rows[key] = {
            "deployments": size,
            "converged_wall_s": row.get("converged_wall_s"),
            "floor_converged_wall_s": (floor.get(key) or {}).get("converged_wall_s"),
            "requests_per_deployment": (api.get(key) or {}).get("requests_per_deployment"),
            "writes_per_deployment": (api.get(key) or {}).get("writes_per_deployment"),
            "operator_cpu_s": cpu,
            "operator_cpu_s_per_deployment": _per(cpu, size),
            "operator_rss_mib": row.get("operator_rss_mib"),
        }
    out: dict[str, Any] = {"sizes": [int(k) for k in rows], "by_size": rows}
    cpu_points = [
        (float(r["deployments"]), float(r["operator_cpu_s"]))
        for r in rows.values()
        if isinstance(r["operator_cpu_s"], int | float)
    ]
    fit = least_squares(cpu_points)
    out["operator_cpu_fit"] = (
        None
        if fit is None
        else {
            "cpu_s_per_deployment": round(fit["slope"], 5),  # the marginal cost: the slope
            "fixed_cpu_s": round(fit["intercept"], 3),
        }
    )
    wall_points = [
        (float(r["deployments"]), float(r["converged_wall_s"]))
        for r in rows.values()
        if isinstance(r["converged_wall_s"], int | float)
    ]
    wall_fit = least_squares(wall_points)
    out["converged_wall_fit"] = (
        None
        if wall_fit is None
        else {
            "s_per_deployment": round(wall_fit["slope"], 5),
            "fixed_s": round(wall_fit["intercept"], 3),
        }
    )
    per = [r["operator_cpu_s_per_deployment"] for r in rows.values()]
    smallest, largest = (per[0], per[-1]) if len(per) >= 2 else (None, None)
    # Largest N's CPU per deployment over the smallest's: 1.0 is flat, the target is <= 1.3.
    out["cpu_per_deployment_ratio"] = (
        round(largest / smallest, 2) if smallest and largest is not None else None
    )
    return out
