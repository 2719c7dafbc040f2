"""The benchmark's growth fit, server-side request counts and plots (pure parts; the targets in
test_opbench_targets.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from opbench import plots, serverside
from opbench.growth import growth, least_squares

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def run_json() -> dict[str, Any]:
    """A run of sizes 100 and 1000 as bench-operator.py writes it (the fields growth reads)."""
    return {
        "machine": {"commit": "abc123"},
        "config": {"mode": "quick", "sizes": [100, 1000], "idle_at": 1000},
        "convergence": {
            "single": {"converged": {"n": 10, "p99_ms": 120.0}},
            "batches": {
                "100": {
                    "converged_wall_s": 4.0,
                    "operator_cpu_s_to_converge": 3.0,
                    "operator_rss_mib": 90.0,
                },
                "1000": {
                    "converged_wall_s": 25.0,
                    "operator_cpu_s_to_converge": 36.0,
                    "operator_rss_mib": 150.0,
                },
            },
        },
        "floor": {
            "batches": {"100": {"converged_wall_s": 3.0}, "1000": {"converged_wall_s": 20.0}},
            "ratio": {"1000": {"converged_wall": 1.25}},
        },
        "api": {
            "batches": {
                "100": {"requests_per_deployment": 9.0, "writes_per_deployment": 6.0},
                "1000": {"requests_per_deployment": 8.5, "writes_per_deployment": 6.0},
            },
            "idle": {
                "writes": 0,
                "operator": {"other_than_lease_and_watch_per_second": 0.0},
            },
        },
        "footprint": {
            "idle_cpu_percent": 1.5,
            "idle_cpu_samples": [
                {"t_s": 5.0, "cpu_percent": 1.0, "rss_mib": 150.0},
                {"t_s": 10.0, "cpu_percent": 2.0, "rss_mib": 150.5},
            ],
        },
        "restart": {"resync_s": 12.0, "writes": 0},
    }


def test_least_squares_recovers_a_line_and_refuses_one_point() -> None:
    fit = least_squares([(100, 5.0), (1000, 32.0), (3000, 92.0)])
    assert fit is not None
    assert fit["slope"] == pytest.approx(0.03)
    assert fit["intercept"] == pytest.approx(2.0)
    assert least_squares([(100, 5.0), (100, 6.0)]) is None


def test_growth_gives_per_deployment_costs_the_fit_and_the_ratio() -> None:
    out = growth(run_json())
    assert out["sizes"] == [100, 1000]
    row = out["by_size"]["1000"]
    assert row["operator_cpu_s_per_deployment"] == 0.036
    assert row["floor_converged_wall_s"] == 20.0
    assert row["requests_per_deployment"] == 8.5
    assert out["by_size"]["100"]["operator_cpu_s_per_deployment"] == 0.03
    assert out["operator_cpu_fit"] == {"cpu_s_per_deployment": 0.03667, "fixed_cpu_s": -0.667}
    assert out["cpu_per_deployment_ratio"] == 1.2  # 0.036 / 0.030


def test_growth_of_a_single_size_has_no_fit() -> None:
    results = run_json()
    del results["convergence"]["batches"]["1000"]
    out = growth(results)
    assert out["operator_cpu_fit"] is None
    assert out["cpu_per_deployment_ratio"] is None


METRICS = """\
# HELP apiserver_request_total [STABLE] Counter of apiserver requests
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="PUT",version="v1"} 40
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="status",verb="PATCH",version="v1"} 7
apiserver_request_total{code="409",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="status",verb="PATCH",version="v1"} 1
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="",scope="",subresource="/metrics",verb="GET",version=""} 2
apiserver_request_total{code="0",component="apiserver",dry_run="",group="",resource="pods",scope="cluster",subresource="",verb="WATCH",version="v1"} 3
apiserver_request_total_other{verb="GET"} 99
"""  # noqa: E501


def test_request_totals_sum_by_verb_and_resource_over_codes() -> None:
    totals = serverside.request_totals(METRICS)
    assert totals == {
        "PUT leases": 40.0,
        "PATCH pods/status": 8.0,
        "GET /metrics": 2.0,
        "WATCH pods": 3.0,
    }
    later = serverside.request_totals(METRICS.replace("} 40", "} 52").replace("} 7", "} 9"))
    later["GET /metrics"] += 1  # the second scrape
    moved = serverside.difference(totals, later)
    assert moved == {"GET /metrics": 1, "PATCH pods/status": 2, "PUT leases": 12}
    assert serverside.without_leases_and_watches(moved) == {"PATCH pods/status": 2}
    assert serverside.per_second(moved, 4.0)["PUT leases"] == 3.0


def test_plot_series_are_the_json_figures() -> None:
    results = run_json()
    results["growth"] = growth(results)
    data = plots.series(results)
    assert data["operator_converged_wall_s"] == [(100.0, 4.0), (1000.0, 25.0)]
    assert data["floor_converged_wall_s"] == [(100.0, 3.0), (1000.0, 20.0)]
    assert data["operator_cpu_s"] == [(100.0, 3.0), (1000.0, 36.0)]
    assert data["idle_cpu_percent"] == [(5.0, 1.0), (10.0, 2.0)]


@pytest.mark.slow  # matplotlib renders four plots: ~10 s; in the suite, not in make test-fast
def test_plots_render_valid_pngs(tmp_path: Path) -> None:
    results = run_json()
    results["growth"] = growth(results)
    written = plots.render([("run-1", results), ("run-2", results)], tmp_path / "plots")
    assert [p.name for p in written] == list(plots.PLOTS)
    for path in written:
        data = path.read_bytes()
        assert data.startswith(PNG_MAGIC), path
        assert len(data) > 1000, path


def test_writes_by_kind_split_status_events_children_and_the_gate_leases_apart() -> None:
    from opbench.api import RequestCounts, not_bench

    def row(agent: str, verb: str, resource: str, count: int) -> dict[str, Any]:
        return {"agent": agent, "verb": verb, "resource": resource, "count": count, "last": 0.0}

    counts = RequestCounts(0.0, 1.0, [
        row("operator", "patch", "nemotrondeployments/status", 3),
        row("operator", "create", "events", 1),
        row("operator", "apply", "services", 2),
        row("operator", "apply", "statefulsets", 1),
        row("operator", "patch", "pods/status", 1),
        row("operator", "update", "leases", 5),  # the heartbeat: apart
        row("operator", "get", "nemotrondeployments", 7),  # a read
        row("operator", "delete", "services", 1),
        row("nemotron-bench", "create", "nemotrondeployments", 1),  # the benchmark's own
    ])  # fmt: skip
    assert counts.writes_by_kind(not_bench) == {
        "status patch": 3, "Event": 1, "child apply": 3, "pod status patch": 1, "other": 1,
    }  # fmt: skip
    assert sum(counts.writes_by_kind(not_bench).values()) == counts.writes(not_bench)
