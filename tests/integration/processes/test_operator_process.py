"""The tests' operator process: one that never says where it listens is killed when ``start``
gives up, not left running past the test (a real-engine run left one polling a stopped
cluster's API server for 40 minutes)."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from tests.integration.operator_process import OperatorProcess
from tests.kube import KubeHandle

SILENT = (sys.executable, "-c", "import time; time.sleep(600)")  # ignores `run` and the flags


def test_an_operator_that_does_not_start_in_time_is_killed(tmp_path: Path) -> None:
    handle = cast("KubeHandle", SimpleNamespace(env={}))
    operator = OperatorProcess(handle, tmp_path / "operator.log", program=SILENT)
    with pytest.raises(AssertionError, match="the operator did not start"):
        operator.start(timeout=0.5)
    assert operator.process is not None
    assert operator.process.poll() is not None, "still running after start gave up"
