"""Profiles of a batch's window (``--profile``; on in the full mode): where the operator's CPU
and kube-apiserver's go while N deployments converge, the floor's window against the operator's.

A window starts at the batch's first create. The floor's ends when its N have converged; the
operator's has two phases, ``to_converged`` (create → children applied and plan written) and
``converged_to_ready``. The operator's loaded singles (opbench.loaded) are one more window,
``operator-loaded``, of one phase, ``loaded``. Per window (docs/benchmarks.md, "Profiles"):

- the operator (its windows only): py-spy's stacks of each phase (opbench.pyspy);
- kube-apiserver: back-to-back pprof CPU profiles over the window (opbench.pprof), each
  counted in the phase it started in;
- kube-apiserver's /metrics at the start, at converged and at the end: requests and their
  summed latency by verb and resource, watch events (and bytes) by kind, per deployment
  (opbench.serverside.window_metrics).

Everything is analysed after the run (``summarise``), so no analysis runs inside a measured
window; the raw files are kept beside the run's JSON when small, gzipped.
"""

from __future__ import annotations

import argparse
import gzip
import os
import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from opbench import pprof, pyspy, serverside

if TYPE_CHECKING:
    from opbench.api import Client
    from opbench.procs import SimCluster

KEEP_BYTES = 512 * 1024  # a raw profile larger than this (gzipped) is not kept beside the JSON
# The operator's loaded-singles phase (opbench.loaded), profiled at the resident batch's size.
LOADED = "operator-loaded"
PROFILED_FROM = 1000  # the sizes profiled by default: these and larger (else the largest)
# Frames under which everything runs (the interpreter's start, the event loop, a thread's
# start): the printed inclusive top leaves them out (the JSON keeps them).
_ROOTS = re.compile(
    r"\((<frozen runpy>|asyncio/(runners|base_events|events)\.py|threading\.py"
    r"|nemotron_operator/cli/)"
)
_COMPARED = (  # what the table prints of the floor's window against the operator's
    ("by work", "apiserver_buckets_ms_per_deployment"),
    ("by request", "apiserver_by_request_ms_per_deployment"),
    ("requests per deployment", "requests_per_deployment"),
    ("watch events per deployment", "watch_events_per_deployment"),
)


class Window:
    """One batch's window; does nothing when profiling is off (``profiles`` None)."""

    def __init__(
        self,
        profiles: Profiles | None,
        who: str,
        size: int,
        pid: int | None = None,
        phase: str = "to_converged",
    ) -> None:
        self.profiles, self.who, self.size, self.pid = profiles, who, size, pid
        self.phase = self.first_phase = phase
        self.started = time.perf_counter()
        self.seconds: dict[str, float] = {}
        self.metrics: list[tuple[str, dict[str, dict[str, float]]]] = []
        self.spies: dict[str, pyspy.PySpy] = {}
        self.apiserver: pprof.ApiserverProfiler | None = None
        self.finished = False

    @property
    def name(self) -> str:
        return f"{self.who}-{self.size}"

    async def _scrape(self, label: str) -> None:
        assert self.profiles is not None
        text = await self.profiles.client.text("/metrics")
        self.metrics.append((label, serverside.window_metrics(text)))

    def _spy(self) -> None:
        assert self.profiles is not None
        if self.pid is not None:
            path = self.profiles.directory / f"{self.name}-{self.phase}.pyspy.txt"
            self.spies[self.phase] = pyspy.PySpy(self.pid, path)

    async def start(self) -> Window:
        if self.profiles is None:
            return self
        self.profiles.windows.append(self)
        await self._scrape("start")
        self.apiserver = pprof.ApiserverProfiler(
            self.profiles.api, self.profiles.directory, f"apiserver-{self.name}"
        )
        self.apiserver.phase(self.first_phase)
        self.apiserver.start()
        self._spy()
        self.started = time.perf_counter()
        return self

    def _end_phase(self) -> None:
        self.seconds[self.phase] = round(
            time.perf_counter() - self.started - sum(self.seconds.values()), 2
        )
        spy = self.spies.get(self.phase)
        if spy is not None:
            spy.stop()

    async def converged(self) -> None:
        """The first phase ends (the operator's windows go on to Ready)."""
        if self.profiles is None or self.finished:
            return
        self._end_phase()
        await self._scrape("converged")
        self.phase = "converged_to_ready"
        assert self.apiserver is not None
        self.apiserver.phase(self.phase)
        self._spy()

    async def finish(self) -> None:
        if self.profiles is None or self.finished:
            return
        self._end_phase()
        await self._scrape("end")
        self.finished = True
        assert self.apiserver is not None
        await self.apiserver.stop()

    def kill(self) -> None:
        for spy in self.spies.values():
            spy.stop()


class Profiles:
    """The run's windows; ``directory`` holds their raw files until :func:`summarise`."""

    def __init__(self, client: Client, sim: SimCluster, sizes: list[int]) -> None:
        assert sim.api is not None
        self.client, self.api, self.sizes = client, sim.api, sizes
        self.directory = Path(tempfile.mkdtemp(prefix="nemotron-bench-profiles-"))
        self.windows: list[Window] = []


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--profile", action=argparse.BooleanOptionalAction, default=None,
        help="profile the operator (py-spy) and kube-apiserver (pprof, /metrics) over the "
        "batches' windows, the floor's and the operator's (default: on in the full mode)",
    )  # fmt: skip
    parser.add_argument(
        "--profile-sizes", help="the batch sizes profiled (default: 1000 and larger)"
    )


def configure(args: argparse.Namespace) -> None:
    """After parsing: the defaults that depend on the mode and the sizes."""
    if args.profile is None:
        args.profile = args.mode == "full"
    if args.profile_sizes:
        args.profile_sizes = [int(s) for s in str(args.profile_sizes).split(",")]
    else:
        args.profile_sizes = [s for s in args.sizes if s >= PROFILED_FROM] or [max(args.sizes)]
    args.profiles = None


def begin(args: argparse.Namespace, client: Client, sim: SimCluster) -> None:
    if args.profile:
        args.profiles = Profiles(client, sim, args.profile_sizes)


async def start(
    args: argparse.Namespace,
    who: str,
    size: int,
    pid: int | None = None,
    phase: str = "to_converged",
) -> Window:
    """A window from now (``who``: floor or operator; ``pid``: the operator's, for py-spy)."""
    profiles: Profiles | None = getattr(args, "profiles", None)
    if profiles is not None and size not in profiles.sizes:
        profiles = None
    return await Window(profiles, who, size, pid, phase).start()


def summarise(args: argparse.Namespace) -> dict[str, Any] | None:
    """Analyse every window's files (go tool pprof, the collapsed stacks), keep the small raw
    files beside ``args.json``, and drop the rest; None when nothing was profiled."""
    profiles: Profiles | None = getattr(args, "profiles", None)
    if profiles is None:
        return None
    keep = args.json.parent / f"{args.json.stem}-profiles" if args.json else None
    out: dict[str, Any] = {
        "how": {
            "operator": f"py-spy record --rate {pyspy.RATE} --nonblocking --function, per phase",
            "apiserver": f"/debug/pprof/profile in {pprof.CHUNK_SECONDS} s pieces over the "
            "window, each counted in the phase it started in; go tool pprof",
            "metrics": "kube-apiserver /metrics differences over the phase, per deployment",
        },
        "notes": [],
    }
    try:
        for window in profiles.windows:
            window.kill()
            try:
                row = _window(window, keep, out["notes"])
            except (OSError, ValueError, RuntimeError, KeyError) as error:  # keep the rest
                row = {"error": f"{type(error).__name__}: {error}"}
                out["notes"].append(f"{window.name}: {row['error']}")
            out.setdefault(window.who, {})[str(window.size)] = row
        out["comparison"] = comparison(out)
    finally:
        if not os.environ.get("NEMOTRON_BENCH_KEEP_PROFILES"):
            shutil.rmtree(profiles.directory, ignore_errors=True)
        else:
            print(f"profile: raw files kept in {profiles.directory}")
    for note in out["notes"]:
        print(f"profile: {note}")
    return out


def _keep(path: Path, keep: Path | None, name: str, files: list[str]) -> None:
    if keep is None or not path.exists():
        return
    data = path.read_bytes()
    packed = data if path.suffix == ".gz" else gzip.compress(data)
    if len(packed) <= KEEP_BYTES:
        keep.mkdir(parents=True, exist_ok=True)
        target = keep / (name if name.endswith(".gz") else name + ".gz")
        target.write_bytes(packed)
        files.append(f"{keep.name}/{target.name}")


def _window(window: Window, keep: Path | None, notes: list[str]) -> dict[str, Any]:
    size = window.size
    row: dict[str, Any] = {"seconds": window.seconds, "files": []}
    scrapes = dict(window.metrics)
    ends = {window.first_phase: ("start", "converged" if "converged" in scrapes else "end")}
    if "converged" in scrapes:
        ends["converged_to_ready"] = ("converged", "end")
    row["metrics_per_deployment"] = {
        phase: serverside.window_difference(scrapes[a], scrapes[b], size)
        for phase, (a, b) in ends.items()
        if a in scrapes and b in scrapes
    }
    for phase, spy in window.spies.items():
        row.setdefault("operator", {})
        if spy.error is not None:
            row["operator"][phase] = {"error": spy.error}
            notes.append(f"{window.name} {phase}: {spy.error}")
            continue
        summary = pyspy.summary(spy.output, window.seconds.get(phase, 0.0))
        summary["py_spy_cpu_s"] = round(spy.own_cpu_s, 2)
        row["operator"][phase] = summary
        _keep(spy.output, keep, spy.output.name, row["files"])
    apiserver = window.apiserver
    if apiserver is not None:
        row["apiserver"] = {}
        if apiserver.error is not None:
            row["apiserver"]["error"] = apiserver.error
            notes.append(f"{window.name}: kube-apiserver profile: {apiserver.error}")
        for phase, files in apiserver.files.items():
            try:
                row["apiserver"][phase] = pprof.summary(files)
            except (RuntimeError, OSError, ValueError) as error:
                row["apiserver"][phase] = {"error": str(error)}
            if "error" in row["apiserver"][phase]:
                notes.append(f"{window.name} {phase}: {row['apiserver'][phase]['error']}")
                continue
            merged = files[0].parent / f"apiserver-{window.name}-{phase}.pb.gz"
            go = pprof.go_binary()
            if go is not None and keep is not None:  # one file: go tool pprof merges them
                pprof.go_pprof(go, ["-proto", f"-output={merged}"], files)
                _keep(merged, keep, merged.name, row["files"])
    return row


def comparison(out: dict[str, Any]) -> dict[str, Any]:
    """Per size profiled in both: the floor's window to converged against the operator's —
    kube-apiserver's CPU by bucket and requests and watch events, per deployment."""
    result: dict[str, Any] = {}
    for size, operator in (out.get("operator") or {}).items():
        floor = (out.get("floor") or {}).get(size)
        if floor is None:
            continue
        both = {"floor": floor, "operator": operator}
        cpu = {
            who: (row.get("apiserver") or {}).get("to_converged") or {} for who, row in both.items()
        }
        metrics = {
            who: (row.get("metrics_per_deployment") or {}).get("to_converged") or {}
            for who, row in both.items()
        }
        n = int(size)
        result[size] = {
            "apiserver_cpu_ms_per_deployment": {
                who: round(1000 * c["cpu_s"] / n, 2) if "cpu_s" in c else None
                for who, c in cpu.items()
            },
            "apiserver_buckets_ms_per_deployment": _pairs(
                {
                    who: {k: 1000 * v["cpu_s"] / n for k, v in (c.get("buckets") or {}).items()}
                    for who, c in cpu.items()
                }
            ),
            "apiserver_by_request_ms_per_deployment": _pairs(
                {
                    who: {k: 1000 * v["cpu_s"] / n for k, v in (c.get("by_request") or {}).items()}
                    for who, c in cpu.items()
                }
            ),
            "requests_per_deployment": _pairs(
                {w: m.get("requests", {}) for w, m in metrics.items()}
            ),
            "watch_events_per_deployment": _pairs(
                {w: m.get("watch_events", {}) for w, m in metrics.items()}
            ),
        }
    return result


def _pairs(values: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """{key: {"floor": x, "operator": y, "extra": y - x}}, the largest extra first."""
    keys = set(values.get("floor", {})) | set(values.get("operator", {}))
    rows = {}
    for key in keys:
        floor, operator = (
            values.get("floor", {}).get(key, 0.0),
            values.get("operator", {}).get(key, 0.0),
        )
        rows[key] = {
            "floor": round(floor, 3),
            "operator": round(operator, 3),
            "extra": round(operator - floor, 3),
        }
    return dict(sorted(rows.items(), key=lambda item: -abs(item[1]["extra"])))


def print_section(results: dict[str, Any], top: int = 10) -> None:
    """The profiles' short form after the table: per size, the operator's buckets and top
    functions, and kube-apiserver's CPU and requests, the floor's window against the
    operator's (to converged)."""
    profiles = results.get("profiles")
    if not profiles:
        return
    windows = [
        (who, size, row)
        for who in ("operator", LOADED)
        for size, row in (profiles.get(who) or {}).items()
    ]
    for who, size, row in windows:
        for phase, spy in (row.get("operator") or {}).items():
            print(f"\nprofile, {who} (py-spy), N={size}, {phase}:", end=" ")
            if "error" in spy:
                print(spy["error"])
                continue
            print(
                f"{spy['samples']} samples over {spy['window_s']} s, busy {spy['busy_percent']} %"
            )
            print("  by purpose: " + ", ".join(
                f"{name} {b['percent']} %" for name, b in spy["buckets"].items() if b["percent"]
            ))  # fmt: skip
            for title, key in (("self", "top_self"), ("inclusive", "top_inclusive")):
                print(f"  top {top} by {title} samples:")
                rows = [r for r in spy[key] if not _ROOTS.search(r["function"])]
                for r in rows[:top]:
                    print(f"    {r['percent']:5.1f} %  {r['function']}")
    for size, both in (profiles.get("comparison") or {}).items():
        cpu = both["apiserver_cpu_ms_per_deployment"]
        print(f"\nprofile, kube-apiserver, N={size}, to converged, ms of CPU per deployment: "
              f"floor {cpu['floor']}, operator {cpu['operator']}")  # fmt: skip
        for title, key in _COMPARED:
            print(f"  {title} (floor → operator):")
            for name, r in list(both[key].items())[:top]:
                print(f"    {r['floor']:9.2f} → {r['operator']:9.2f}  {name}")
        window = ((profiles.get("operator") or {}).get(size) or {}).get("apiserver") or {}
        flat = (window.get("to_converged") or {}).get("top_flat") or []
        print(f"  top {top} functions (flat), operator window:")
        for r in flat[:top]:
            print(f"    {r['flat_percent']:5.1f} %  {r['function']}")
    for note in profiles.get("notes") or []:
        print(f"profile note: {note}")
