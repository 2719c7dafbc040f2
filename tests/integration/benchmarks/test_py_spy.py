"""The pinned py-spy the operator benchmark's --profile uses (opbench.pyspy), on a real process."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from opbench import pyspy


def test_py_spy_records_a_busy_python_process(tmp_path: Path) -> None:
    """The pinned py-spy attaches, samples and writes its file on SIGINT (about a second)."""
    busy = "def spin():\n    while True:\n        sum(range(1000))\nspin()\n"
    child = subprocess.Popen([sys.executable, "-c", busy])
    try:
        time.sleep(0.3)
        spy = pyspy.PySpy(child.pid, tmp_path / "spin.txt")
        time.sleep(1.0)
        spy.stop()
    finally:
        child.kill()
        child.wait()
    assert spy.error is None, spy.error
    out = pyspy.summary(spy.output, 1.0)
    assert out["samples"] >= 10
    assert out["top_self"][0]["function"] == "spin (<string>:1)"  # --function: its first line
