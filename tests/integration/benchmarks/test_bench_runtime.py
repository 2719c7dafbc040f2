"""``hack/bench-runtime.py`` keeps working, at a size of seconds: both watchers (kopf's indexes,
the operator's watch cache) see every event the workload makes, and each has a CPU and memory
figure. The figures themselves are read from docs/controller.md, not asserted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
COUNT = 4


def test_both_runtimes_take_in_every_event_and_are_measured(tmp_path: Path) -> None:
    output = tmp_path / "runtime.json"
    completed = subprocess.run(
        [sys.executable, str(ROOT / "hack" / "bench-runtime.py"), "--count", str(COUNT),
         "--namespaces", "2", "--idle-seconds", "1", "--json", str(output)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stdout + completed.stderr
    results = json.loads(output.read_text())
    # Per deployment: 4 children and a pod created, 4 pod status changes, at least.
    expected = COUNT * 9
    assert results["events_expected_at_least"] == expected
    converged = results["converged"]
    assert set(converged) == {"kopf", "informer"}
    for runtime, figures in converged.items():
        assert figures["events"] >= expected, runtime
        assert figures["cpu_s"] > 0, runtime
        assert figures["rss_mib"] > 30, runtime  # a Python process with its imports
    # Both saw the same stream: the same number of events.
    assert converged["kopf"]["events"] == converged["informer"]["events"]
    assert results["idle"]["seconds"] == 1
    assert results["machine"]["nproc"] >= 1
    assert "kopf" in completed.stdout
