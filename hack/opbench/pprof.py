"""kube-apiserver's CPU profile over a window: Go's pprof, read with ``go tool pprof``.

The simulated cluster runs kube-apiserver with ``--profiling=true`` when the benchmark profiles
(``python -m sim_cluster --apiserver-profiling``). A CPU profile covers a fixed time
(``/debug/pprof/profile?seconds=S``; kube-apiserver serves it as a long-running request, so no
request timeout cuts it) and only one can run at a time, so a window is covered by back-to-back
profiles of ``CHUNK_SECONDS`` from its start until it ends (the last one runs past the end by
less than a chunk); ``go tool pprof`` merges the files of a window. The admin credentials of
the simulated cluster may read /debug/pprof (system:masters).

Read: ``go tool pprof -top -nodecount=30`` (flat, the function running) and ``-top -cum``
(inclusive), and ``-traces`` (every sampled stack) for the buckets (opbench.stacks). Without a
``go`` on PATH (or in /usr/local/go/bin) the profiles are kept and the summary says so.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

from opbench.procs import Endpoint
from opbench.stacks import Bucket, Stack, summarise

CHUNK_SECONDS = 10
_GO = Path("/usr/local/go/bin/go")

# The watch cache's own work and the fan-out to watchers. Not the whole cacher package: its
# CacheDelegator is the path of every GET, LIST and update (GuaranteedUpdate) since 1.33.
_WATCH = (
    r"^k8s\.io/apiserver/pkg/storage/cacher\.\(\*(Cacher|cacheWatcher|watchCache|cachingObject)\)",
    r"^k8s\.io/apiserver/pkg/storage/cacher/store",
    r"^k8s\.io/apiserver/pkg/endpoints/handlers\.(handleWatch|serveWatch)",
    r"^k8s\.io/apiserver/pkg/endpoints/handlers\.\(\*(WatchServer|watchEncoder|watchEmbeddedEncoder)\)",
)
_HANDLERS = r"^k8s\.io/apiserver/pkg/endpoints/handlers\."
_GC = r"^runtime\.(gcBgMarkWorker|bgsweep|bgscavenge)"

# What kube-apiserver's CPU did, tried in this order (opbench.stacks: the first match wins).
WORK_BUCKETS = (
    Bucket.of("watch cache and fan-out (its encoding included)", *_WATCH),
    Bucket.of(
        "apply and managedFields",
        r"^k8s\.io/apiserver/pkg/endpoints/handlers/fieldmanager",
        r"^k8s\.io/apimachinery/pkg/util/managedfields",
        r"^sigs\.k8s\.io/structured-merge-diff",
    ),
    Bucket.of(
        "admission",
        r"^k8s\.io/apiserver/pkg/admission",
        r"^k8s\.io/kubernetes/plugin/pkg/admission",
    ),
    Bucket.of(
        "CRD schema validation and CEL",
        r"^k8s\.io/apiextensions-apiserver/pkg/apiserver/schema",
        r"^k8s\.io/apiextensions-apiserver/pkg/apiserver/validation",
        r"^k8s\.io/kube-openapi/pkg/validation",
        r"^github\.com/google/cel-go",
        r"^k8s\.io/apiserver/pkg/cel",
    ),
    Bucket.of(
        "authentication and authorization",
        r"^k8s\.io/apiserver/pkg/authentication",
        r"^k8s\.io/apiserver/pkg/authorization",
        r"^k8s\.io/kubernetes/plugin/pkg/auth",
        r"^k8s\.io/kubernetes/pkg/kubeapiserver/authorizer",
    ),
    Bucket.of("audit log", r"^k8s\.io/apiserver/pkg/audit", r"^k8s\.io/apiserver/plugin/pkg/audit"),
    Bucket.of(
        "serialization (JSON, protobuf, conversion)",
        r"^encoding/json",
        r"^sigs\.k8s\.io/json",
        r"^k8s\.io/apimachinery/pkg/runtime",
        r"^k8s\.io/apimachinery/pkg/apis/meta/v1/unstructured",
        r"^k8s\.io/apimachinery/pkg/conversion",
        r"^github\.com/gogo/protobuf",
        r"^google\.golang\.org/protobuf",
    ),
    Bucket.of(
        "etcd (client and storage)", r"^go\.etcd\.io/", r"^k8s\.io/apiserver/pkg/storage/etcd3"
    ),
    Bucket.of(
        "metrics (its /metrics, observations)",
        r"^github\.com/prometheus/",
        r"^k8s\.io/component-base/metrics",
    ),
    Bucket.of(
        "HTTP/2, TLS and network",
        r"^golang\.org/x/net/http2",
        r"^net/http\.\(\*http2",
        r"^crypto/",
        r"^internal/poll",
        r"^syscall\.",
    ),
    Bucket.of("Go GC (background)", _GC),
)

# The same samples by the request handler they ran under (a handler's work runs in a goroutine
# of finisher.finishRequest, under the handler's own functions), then the filters before it.
REQUEST_BUCKETS = (
    Bucket.of("watch", *_WATCH),
    Bucket.of("create", _HANDLERS + r"(CreateResource|createHandler|\(\*namedCreaterAdapter\))"),
    Bucket.of(
        "patch and apply",
        _HANDLERS + r"(PatchResource|strategicPatchObject)",
        _HANDLERS + r"\(\*(patcher|jsonPatcher|smpPatcher|applyPatcher)\)",
    ),
    Bucket.of("update", _HANDLERS + r"UpdateResource"),
    Bucket.of("delete", _HANDLERS + r"(DeleteResource|DeleteCollection)"),
    Bucket.of("get", _HANDLERS + r"(GetResource|getResourceHandler)"),
    Bucket.of("list", _HANDLERS + r"ListResource"),
    Bucket.of(
        "filters before a handler (authentication, audit, priority and fairness)",
        r"^k8s\.io/apiserver/pkg/endpoints/filters",
        r"^k8s\.io/apiserver/pkg/server/filters",
    ),
    Bucket.of(
        "etcd and storage (background)", r"^go\.etcd\.io/", r"^k8s\.io/apiserver/pkg/storage"
    ),
    Bucket.of("Go GC (background)", _GC),
)

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "mins": 60.0, "hrs": 3600.0}
_DURATION = re.compile(r"^(?P<value>[0-9.]+)(?P<unit>ns|us|µs|ms|s|mins|hrs)?$")
_HEADER = re.compile(r"Duration: (?P<duration>\S+), Total samples = (?P<total>\S+)")


def seconds(text: str) -> float:
    """pprof's scaled durations: ``870ms``, ``1.50s``, ``2.10mins``, ``0``."""
    found = _DURATION.match(text.strip())
    if found is None:
        raise ValueError(f"not a pprof duration: {text!r}")
    return float(found["value"]) * _UNITS[found["unit"] or "s"]


def parse_header(text: str) -> dict[str, float]:
    found = _HEADER.search(text)
    if found is None:
        return {}
    return {"duration_s": seconds(found["duration"]), "cpu_s": seconds(found["total"])}


def parse_top(text: str) -> list[dict[str, Any]]:
    """The rows of ``go tool pprof -top``: flat, flat%, sum%, cum, cum%, function."""
    rows: list[dict[str, Any]] = []
    in_table = False
    for line in text.splitlines():
        fields = line.split(None, 5)
        if fields[:2] == ["flat", "flat%"]:
            in_table = True
            continue
        if not in_table or len(fields) < 6:
            continue
        flat, flat_pct, _, cum, cum_pct, function = fields
        rows.append({
            "function": function.removesuffix(" (inline)"),
            "flat_s": round(seconds(flat), 3),
            "flat_percent": float(flat_pct.rstrip("%")),
            "cum_s": round(seconds(cum), 3),
            "cum_percent": float(cum_pct.rstrip("%")),
        })  # fmt: skip
    return rows


def parse_traces(text: str) -> list[tuple[Stack, float]]:
    """``go tool pprof -traces``: blocks between ``-----+-----`` lines, each a value and the
    running function on its first line, then its callers (leaf first); label lines (``key:
    value`` before the stack) are skipped. Stacks come back root first."""
    out: list[tuple[Stack, float]] = []
    value: float | None = None
    frames: list[str] = []

    def flush() -> None:
        if value is not None and frames:
            out.append((tuple(reversed(frames)), value))

    for line in text.splitlines():
        if line.startswith("-----"):
            flush()
            value, frames = None, []
            continue
        if not line.strip():
            continue
        if value is None:
            head = line.split(None, 1)
            if len(head) == 2 and _DURATION.match(head[0]) and not head[1].endswith(":"):
                value = seconds(head[0])
                frames = [head[1].strip().removesuffix(" (inline)")]
            continue
        frames.append(line.strip().removesuffix(" (inline)"))
    flush()
    return out


def go_binary() -> str | None:
    found = shutil.which("go")
    return found or (str(_GO) if _GO.exists() else None)


def go_pprof(go: str, args: list[str], files: list[Path]) -> str:
    # GOTOOLCHAIN=local: never try to fetch another toolchain (the benchmark's network
    # namespace has no route out); pprof reads the files offline (they carry symbol names).
    env = {**os.environ, "GOTOOLCHAIN": "local"}
    done = subprocess.run(
        [go, "tool", "pprof", *args, *map(str, files)], capture_output=True, text=True,
        timeout=300, env=env, cwd=files[0].parent, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"go tool pprof {' '.join(args)}: {done.stderr.strip()[:300]}")
    return done.stdout


def summary(files: list[Path], top: int = 30) -> dict[str, Any]:
    """The window's merged profile: CPU seconds sampled, top functions (flat and cum), and the
    buckets by work and by request handler."""
    go = go_binary()
    if go is None:
        return {"error": "go is not installed: the profiles were taken, not analysed"}
    listing = go_pprof(go, ["-top", f"-nodecount={top}"], files)
    stacks = parse_traces(go_pprof(go, ["-traces"], files))
    by_work = summarise(stacks, WORK_BUCKETS, top=0, unit="cpu_s")
    by_request = summarise(stacks, REQUEST_BUCKETS, top=0, unit="cpu_s")
    return {
        **parse_header(listing),
        "profiles": len(files),
        "top_flat": parse_top(listing),
        "top_cum": parse_top(go_pprof(go, ["-top", "-cum", f"-nodecount={top}"], files)),
        "buckets": by_work["buckets"],
        "by_request": by_request["buckets"],
    }


def fetch(api: Endpoint, seconds_: int) -> bytes:
    """One CPU profile of ``seconds_`` from kube-apiserver (blocks that long)."""
    # S310: the URL is the simulated cluster's https server, from its kubeconfig.
    request = urllib.request.Request(  # noqa: S310
        f"{api.url}/debug/pprof/profile?seconds={seconds_}",
        headers={"Authorization": f"Bearer {api.token}"},
    )
    context = api.ssl_context()
    with urllib.request.urlopen(request, context=context, timeout=seconds_ + 60) as r:  # noqa: S310
        data: bytes = r.read()
        return data


class ApiserverProfiler:
    """Back-to-back CPU profiles from :meth:`start` until :meth:`stop`; each file is labelled
    with the phase that was current when it started (:meth:`phase`)."""

    def __init__(self, api: Endpoint, directory: Path, name: str) -> None:
        self.api, self.directory, self.name = api, directory, name
        self.current = "to_converged"
        self.files: dict[str, list[Path]] = {}
        self.error: str | None = None
        self._stopping = False
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._loop())

    def phase(self, name: str) -> None:
        self.current = name

    async def _loop(self) -> None:
        index = 0
        while not self._stopping:
            phase, started = self.current, time.monotonic()
            try:
                data = await asyncio.to_thread(fetch, self.api, CHUNK_SECONDS)
            except (OSError, ValueError) as error:
                self.error = f"/debug/pprof/profile: {error}"
                return
            path = self.directory / f"{self.name}-{phase}-{index:03d}.pb.gz"
            path.write_bytes(data)
            self.files.setdefault(phase, []).append(path)
            index += 1
            if time.monotonic() - started < 1.0:  # answered at once: not profiling
                self.error = f"/debug/pprof/profile answered in under a second ({len(data)} bytes)"
                return

    async def stop(self) -> None:
        """After the profile in flight (at most CHUNK_SECONDS)."""
        self._stopping = True
        if self._task is not None:
            await self._task
