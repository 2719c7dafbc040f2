"""The simulated cluster and the operator as child processes; CPU and memory from /proc."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from pathlib import Path
from typing import IO

_CLK_TCK = os.sysconf("SC_CLK_TCK")
_START_SECONDS = 60.0
_STOP_SECONDS = 30.0


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of ``pid`` (fields 14 and 15 of /proc/<pid>/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _CLK_TCK


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class Child:
    """A child process whose output is kept (the last lines) for the report and for errors."""

    def __init__(self, argv: list[str], env: dict[str, str], name: str) -> None:
        self.name = name
        self.argv = argv
        self.started = time.perf_counter()
        self.process = subprocess.Popen(
            argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        self.lines: deque[str] = deque(maxlen=200)
        self.line_count = 0
        self._first_lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int:
        return self.process.pid

    def _read(self) -> None:
        stream: IO[str] | None = self.process.stdout
        assert stream is not None
        for line in stream:
            self.lines.append(line.rstrip("\n"))
            self.line_count += 1

    def alive(self) -> bool:
        return self.process.poll() is None

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.pid)

    def rss_mib(self) -> float:
        return rss_mib(self.pid)

    def tail(self, lines: int = 20) -> str:
        return "\n".join(list(self.lines)[-lines:])

    def stop(self) -> int | None:
        """SIGTERM, then SIGKILL after a while; the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=_STOP_SECONDS)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self._reader.join(timeout=5)
        return self.process.returncode


class SimCluster(Child):
    """``python -m nemotron_sim`` with GPU nodes; its API URL and kubeconfig once ready."""

    READY = "SIMULATED cluster ready"

    def __init__(self, nodes: str, workdir: Path, env: dict[str, str]) -> None:
        self.kubeconfig = workdir / "kubeconfig"
        super().__init__(
            [sys.executable, "-m", "nemotron_sim.homemade_cli", "--nodes", nodes, "--no-events",
             "--kubeconfig", str(self.kubeconfig)],
            env, "simulated cluster",
        )  # fmt: skip
        self.url = ""

    def wait_ready(self) -> None:
        deadline = time.monotonic() + _START_SECONDS
        while time.monotonic() < deadline and self.alive():
            for line in list(self.lines):
                if "API server:" in line:
                    self.url = line.split("API server:", 1)[1].strip()
                if self.READY in line and self.url:
                    return
            time.sleep(0.05)
        raise RuntimeError(f"the simulated cluster did not start:\n{self.tail()}")
