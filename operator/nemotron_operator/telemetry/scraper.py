"""Scrape the serving pods' vLLM ``/metrics``: a short timeout each, bounded concurrency, and a
pod that does not answer reported by name, never holding up the others."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import aiohttp

from nemotron_operator.observe.samples import MetricsParseError, PodSample, parse_pod_metrics

DEFAULT_TIMEOUT_SECONDS = 2.0
DEFAULT_CONCURRENCY = 16
_MAX_BODY_BYTES = 4 * 2**20  # a vLLM exposition is tens of KiB; refuse anything absurd


@dataclass(frozen=True)
class ScrapeTarget:
    key: str  # the pod's uid: a replaced pod is a new target (its counters start again)
    pod: str  # the pod's name, for reports
    url: str  # http://<pod IP>:<port>/metrics


@dataclass
class ScrapeResult:
    samples: dict[str, PodSample] = field(default_factory=dict)  # by target key
    pods: dict[str, str] = field(default_factory=dict)  # key → pod name, for every answer
    failures: dict[str, str] = field(default_factory=dict)  # pod name → what went wrong

    def outcome(self, pod: str) -> str:
        reason = self.failures.get(pod)
        if reason is None:
            return "ok"
        return "timeout" if reason.startswith("timeout") else "error"


async def scrape_pods(
    session: aiohttp.ClientSession,
    targets: Sequence[ScrapeTarget],
    *,
    clock: Callable[[], float],
    per_pod_timeout: float = DEFAULT_TIMEOUT_SECONDS,
    concurrency: int = DEFAULT_CONCURRENCY,
) -> ScrapeResult:
    """Every target once; ``clock`` stamps each sample when its answer arrived."""
    result = ScrapeResult()
    slots = asyncio.Semaphore(max(1, concurrency))
    client_timeout = aiohttp.ClientTimeout(total=per_pod_timeout)

    async def one(target: ScrapeTarget) -> None:
        async with slots:
            try:
                async with session.get(target.url, timeout=client_timeout) as response:
                    if response.status != 200:
                        result.failures[target.pod] = f"HTTP {response.status}"
                        return
                    # StreamReader.read(n) returns what has arrived, up to n bytes: a body of
                    # several TCP segments must be read to its end, or it is cut mid-line.
                    body = bytearray()
                    async for chunk in response.content.iter_chunked(2**16):
                        body += chunk
                        if len(body) > _MAX_BODY_BYTES:
                            raise MetricsParseError(f"a /metrics body over {_MAX_BODY_BYTES} bytes")
                    at = clock()
                sample = parse_pod_metrics(body.decode("utf-8", "replace"), at)
            except TimeoutError:
                result.failures[target.pod] = f"timeout after {per_pod_timeout:g}s"
            except aiohttp.ClientError as error:
                result.failures[target.pod] = f"unreachable: {type(error).__name__}"
            except MetricsParseError as error:
                result.failures[target.pod] = str(error)
            else:
                result.samples[target.key] = sample
                result.pods[target.key] = target.pod

    await asyncio.gather(*(one(target) for target in targets))
    return result
