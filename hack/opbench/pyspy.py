"""py-spy on the operator over a window: the process's Python stacks, sampled from outside.

``py-spy record --format raw --rate 50 --nonblocking --function --pid PID --output FILE``
(py-spy 0.4.3, a pinned dev dependency; its wheel carries the binary). ``--nonblocking`` reads
the process's memory without stopping it (the operator's timing is not disturbed; a stack may
now and then be read torn, which py-spy counts as an error); ``--function`` names each frame by
its function's first line rather than the line running, so a function is one row. Idle threads
are not sampled (py-spy's default): the samples are the operator's busy time, at 50 per
second. py-spy stops on SIGINT and writes its file then. It needs ptrace rights over the
operator: the benchmark's user started it (and the tests run as root).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from opbench.procs import cpu_seconds
from opbench.stacks import Bucket, parse_collapsed, summarise

RATE = 50  # samples per second
_STOP_SECONDS = 30.0

# The operator's CPU by purpose, tried in this order (opbench.stacks: first match wins).
IDLE = "idle (waiting: epoll, the thread pool's queue, a lock)"
OPERATOR_BUCKETS = (
    # py-spy's idle detection misses threads waiting in these (they show as running): the
    # running frame alone decides, and the summary's busy share leaves them out.
    Bucket.of(
        IDLE,
        r"^EpollSelector\.select \(selectors\.py",
        r"^_worker \(concurrent/futures/thread\.py",
        r"^(Condition|Event|Semaphore)\.(wait|acquire) \(threading\.py",
        r"^Thread\._wait_for_tstate_lock \(threading\.py",
        leaf=True,
    ),
    Bucket.of(
        "Events",
        r"^(post_event|event_body) \(nemotron_operator/kube/writes\.py",
        r"^post_events \(nemotron_operator/controller/reconcile/events\.py",
    ),
    Bucket.of("status patches", r"^patch_status \(nemotron_operator/kube/writes\.py"),
    Bucket.of("pod readiness gate", r"^set_pod_condition \(nemotron_operator/kube/writes\.py"),
    Bucket.of(
        "child applies",
        r"^(apply_child|delete_child) \(nemotron_operator/kube/writes\.py",
        r"\(nemotron_operator/controller/reconcile/apply\.py",
    ),
    Bucket.of("plan and render", r"\(nemotron_operator/(sizing|catalog|render|api)/"),
    # What write_status does besides the patch and the Events: compute, serialise, compare.
    Bucket.of(
        "status computation",
        r"\(nemotron_operator/status/",
        r"^write_status \(nemotron_operator/controller/reconcile/events\.py",
    ),
    Bucket.of("GPU inventory", r"\(nemotron_operator/controller/watch/inventory\.py"),
    Bucket.of(
        "watch event decoding and caches",
        r"\(nemotron_operator/kube/(informer|listwatch|store)\.py",
        r"^_events \(nemotron_operator/kube/transport\.py",
        r"\(nemotron_operator/controller/watch/",
    ),
    Bucket.of(
        "pods' metrics (scrape, parse, verify)",
        r"\(nemotron_operator/controller/pods/",
        r"\(nemotron_operator/observe/",
        r"\(prometheus_client/parser\.py",
    ),
    Bucket.of(
        "own metrics and health",
        r"\(nemotron_operator/telemetry/",
        r"\(prometheus_client/",
        r"\(nemotron_operator/controller/runtime/(health|metrics_auth)\.py",
    ),
    Bucket.of("work queue", r"\(nemotron_operator/controller/queue\.py"),
    Bucket.of(
        "reconcile (other)",
        r"\(nemotron_operator/controller/(reconcile|decide)/",
    ),
    Bucket.of("kopf", r"\(kopf/"),
    Bucket.of(
        "HTTP client (aiohttp, TLS)", r"\((aiohttp|yarl|multidict)/", r"\(ssl\.py", r"sslproto\.py"
    ),
    Bucket.of("event loop (asyncio, other)", r"\(asyncio/"),
)


def binary() -> str | None:
    """The venv's py-spy (beside this interpreter), else one on PATH."""
    beside = Path(sys.executable).parent / "py-spy"
    return str(beside) if beside.exists() else shutil.which("py-spy")


class PySpy:
    """``py-spy record`` attached to ``pid`` until :meth:`stop`."""

    def __init__(self, pid: int, output: Path) -> None:
        self.output = output
        self.error: str | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self.own_cpu_s = 0.0
        found = binary()
        if found is None:
            self.error = "py-spy is not installed (a dev dependency: pip install -e '.[dev]')"
            return
        argv = [
            found, "record", "--format", "raw", "--rate", str(RATE), "--nonblocking",
            "--function", "--pid", str(pid), "--output", str(output),
        ]  # fmt: skip
        self.log = output.with_suffix(".log")
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)

    def stop(self) -> None:
        """SIGINT (py-spy writes its file on it), then wait."""
        process = self.process
        if process is None:
            return
        if process.poll() is None:
            with contextlib.suppress(OSError):  # gone meanwhile
                self.own_cpu_s = cpu_seconds(process.pid)
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=_STOP_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        if not self.output.exists():
            log = self.log.read_text(errors="replace").strip().splitlines()
            self.error = f"py-spy wrote nothing (exit {process.returncode}): " + " / ".join(
                line for line in log[:3]
            )


def summary(path: Path, seconds: float, top: int = 25) -> dict[str, Any]:
    """The operator's profile of one window: ``busy_percent`` (samples but the idle bucket's
    ÷ (RATE × seconds), its threads summed: the share of the window it ran Python) and the
    summary of its stacks (opbench.stacks.summarise, OPERATOR_BUCKETS)."""
    stacks, skipped = parse_collapsed(path.read_text(errors="replace"))
    out: dict[str, Any] = summarise(stacks, OPERATOR_BUCKETS, top=top)
    possible = RATE * seconds
    busy = out["samples"] - out["buckets"][IDLE]["samples"]
    out["window_s"] = round(seconds, 1)
    out["rate_hz"] = RATE
    out["busy_percent"] = round(100 * busy / possible, 1) if possible else None
    out["unreadable_lines"] = skipped
    return out


def kill(spy: PySpy) -> None:
    """Stop without waiting (an error path)."""
    if spy.process is not None and spy.process.poll() is None:
        os.kill(spy.process.pid, signal.SIGKILL)
