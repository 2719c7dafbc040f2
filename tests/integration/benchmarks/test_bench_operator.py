"""``hack/bench-operator.py --tiny`` keeps working: it runs end to end and writes every section.

It starts its own simulated cluster on the real control plane (``python -m nemotron_sim``, in
this session's network namespace) and the operator through the cluster's fault proxy. Speeds
are not asserted (they are read from the published benchmark, not unit-tested); what is checked
is that each measurement produced numbers, and that the counts that do not depend on the
machine's speed have their values: each deployment's four children applied once, no write while
idle and none on restart (Lease renewals apart), the write targets met.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
SECTIONS = ("machine", "config", "convergence", "floor", "api", "footprint", "restart", "planner")


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
    # Counted by the fault proxy the operator goes through: its applies, 4 children each, and
    # the watch it opened on NemotronDeployments (kopf's).
    assert api["batches"]["3"]["per_deployment_by_verb"]["apply"] == 4  # each child once
    assert results["restart"]["by_verb_and_resource"]["watch nemotrondeployments"] >= 1
    assert api["idle"]["seconds"] > 0
    assert api["idle"]["writes"] == 0  # settled deployments cost no write (the target)
    footprint = results["footprint"]
    assert footprint["rss_mib_converged"] > 0
    assert footprint["cpu_s_to_converge"] > 0
    restart = results["restart"]
    assert restart["deployments"] == 3
    assert restart["resync_s"] > 0
    assert restart["writes"] == 0  # a restarted operator finds everything as it left it
    assert results["planner"]["plans_per_second"] > 0
    assert all(t["measured"] is not None for t in results["targets"]), results["targets"]
    met = {t["target"]: t["met"] for t in results["targets"]}
    assert met["writes during idle (Lease renewals apart)"] is True
    assert met["writes on restart (Lease apart)"] is True
    assert "status_changes" in restart
