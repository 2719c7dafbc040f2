"""``hack/bench-operator.py --tiny`` keeps working: it runs end to end and writes every section.

Figures are not asserted (speed is read from the published benchmark, not unit-tested); what is
checked is that each measurement produced numbers, so the benchmark cannot silently rot.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
SECTIONS = ("machine", "config", "convergence", "floor", "api", "footprint", "restart", "planner")


def run_tiny(tmp_path: Path, *extra: str) -> dict[str, Any]:
    output = tmp_path / "operator.json"
    completed = subprocess.run(
        [sys.executable, str(ROOT / "hack" / "bench-operator.py"), "--tiny",
         "--json", str(output), *extra],
        capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "operator benchmark" in completed.stdout  # the table was printed
    results: dict[str, Any] = json.loads(output.read_text())
    return results


def test_tiny_floor_and_planner_without_an_operator(tmp_path: Path) -> None:
    results = run_tiny(tmp_path, "--operator-cmd", "none")
    assert set(SECTIONS) <= set(results)
    floor = results["floor"]
    assert floor["single"]["converged"]["n"] == results["config"]["singles"]
    batch = floor["batches"]["3"]
    assert batch["converged"]["n"] == 3
    assert batch["converged_wall_s"] > 0
    assert batch["requests_per_deployment"] >= 6  # create, 4 applies, status
    assert results["planner"]["plans_per_second"] > 0
    for section in ("convergence", "api", "footprint", "restart"):
        assert results[section] == {"error": "no operator (--operator-cmd none)"}
    assert {t["target"] for t in results["targets"]}  # every target listed, measured or not
