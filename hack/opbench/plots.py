"""The benchmark's plots, from the JSON of one or more runs (headless: matplotlib's Agg).

``series`` takes the figures out of a run's JSON (what a plot shows is exactly what the JSON
says; the test checks it); ``render`` draws three PNGs: convergence time against N for the
operator and the floor, operator CPU against N, and idle CPU over time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

PLOTS = ("convergence-vs-n.png", "operator-cpu-vs-n.png", "idle-cpu-over-time.png")


def label(run: dict[str, Any], fallback: str) -> str:
    machine = run.get("machine") or {}
    commit = str(machine.get("commit") or "?")[:12]
    mode = (run.get("config") or {}).get("mode", "?")
    return f"{fallback} ({mode}, {commit})"


def series(run: dict[str, Any]) -> dict[str, list[tuple[float, float]]]:
    """(x, y) points of each plotted line: N against the operator's and the floor's wall time
    to converge (s), N against the operator's CPU seconds to converge and per deployment, and
    idle time (s) against the operator's CPU (% of a core)."""
    rows = ((run.get("growth") or {}).get("by_size")) or {}

    def points(field: str) -> list[tuple[float, float]]:
        return [
            (float(row["deployments"]), float(row[field]))
            for row in sorted(rows.values(), key=lambda r: r["deployments"])
            if isinstance(row.get(field), int | float)
        ]

    samples = (run.get("footprint") or {}).get("idle_cpu_samples") or []
    return {
        "operator_converged_wall_s": points("converged_wall_s"),
        "floor_converged_wall_s": points("floor_converged_wall_s"),
        "operator_cpu_s": points("operator_cpu_s"),
        "operator_cpu_s_per_deployment": points("operator_cpu_s_per_deployment"),
        "idle_cpu_percent": [(float(s["t_s"]), float(s["cpu_percent"])) for s in samples],
    }


def render(runs: list[tuple[str, dict[str, Any]]], out: Path) -> list[Path]:
    """Draw the three plots of ``runs`` ((name, JSON) pairs) into ``out``; the files written."""
    import matplotlib  # noqa: PLC0415 (a dev dependency: only the plots need it)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    out.mkdir(parents=True, exist_ok=True)
    lines = [(label(run, name), series(run)) for name, run in runs]
    # One colour per run (its operator and floor lines, or its two CPU lines, share it).
    palette = plt.get_cmap("tab10").colors
    colour = {name: palette[i % len(palette)] for i, (name, _) in enumerate(lines)}
    written = []
    figure, axes = plt.subplots(figsize=(7, 4.5))
    for name, data in lines:
        for key, style, who in (("operator_converged_wall_s", "o-", "operator"),
                                ("floor_converged_wall_s", "s--", "floor")):  # fmt: skip
            if data[key]:
                xs, ys = zip(*data[key], strict=True)
                axes.plot(xs, ys, style, color=colour[name], label=f"{who}: {name}")
    _finish(axes, "deployments created at once (N)", "wall time to converge (s)",
            "Convergence time against N: operator and floor")  # fmt: skip
    written.append(_save(figure, out / PLOTS[0], plt))
    figure, axes = plt.subplots(figsize=(7, 4.5))
    twin = axes.twinx()
    for name, data in lines:
        if data["operator_cpu_s"]:
            xs, ys = zip(*data["operator_cpu_s"], strict=True)
            axes.plot(xs, ys, "o-", color=colour[name], label=f"CPU s: {name}")
        if data["operator_cpu_s_per_deployment"]:
            xs, ys = zip(*data["operator_cpu_s_per_deployment"], strict=True)
            twin.plot(xs, ys, "x:", color=colour[name], label=f"CPU s per deployment: {name}")
    twin.set_ylabel("operator CPU s per deployment (dotted)")
    twin.set_ylim(bottom=0)
    _finish(axes, "deployments created at once (N)", "operator CPU s to converge",
            "Operator CPU against N")  # fmt: skip
    handles, labels = axes.get_legend_handles_labels()
    more_handles, more_labels = twin.get_legend_handles_labels()
    axes.legend(handles + more_handles, labels + more_labels, fontsize="small")
    written.append(_save(figure, out / PLOTS[1], plt))
    figure, axes = plt.subplots(figsize=(7, 4.5))
    for name, data in lines:
        if data["idle_cpu_percent"]:
            xs, ys = zip(*data["idle_cpu_percent"], strict=True)
            axes.plot(xs, ys, "-", color=colour[name], label=name)
    axes.axhline(2.0, color="grey", linestyle="--", linewidth=1, label="target: 2 %")
    _finish(axes, "seconds into the idle window", "operator CPU (% of a core)",
            "Operator CPU while idle")  # fmt: skip
    written.append(_save(figure, out / PLOTS[2], plt))
    return written


def _finish(axes: Any, xlabel: str, ylabel: str, title: str) -> None:
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.set_title(title)
    axes.set_ylim(bottom=0)
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize="small")


def _save(figure: Any, path: Path, plt: Any) -> Path:
    figure.tight_layout()
    figure.savefig(path, format="png", dpi=100)
    plt.close(figure)
    return path
