"""The real operator (``python -m nemotron_operator.cli run``) as a process against a SIMULATED
cluster, for integration tests. Used through the ``operator_process`` fixture
(``tests/integration/conftest.py``); other suites (observability, packaging) reuse it.

Interface of :class:`OperatorProcess`:

- ``program``: the argv before ``run`` (default: ``python -m nemotron_operator.cli``).
- ``start()`` / ``stop()`` (SIGTERM, then SIGKILL after 15 s) / ``kill()`` (SIGKILL) /
  ``restart()``; the process's stdout and stderr go to ``log_path`` (appended across restarts).
- ``args``: the ``run`` flags; the defaults are fast for tests (``FAST_ARGS``: resync every 1 s,
  Lease of 5 s, retries from 0.2 s up to 2 s, health and metrics on free loopback ports).
  Pass ``extra_args`` to add or override (a later flag wins in argparse).
- ``health_url`` / ``metrics_url`` (read from the operator's start-up log line);
  ``healthz()`` → (HTTP status, JSON body).
- ``log()``: the whole log so far; ``wait_for_log(text)``: bounded wait for a line.
- ``mark()`` → a position in the simulated API server's request log; ``writes(since)`` → the
  POST/PUT/PATCH/DELETE requests after it (the Lease's renewals left out unless asked),
  to prove a reconcile wrote nothing.
- ``check_log(allowed=(...))``: raises if the log holds a traceback none of the ``allowed``
  regular expressions matches (the fixture calls it after each test; a test that expects a
  traceback appends a pattern to ``allowed_tracebacks``).
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.kube import KubeHandle

ROOT = Path(__file__).resolve().parents[2]
CRDS = ROOT / "crds"
FAST_ARGS = (
    "--resync-seconds=1",
    "--bind-address=127.0.0.1",
    "--health-port=0",
    "--metrics-port=0",
    "--lease-seconds=5",
    "--retry-base-seconds=0.2",
    "--retry-max-seconds=2",
    "--watch-error-backoffs=0.5,1,2,4,8,8,8,8,8,8",
    "--log-format=plain",
)
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_ENDPOINTS = re.compile(r"health endpoint (http://\S+/healthz), metrics (http://\S+/metrics)")
_TRACEBACK = "Traceback (most recent call last)"
_RECONCILES = re.compile(r'^nemotron_operator_reconciles_total\{result="([^"]+)"\} (\S+)$', re.M)


def _get_json(url: str, timeout: float = 5.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 (loopback)
        return json.load(response)


class OperatorProcess:
    def __init__(
        self,
        cluster: KubeHandle,
        log_path: Path,
        extra_args: Sequence[str] = (),
        env: dict[str, str] | None = None,
        program: Sequence[str] = (sys.executable, "-m", "nemotron_operator.cli"),
    ) -> None:
        self.cluster = cluster
        self.program = list(program)
        self.log_path = log_path
        self.args = [*FAST_ARGS, *extra_args]
        inherited = {k: v for k, v in cluster.env.items() if not k.startswith("NEMOTRON_OPERATOR_")}
        self.env = {**inherited, **(env or {}), "PYTHONUNBUFFERED": "1"}
        self.process: subprocess.Popen[bytes] | None = None
        self.health_url = ""
        self.metrics_url = ""
        self.allowed_tracebacks: list[str] = []
        self._log_offset = 0

    # -- lifecycle -------------------------------------------------------------------------
    def start(self, timeout: float = 90.0) -> None:
        """Start and wait for the endpoints line (imports take over 30 s on two busy cores); a
        process that does not get there is killed, never left running past the test."""
        self._log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [*self.program, "run", *self.args],
                env=self.env,
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = _ENDPOINTS.search(self.log()[self._log_offset :])
            if found:
                self.health_url, self.metrics_url = found.group(1), found.group(2)
                return
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        self.kill()
        raise AssertionError(f"the operator did not start:\n{self.log()[-4000:]}")

    def stop(self, timeout: float = 15.0) -> int | None:
        if self.process is None or self.process.poll() is not None:
            return None if self.process is None else self.process.returncode
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait(5)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(5)

    def restart(self) -> None:
        self.stop()
        self.start()

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    # -- observation -----------------------------------------------------------------------
    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def wait_for_log(self, text: str, *, seconds: float = 20.0, since: int = 0) -> None:
        self.cluster.wait_until(lambda: text in self.log()[since:], seconds=seconds, what=text)

    def healthz(self) -> tuple[int, Any]:
        try:
            with urllib.request.urlopen(self.health_url, timeout=5) as response:  # noqa: S310
                return response.status, json.load(response)
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"{}")
        except OSError as error:
            return 0, {"error": str(error)}

    def reconciles(self) -> dict[str, float]:
        """``nemotron_operator_reconciles_total`` by result, from the operator's /metrics (the
        resync timer's clock now that a quiet resync makes no request)."""
        with urllib.request.urlopen(self.metrics_url, timeout=5) as response:  # noqa: S310
            text = response.read().decode()
        found: dict[str, float] = {}
        for match in _RECONCILES.finditer(text):
            found[match.group(1)] = float(match.group(2))
        return found

    def wait_reconciles(self, more: int, *, seconds: float = 20.0, result: str = "") -> None:
        """Until ``more`` reconciles (of ``result``, or any) have finished from now."""

        def count() -> float:
            by_result = self.reconciles()
            return by_result.get(result, 0.0) if result else sum(by_result.values())

        start = count()
        self.cluster.wait_until(
            lambda: count() - start >= more, seconds=seconds, what=f"{more} reconciles"
        )

    def requests(self) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = _get_json(f"{self.cluster.url}/_sim/requests")
        return result

    def mark(self) -> int:
        return len(self.requests())

    def writes(self, since: int = 0, *, include_lease: bool = False) -> list[dict[str, Any]]:
        found = [r for r in self.requests()[since:] if r["method"] in WRITE_METHODS]
        if not include_lease:
            found = [
                r
                for r in found
                if "/leases/" not in r["path"] and not r["path"].endswith("/leases")
            ]
        return found

    def check_log(self, allowed: Sequence[str] = ()) -> None:
        text = self.log()
        patterns = [re.compile(p) for p in [*allowed, *self.allowed_tracebacks]]
        blocks = text.split(_TRACEBACK)[1:]
        for block in blocks:
            excerpt = block[:3000]
            if not any(p.search(excerpt) for p in patterns):
                raise AssertionError(f"unexpected traceback in the operator's log:\n{excerpt}")


def install_crds(cluster: KubeHandle) -> None:
    cluster.kubectl("apply", "--server-side", "-f", str(CRDS))


def ensure_namespace(cluster: KubeHandle, namespace: str) -> None:
    manifest = f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {namespace}\n"
    cluster.kubectl("apply", "-f", "-", input=manifest)
