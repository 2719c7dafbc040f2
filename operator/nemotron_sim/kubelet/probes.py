"""Container probes as the kubelet runs them: ``httpGet``, ``tcpSocket`` and ``grpc`` (the
standard health service, grpc_probe.py) against the pod IP.

Timing follows the probe's fields (defaults: period 10 s, timeout 1 s, failureThreshold 3,
successThreshold 1, no initial delay); delays and periods are multiplied by a cluster-level
``time_scale`` so tests can run real probe specs quickly (timeouts are not: on a busy machine a
shortened timeout would fail healthy processes). ``exec`` probes are not run (a Warning event
says so, and they count as succeeding). Failure messages are the kubelet's.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp

from nemotron_sim.kubelet.grpc_probe import grpc_probe


def resolve_port(port: Any, container: Mapping[str, Any]) -> int | None:
    """A probe's port: a number, or the name of one of the container's ports."""
    if isinstance(port, int):
        return port
    if isinstance(port, str) and port.isdigit():
        return int(port)
    for declared in container.get("ports") or []:
        if declared.get("name") == port:
            return int(declared["containerPort"])
    return None


@dataclass(frozen=True)
class ProbeSpec:
    kind: str  # "http", "tcp", "grpc" or "unsupported"
    port: int | None
    path: str
    scheme: str
    headers: tuple[tuple[str, str], ...]
    initial_delay: float
    period: float
    timeout: float
    success_threshold: int
    failure_threshold: int
    grace: int | None  # the probe's terminationGracePeriodSeconds (liveness/startup)
    service: str = ""  # a grpc probe's service name

    @classmethod
    def parse(
        cls, probe: Mapping[str, Any] | None, container: Mapping[str, Any], time_scale: float
    ) -> ProbeSpec | None:
        if not probe:
            return None
        if probe.get("httpGet"):
            http = probe["httpGet"]
            kind, port = "http", resolve_port(http.get("port"), container)
            path, scheme = str(http.get("path") or "/"), str(http.get("scheme") or "HTTP").lower()
            headers = tuple(
                (h.get("name", ""), h.get("value", "")) for h in http.get("httpHeaders") or []
            )
        elif probe.get("tcpSocket"):
            kind, port = "tcp", resolve_port(probe["tcpSocket"].get("port"), container)
            path, scheme, headers = "", "", ()
        elif probe.get("grpc"):
            kind, port = "grpc", resolve_port(probe["grpc"].get("port"), container)
            path, scheme, headers = "", "", ()
        else:
            kind, port, path, scheme, headers = "unsupported", None, "", "", ()
        grace = probe.get("terminationGracePeriodSeconds")
        return cls(
            kind=kind,
            port=port,
            path=path,
            scheme=scheme,
            headers=headers,
            initial_delay=float(probe.get("initialDelaySeconds", 0)) * time_scale,
            period=float(probe.get("periodSeconds", 10)) * time_scale,
            timeout=float(probe.get("timeoutSeconds", 1)),
            success_threshold=int(probe.get("successThreshold", 1)),
            failure_threshold=int(probe.get("failureThreshold", 3)),
            grace=None if grace is None else int(grace),
            service=str((probe.get("grpc") or {}).get("service") or ""),
        )


@dataclass
class ProbeCounter:
    """Consecutive results against the thresholds; ``result`` is the probe's current verdict."""

    success_threshold: int
    failure_threshold: int
    result: bool
    _successes: int = 0
    _failures: int = 0

    def record(self, ok: bool) -> bool | None:
        """Count one outcome; the new verdict when it changes, else None."""
        if ok:
            self._successes, self._failures = self._successes + 1, 0
            if not self.result and self._successes >= self.success_threshold:
                self.result = True
                return True
        else:
            self._failures, self._successes = self._failures + 1, 0
            if self.result and self._failures >= self.failure_threshold:
                self.result = False
                return False
        return None


async def probe_once(
    spec: ProbeSpec, host: str, session: aiohttp.ClientSession
) -> tuple[bool, str]:
    """(success, failure message as the kubelet words it)."""
    if spec.kind == "unsupported" or spec.port is None:
        return True, ""
    if spec.kind == "tcp":
        return await _tcp(spec, host, spec.port)
    if spec.kind == "grpc":
        return await grpc_probe(host, spec.port, spec.service, spec.timeout)
    return await _http(spec, host, spec.port, session)


async def _tcp(spec: ProbeSpec, host: str, port: int) -> tuple[bool, str]:
    address = f"{host}:{port}"
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), spec.timeout)
    except TimeoutError:
        return False, f"dial tcp {address}: i/o timeout"
    except OSError as error:
        return False, f"dial tcp {address}: connect: {_reason(error)}"
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True, ""


async def _http(
    spec: ProbeSpec, host: str, port: int, session: aiohttp.ClientSession
) -> tuple[bool, str]:
    url = f"{spec.scheme}://{host}:{port}{spec.path}"
    try:
        async with session.get(
            url,
            headers=dict(spec.headers) or None,
            timeout=aiohttp.ClientTimeout(total=spec.timeout),
            allow_redirects=False,
            # The kubelet does not verify an HTTPS probe's certificate (Kubernetes' probe docs:
            # "the kubelet sends an HTTPS request skipping the certificate verification").
            ssl=spec.scheme != "https",
        ) as response:
            status = response.status
    except TimeoutError:
        return False, (
            f'Get "{url}": context deadline exceeded (Client.Timeout exceeded while awaiting '
            "headers)"
        )
    except aiohttp.ClientConnectorError as error:
        reason = _reason(error.os_error)
        return False, f'Get "{url}": dial tcp {host}:{port}: connect: {reason}'
    except (aiohttp.ClientError, OSError) as error:
        return False, f'Get "{url}": {error}'
    if 200 <= status < 400:
        return True, ""
    return False, f"HTTP probe failed with statuscode: {status}"


def _reason(error: OSError) -> str:
    """Go's wording of a failed connect."""
    if error.errno == errno.ECONNREFUSED or "refused" in str(error).lower():
        return "connection refused"
    return (error.strerror or str(error)).lower()
