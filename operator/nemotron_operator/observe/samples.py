"""Read one vLLM /metrics exposition into a ``PodSample``: the series the operator uses.

vLLM labels every series with ``model_name`` and ``engine`` (one engine per data-parallel rank);
a pod's figure is the sum over its engines. prometheus_client's own parser reads the series the
operator uses, so their exposition format (escaping, ``_created`` samples, histograms) is handled
as Prometheus does. The other ~90 % of a vLLM exposition (a dozen latency histograms) is checked
only for the shape of a sample line and never parsed: parsing it all cost 16 ms per pod, more than
half of the operator's idle CPU at 1,000 pods scraped every 30 s (docs/benchmarks.md).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

# vLLM 0.31 series (docs/model-facts.md §4; vllm/v1/metrics/loggers.py, v1/spec_decode/metrics.py).
GENERATION_TOKENS = "vllm:generation_tokens"
PROMPT_TOKENS = "vllm:prompt_tokens"
REQUESTS_RUNNING = "vllm:num_requests_running"
REQUESTS_WAITING = "vllm:num_requests_waiting"
KV_CACHE_USAGE = "vllm:kv_cache_usage_perc"
SPEC_DRAFTS = "vllm:spec_decode_num_drafts"
SPEC_DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens"
SPEC_ACCEPTED_TOKENS = "vllm:spec_decode_num_accepted_tokens"
TTFT = "vllm:time_to_first_token_seconds"
CACHE_CONFIG_INFO = "vllm:cache_config_info"

COUNTERS = (GENERATION_TOKENS, PROMPT_TOKENS, SPEC_DRAFTS, SPEC_DRAFT_TOKENS, SPEC_ACCEPTED_TOKENS)
GAUGES = (REQUESTS_RUNNING, REQUESTS_WAITING, KV_CACHE_USAGE)
# The vLLM series the operator reads, as exposed (counters with their `_total` suffix): the
# dashboard test and docs/observability.md list exactly these.
USED_SERIES = (
    *(f"{name}_total" for name in COUNTERS),
    *GAUGES,
    f"{TTFT}_bucket",
    CACHE_CONFIG_INFO,
)


class MetricsParseError(ValueError):
    """The text is not Prometheus exposition format."""


# The families behind USED_SERIES, and the suffixes a family's samples may carry.
_FAMILIES = frozenset((*COUNTERS, *GAUGES, TTFT, CACHE_CONFIG_INFO))
_SUFFIXES = frozenset(("total", "created", "bucket"))
# A sample line starts with a metric name (the legacy charset vLLM uses), then labels or a blank.
_SAMPLE_NAME = re.compile(r"[ \t]*([a-zA-Z_:][a-zA-Z0-9_:]*)(?:[{ \t]|$)")


def _used(name: str) -> bool:
    if name in _FAMILIES:
        return True
    family, _, suffix = name.rpartition("_")
    return suffix in _SUFFIXES and family in _FAMILIES


def used_lines(text: str) -> str:
    """The lines of an exposition that belong to the families the operator reads (their samples
    and ``# TYPE`` lines, which decide how prometheus_client names counter samples); every other
    line must still look like a comment, a blank or a sample line, or the text is refused."""
    kept: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line or line.isspace():
            continue
        if line.lstrip().startswith("#"):
            parts = line.split(None, 3)
            if len(parts) > 2 and parts[1] == "TYPE" and _used(parts[2]):
                kept.append(line)
            continue
        match = _SAMPLE_NAME.match(line)
        if match is None:
            raise MetricsParseError(f"not Prometheus text format: line {number}: {line[:60]!r}")
        if _used(match.group(1)):
            kept.append(line)
    kept.append("")
    return "\n".join(kept)


@dataclass(frozen=True)
class CacheConfigInfo:
    """The labels of ``vllm:cache_config_info`` (vLLM's ``CacheConfig.metrics_info()``: every
    CacheConfig field as a string, ``None`` when unset)."""

    labels: Mapping[str, str]

    def integer(self, key: str) -> int | None:
        number = self.number(key)
        return None if number is None else int(number)

    def number(self, key: str) -> float | None:
        """A label as a number; None when absent, "None" or not a finite number."""
        text = self.labels.get(key)
        if text is None:
            return None
        try:
            value = float(text)
        except ValueError:
            return None
        return value if math.isfinite(value) else None


@dataclass(frozen=True)
class PodSample:
    """One pod's series at one moment (``at``: seconds on the caller's clock; ``wall``: the same
    moment in Unix seconds, when the caller gave it — comparable with ``created``)."""

    at: float
    counters: Mapping[str, float]
    # `_created` of each counter (process start), when the exposition has it: a changed value
    # means the counter restarted even if it has already climbed past the old value.
    created: Mapping[str, float]
    gauges: Mapping[str, float]
    # TTFT histogram: cumulative count per upper bound (`le`), summed over engines.
    ttft_buckets: tuple[tuple[float, float], ...] = ()
    cache_config: CacheConfigInfo | None = None
    spec_decode: bool = field(default=False)
    wall: float | None = None


def parse_pod_metrics(text: str, at: float, wall: float | None = None) -> PodSample:
    """Parse one exposition. Series the operator does not use are ignored; missing ones are 0
    (a vLLM without speculative decoding has no spec-decode counters: ``spec_decode`` False)."""
    counters: dict[str, float] = {}
    created: dict[str, float] = {}
    gauges: dict[str, float] = {}
    buckets: dict[float, float] = {}
    cache_config: CacheConfigInfo | None = None
    try:
        families = list(text_string_to_metric_families(used_lines(text)))
    except (ValueError, TypeError, IndexError) as error:
        raise MetricsParseError(f"not Prometheus text format: {error}") from None
    # By sample name, not family: the text format lets a counter's TYPE line name the family with
    # or without `_total`, and prometheus_client writes `_created` as a family of its own.
    counter_of = {f"{name}_total": name for name in COUNTERS}
    created_of = {f"{name}_created": name for name in COUNTERS}
    usage: list[float] = []
    for family in families:
        for sample in family.samples:
            name = sample.name
            if name in counter_of:
                key = counter_of[name]
                counters[key] = counters.get(key, 0.0) + sample.value
            elif name in created_of:
                key = created_of[name]
                created[key] = max(created.get(key, 0.0), sample.value)
            elif name == KV_CACHE_USAGE:
                usage.append(sample.value)  # a fraction of each engine's own pool: the mean
            elif name in GAUGES:
                gauges[name] = gauges.get(name, 0.0) + sample.value
            elif name == f"{TTFT}_bucket":
                bound = float(sample.labels["le"])
                buckets[bound] = buckets.get(bound, 0.0) + sample.value
            elif name == CACHE_CONFIG_INFO and cache_config is None:
                cache_config = CacheConfigInfo(dict(sample.labels))
    if usage:
        gauges[KV_CACHE_USAGE] = sum(usage) / len(usage)
    return PodSample(
        at=at,
        counters=counters,
        created=created,
        gauges=gauges,
        ttft_buckets=tuple(sorted(buckets.items())),
        cache_config=cache_config,
        spec_decode=SPEC_DRAFT_TOKENS in counters,
        wall=wall,
    )
