"""``hack/bench-operator.py --tiny`` keeps working: it runs end to end and writes every section.

It starts its own simulated cluster on the real control plane (``python -m sim_cluster``, in
this session's network namespace) and the operator through the cluster's fault proxy. Speeds
are not asserted (they are read from the published benchmark, not unit-tested); what is checked
is that each measurement produced numbers (the loaded singles: a sample each), and that the
counts that do not depend on the machine's speed have their values: each deployment's three
children applied once, no write while idle and none on restart (Lease renewals apart), the write
targets met; the growth rows are the batches' figures, the versions are those installed, and the
plots render from the run's JSON.
"""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
SECTIONS = (
    "machine", "config", "versions", "convergence", "floor", "api", "footprint", "restart",
    "planner", "growth",
)  # fmt: skip
sys.path.insert(0, str(ROOT / "hack"))
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
# What the operator applies for the Nano example (one replica): two Services and the
# StatefulSet (a PodDisruptionBudget only where more than one serving pod can run).
CHILDREN = 3


def run_tiny(tmp_path: Path, *extra: str) -> dict[str, Any]:
    output = tmp_path / "operator.json"
    completed = subprocess.run(
        [sys.executable, str(ROOT / "hack" / "bench-operator.py"), "--tiny",
         "--json", str(output), *extra],
        capture_output=True, text=True, timeout=420, check=False,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "operator benchmark" in completed.stdout  # the table was printed
    results: dict[str, Any] = json.loads(output.read_text())
    return results


def test_tiny_run_against_the_real_operator_writes_every_section(tmp_path: Path) -> None:
    results = run_tiny(tmp_path)
    assert set(SECTIONS) <= set(results)
    for section in SECTIONS:
        assert "error" not in results[section], (section, results[section])
    singles = results["config"]["singles"]
    assert results["convergence"]["single"]["converged"]["n"] == singles
    assert results["convergence"]["single"]["ready"]["n"] == singles
    assert results["floor"]["single"]["converged"]["n"] == singles
    for source in ("convergence", "floor"):
        batch = results[source]["batches"]["3"]
        assert batch["converged"]["n"] == 3, source
        assert batch["converged_wall_s"] > 0, source
    assert results["convergence"]["batches"]["3"]["ready"]["n"] == 3
    # The cluster's CPU, apart: the control plane's four processes and the simulator.
    cluster = results["cluster"]
    assert set(cluster["control_plane_cpu_s_total"]) == {
        "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"
    }  # fmt: skip
    assert cluster["control_plane_cpu_s_total"]["kube-apiserver"] > 0
    assert cluster["control_plane_rss_mib_start"] > 0
    batch = results["convergence"]["batches"]["3"]
    # The idle window starts once every status has caught up (Ready, Progressing=False).
    assert batch["settled_wall_s"] >= batch["ready_wall_s"] > 0
    assert batch["control_plane_cpu_s_to_ready"] > 0
    assert batch["cluster_cpu_s_to_ready"] == pytest.approx(
        batch["control_plane_cpu_s_to_ready"] + batch["simulator_cpu_s_to_ready"], abs=0.02
    )
    assert results["floor"]["ratio"]["3"]["converged_wall"] > 0
    api = results["api"]
    # Counted by the fault proxy the operator goes through: its applies, 3 children each (two
    # Services and the StatefulSet; no PodDisruptionBudget for a one-pod deployment), and
    # the watch it opened on NemotronDeployments (kopf's).
    assert api["batches"]["3"]["per_deployment_by_verb"]["apply"] == CHILDREN  # each child once
    check_writes_until_ready(api["batches"])
    assert results["restart"]["by_verb_and_resource"]["watch nemotrondeployments"] >= 1
    assert api["idle"]["seconds"] > 0
    assert api["idle"]["writes"] == 0  # settled deployments cost no write (the target)
    footprint = results["footprint"]
    assert footprint["rss_mib_converged"] > 0
    assert footprint["cpu_s_to_converge"] > 0
    restart = results["restart"]
    assert restart["deployments"] == 6  # idle and restart at the largest tiny size
    assert restart["resync_s"] > 0
    assert restart["writes"] == 0  # a restarted operator finds everything as it left it
    assert results["planner"]["plans_per_second"] > 0
    targets = {t["target"]: t for t in results["targets"]}
    assert len(targets) == 13  # issue 41's table
    # The larger size (3,000) is not run: named, not measured. The loaded p99s are
    # measured but not judged on 3 samples (200 needed); every other goal is met or missed.
    larger = {t for t in targets if "3000" in t}
    assert len(larger) == 3
    loaded = {t for t in targets if t.startswith("loaded single p99")}
    assert len(loaded) == 2
    for name, row in targets.items():
        assert (row["measured"] is None) == (name in larger), row
        assert row["met"] in ((None,) if name in larger | loaded else (True, False)), row
    assert targets["writes when idle (Lease apart)"]["met"] is True
    assert targets["restart resync at 6"]["measured"].endswith(" s, 0 writes")
    idle_api = targets["idle API requests/s at 6 (Lease, watches apart)"]
    assert (
        idle_api["measured"]
        == results["api"]["idle"]["operator"]["other_than_lease_and_watch_per_second"]
    )
    assert "status_changes" in restart
    check_loaded_singles(results)
    check_growth(results)
    check_idle_server_side(results)
    check_versions(results)
    check_plots(results, tmp_path)


# Writes per deployment from create to Ready, by kind (docs/benchmarks.md, "Writes until
# Ready"). Before issue 41 the tiny run measured 15.8-18.3 (status patches 6.5-7.7, Events
# 4.3-5.7: an Event per step of progress, and a WaitingForPods -> RolloutInProgress ->
# WaitingForPods flip of every new deployment); after, 10.3-10.7 (status patches 4.7-4.8).
# Status patches follow the steps the operator observes (Pending, Loading, Verifying, Ready and
# the messages between), so they vary with the machine's speed: bounded, not fixed.
WRITES_UNTIL_READY = 12.0
STATUS_PATCHES_UNTIL_READY = 6.0


def check_writes_until_ready(batches: dict[str, Any]) -> None:
    for size in ("3", "6"):
        kinds = batches[size]["to_ready"]["writes_per_deployment_by_kind"]
        assert kinds["child apply"] == CHILDREN, (size, kinds)  # each child once
        # The readiness gate, once per pod — and for about 2 % of pods a second time (1.02 per
        # deployment at N = 100 in a quick run, 1.33 once at N = 3: one extra patch; its cause
        # is not investigated yet): at most one extra in a tiny batch.
        assert kinds["pod status patch"] <= 1 + 1 / int(size), (size, kinds)
        # One Event to Ready (Ready=True); the steps before it are in status. At most: the
        # count is taken when Ready is seen, the Event follows the status patch.
        assert kinds["Event"] <= 1, (size, kinds)
        assert 1 <= kinds["status patch"] <= STATUS_PATCHES_UNTIL_READY, (size, kinds)
        assert kinds["other"] == 0, (size, kinds)
        assert batches[size]["to_ready"]["writes_per_deployment"] <= WRITES_UNTIL_READY, size
        settled = batches[size]["to_settled"]["writes_per_deployment_by_kind"]
        assert settled["Event"] <= 1, (size, settled)


def check_loaded_singles(results: dict[str, Any]) -> None:
    """``--loaded-singles`` (3 in the tiny mode) one at a time while the idle-at batch (6) is
    resident, for the operator and the floor: every one converged and got its first serving
    pod within the wait (no sample missing), and the table's target rows carry the figures."""
    count = results["config"]["loaded_singles"]
    assert count == 3
    for source in ("convergence", "floor"):
        row = results[source]["loaded_single"]
        assert row["resident"] == 6, (source, row)
        assert row["n"] == count, (source, row)
        assert "timeouts" not in row, (source, row)
        for what in ("converged", "pod_created"):
            summary = row[what]
            assert summary["n"] == count, (source, what, summary)
            assert "missing" not in summary, (source, what, summary)
            assert 0 < summary["p50_ms"] <= summary["p99_ms"] == summary["max_ms"], summary
    # The floor's waited until every pod of its batch existed (the StatefulSet controller's).
    assert "batch_pods_missing" not in results["floor"]["loaded_single"]
    assert results["floor"]["loaded_single"]["waited_for_batch_pods_s"] >= 0
    targets = {t["target"]: t for t in results["targets"]}
    children = targets["loaded single p99, apply -> children (6 resident)"]["measured"]
    assert children.endswith(f" ms, n={count})"), children
    pod = targets["loaded single p99, apply -> first serving pod (6 resident)"]["measured"]
    assert pod == f"{results['convergence']['loaded_single']['pod_created']['p99_ms']:,.1f} ms, n=3"


def check_growth(results: dict[str, Any]) -> None:
    growth = results["growth"]
    assert growth["sizes"] == [3, 6]
    for size in ("3", "6"):
        row, batch = growth["by_size"][size], results["convergence"]["batches"][size]
        assert row["converged_wall_s"] == batch["converged_wall_s"] > 0
        assert (
            row["floor_converged_wall_s"] == results["floor"]["batches"][size]["converged_wall_s"]
        )
        assert row["operator_cpu_s_per_deployment"] == round(
            batch["operator_cpu_s_to_converge"] / int(size), 4
        )
        assert row["writes_per_deployment"] >= CHILDREN + 1  # the children, and the status
        assert row["operator_rss_mib"] == batch["operator_rss_mib"] > 0
    per = [growth["by_size"][s]["operator_cpu_s_per_deployment"] for s in ("3", "6")]
    expected = round(per[1] / per[0], 2) if per[0] else None  # 0.0 s: under a clock tick
    assert growth["cpu_per_deployment_ratio"] == expected
    assert growth["operator_cpu_fit"] is not None


def check_idle_server_side(results: dict[str, Any]) -> None:
    idle = results["api"]["idle"]
    # The operator's own requests, counted by the fault proxy: besides its Lease and watches,
    # reads at most (one run in three showed one: a watch's re-list, or a read, in 2 s; the
    # target of 0 per second is measured over minutes, not asserted here).
    operator = idle["operator"]
    assert all(k.split(" ")[0] in ("get", "list") for k in operator["other_than_lease_and_watch"])
    assert operator["other_than_lease_and_watch_per_second"] == pytest.approx(
        sum(operator["other_than_lease_and_watch"].values()) / idle["whole_window_seconds"],
        abs=0.05,
    ), operator
    # kube-apiserver's counter, every client: rows "VERB resource" with the counts that moved.
    every = idle["apiserver_all_clients"]
    assert "all clients" in every["source"]
    assert all(count > 0 and " " in key for key, count in every["counts"].items())
    assert set(every["other_than_lease_and_watch"]) <= set(every["counts"])
    samples = results["footprint"]["idle_cpu_samples"]
    assert len(samples) >= 3  # 2 s sampled every 0.5 s
    times = [s["t_s"] for s in samples]
    assert times == sorted(times)
    assert times[-1] == pytest.approx(results["footprint"]["idle_rss_seconds"], abs=0.6)
    assert all(0 <= s["cpu_percent"] <= 100 * results["machine"]["nproc"] for s in samples)


def check_versions(results: dict[str, Any]) -> None:
    versions = results["versions"]
    assert versions["kube_apiserver"].startswith("v1.")
    assert versions["etcd"].startswith("etcd Version: 3.")
    assert "stand-in" in versions["vllm_stand_in"]
    assert versions["kopf"] == importlib.metadata.version("kopf")
    assert versions["python"] == results["machine"]["python"]
    assert versions["commit"] == results["machine"]["commit"]


def check_plots(results: dict[str, Any], tmp_path: Path) -> None:
    from opbench import plots  # hack/ is on the path (above)

    data = plots.series(results)
    rows = results["growth"]["by_size"]
    assert data["operator_converged_wall_s"] == [
        (float(n), rows[str(n)]["converged_wall_s"]) for n in (3, 6)
    ]
    assert data["floor_converged_wall_s"] == [
        (float(n), rows[str(n)]["floor_converged_wall_s"]) for n in (3, 6)
    ]
    assert [y for _, y in data["idle_cpu_percent"]] == [
        s["cpu_percent"] for s in results["footprint"]["idle_cpu_samples"]
    ]
    written = plots.render([("tiny", results)], tmp_path / "plots")
    assert sorted(p.name for p in written) == sorted(plots.PLOTS)
    for path in written:
        body = path.read_bytes()
        assert body.startswith(PNG_MAGIC), path
        assert len(body) > 1000, path
