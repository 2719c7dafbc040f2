"""What the server side saw and ran: kube-apiserver's own request counter, and versions.

``apiserver_request_total`` (kube-apiserver's /metrics) counts every client's requests — the
operator's, the control plane's controllers', the simulated kubelets' and this benchmark's; the
fault proxy's ``/_sim/request-counts`` counts per client but only those that go through it.
An audit log (should the simulated control plane get one) would attribute per user: see
``AUDIT_HOOK``.
"""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

METRIC = "apiserver_request_total"
_SAMPLE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>.*)\})?\s+(?P<value>\S+)")
_LABEL = re.compile(r'(?P<key>[a-zA-Z_][a-zA-Z0-9_]*)="(?P<value>(?:[^"\\]|\\.)*)"')
# Where a future audit log's per-user counts would plug in: a callable taking the window's
# start and end (wall-clock seconds) and returning {"verb resource": count}. None today: the
# simulated control plane writes no audit log, so the figures come from the metrics.
AUDIT_HOOK = None


def _samples(text: str, metric: str) -> Iterator[tuple[dict[str, str], float]]:
    """The labels and value of each sample of ``metric`` in Prometheus' text format."""
    for line in text.splitlines():
        if not line.startswith(metric):
            continue
        found = _SAMPLE.match(line)
        if found is None or found["name"] != metric:
            continue
        labels = {m["key"]: m["value"] for m in _LABEL.finditer(found["labels"] or "")}
        yield labels, float(found["value"])


def _request_key(labels: dict[str, str]) -> str:
    resource, sub = labels.get("resource") or "", labels.get("subresource") or ""
    if not resource:  # a non-resource request: its path is in subresource (/metrics)
        resource = sub or "-"
    elif sub:
        resource += "/" + sub
    return f"{labels.get('verb', '?')} {resource}"


def _watch_key(labels: dict[str, str]) -> str:
    """``kind`` (``resource`` in newer releases), with its group when it has one."""
    kind = labels.get("kind") or labels.get("resource") or "?"
    group = labels.get("group") or ""
    return f"{kind}.{group}" if group else kind


def sums(text: str, metric: str, key: Callable[[dict[str, str]], str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for labels, value in _samples(text, metric):
        name = key(labels)
        out[name] = out.get(name, 0.0) + value
    return out


def request_totals(text: str) -> dict[str, float]:
    """``apiserver_request_total`` summed by ``"VERB resource[/subresource]"`` (``"VERB /path"``
    for non-resource requests such as /metrics itself), over every code, scope and component."""
    return sums(text, METRIC, _request_key)


# What a profiled window reads from kube-apiserver's /metrics (opbench.profile), and the key
# of each: requests and their summed latency by verb and resource, watch events sent (and their
# bytes, where the release has the histogram) by kind.
WINDOW_METRICS = {
    "requests": ("apiserver_request_total", _request_key),
    "request_seconds": ("apiserver_request_duration_seconds_sum", _request_key),
    "watch_events": ("apiserver_watch_events_total", _watch_key),
    "watch_event_bytes": ("apiserver_watch_events_sizes_sum", _watch_key),
}


def window_metrics(text: str) -> dict[str, dict[str, float]]:
    return {name: sums(text, metric, key) for name, (metric, key) in WINDOW_METRICS.items()}


def window_difference(
    before: dict[str, dict[str, float]], after: dict[str, dict[str, float]], per: int = 1
) -> dict[str, dict[str, float]]:
    """Each metric's rows that moved between two scrapes, divided by ``per`` (deployments);
    the largest first."""
    out: dict[str, dict[str, float]] = {}
    for name, rows in after.items():
        moved = {k: v - before.get(name, {}).get(k, 0.0) for k, v in rows.items()}
        out[name] = {
            k: round(v / per, 4)
            for k, v in sorted(moved.items(), key=lambda item: -item[1])
            if abs(v) > 1e-9
        }
    return out


def difference(before: dict[str, float], after: dict[str, float]) -> dict[str, int]:
    """What was counted between two scrapes (rows that did not move left out)."""
    out = {k: round(v - before.get(k, 0.0)) for k, v in after.items()}
    return {k: v for k, v in sorted(out.items()) if v}


def per_second(counts: dict[str, int], seconds: float) -> dict[str, float]:
    return {k: round(v / seconds, 3) for k, v in counts.items()} if seconds > 0 else {}


def without_leases_and_watches(counts: dict[str, int]) -> dict[str, int]:
    """Rows other than Lease renewals, watches and non-resource requests (the scrapes of
    /metrics itself, health checks)."""
    out = {}
    for key, value in counts.items():
        verb, resource = key.split(" ", 1)
        if verb != "WATCH" and resource != "leases" and not resource.startswith(("/", "-")):
            out[key] = value
    return out


def binary_version(executable: Path) -> str:
    """``<binary> --version``'s first line (etcd prints ``etcd Version: 3.x.y``)."""
    try:
        done = subprocess.run(
            [str(executable), "--version"], capture_output=True, text=True, timeout=20,
            check=False,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError) as error:
        return f"unknown ({error})"
    lines = (done.stdout or done.stderr).strip().splitlines()
    return lines[0].strip() if lines else "unknown"


def vllm_stand_in_version(env: dict[str, str]) -> str:
    """The simulator's stand-in vLLM's ``--version`` (run as its pods run it)."""
    try:
        done = subprocess.run(
            [sys.executable, "-m", "nemotron_sim.vllm", "--version"],
            capture_output=True, text=True, timeout=60, env=env, check=False,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError) as error:
        return f"unknown ({error})"
    lines = done.stdout.strip().splitlines()
    return lines[-1] if lines else "unknown"


def package_version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def versions(apiserver: dict[str, Any], etcd: str, vllm: str) -> dict[str, Any]:
    return {
        "kube_apiserver": apiserver.get("gitVersion"),
        "kube_apiserver_go": apiserver.get("goVersion"),
        "etcd": etcd,
        "vllm_stand_in": vllm,
        "kopf": package_version("kopf"),
        "kubernetes_client": package_version("kubernetes"),
        "python": sys.version.split()[0],
    }
