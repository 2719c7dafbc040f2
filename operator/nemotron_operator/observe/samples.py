"""Read one vLLM /metrics exposition into a ``PodSample``: the series the operator uses.

vLLM labels every series with ``model_name`` and ``engine`` (one engine per data-parallel rank);
a pod's figure is the sum over its engines. The operator reads about 50 of a vLLM exposition's
~400 lines (the other ~90 % are a dozen latency histograms) on every scrape of every pod, so this
is its idle hot path: regular expressions (run in C) find the used lines and check that every
other line has the shape of a comment, a blank or a sample, and only the used lines are split
into name, labels and value, by the text format's grammar (quoted label values with ``\\``,
``\"`` and ``\n`` escapes; an optional timestamp). prometheus_client's parser, used before, cost
1.2 ms of the 1.6 ms a stand-in exposition took; it stays the reference the unit tests compare
this parser with (``tests/unit/observe/test_samples_and_rates.py``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

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


# Every sample name read. A counter's samples may also go without `_total` (the text format lets
# a counter's TYPE line and samples name the family bare); `_created` is the counter's start.
_COUNTER_OF = {
    **{f"{name}_total": name for name in COUNTERS},
    **{name: name for name in COUNTERS},
}
_CREATED_OF = {f"{name}_created": name for name in COUNTERS}
_BUCKET = f"{TTFT}_bucket"
_READ = (*_COUNTER_OF, *_CREATED_OF, *GAUGES, _BUCKET, CACHE_CONFIG_INFO)
_NAME_END = r"(?=[{ \t\r]|$)"
# A line of a used series, after its newline (the text is searched with one put in front: a
# pattern that starts with a literal is searched fast; longest names first, `x_total` before `x`).
_USED_LINE = re.compile(
    r"\n[ \t]*(?:"
    + "|".join(re.escape(name) for name in sorted(_READ, key=len, reverse=True))
    + r")"
    + _NAME_END
    + r"[^\n]*"
)
# Lines that are blank, a comment, or start like a sample (a name, then labels or a blank).
_LINE_SHAPE = r"[ \t\r]*(?:#[^\n]*|[a-zA-Z_:][a-zA-Z0-9_:]*(?:[{ \t\r][^\n]*)?)?"
_SHAPED_LINES = re.compile(f"(?:{_LINE_SHAPE}\n)*")
_SHAPED_LAST_LINE = re.compile(_LINE_SHAPE)
_QUOTED = r'"(?:[^"\\\n]|\\.)*"'
_LABEL_PAIR = r"[ \t]*([a-zA-Z_][a-zA-Z0-9_]*)[ \t]*=[ \t]*(" + _QUOTED + r")[ \t]*"
# A sample line: a name, optional labels (pairs, comma-separated, a trailing comma allowed), a
# value, an optional timestamp.
_SAMPLE = re.compile(
    r"[ \t]*(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)"
    rf"(?:\{{(?P<labels>(?:{_LABEL_PAIR}(?:,{_LABEL_PAIR})*,?)?[ \t]*)\}})?"
    r"[ \t]+(?P<value>[^ \t\r\n]+)(?:[ \t]+-?[0-9]+)?[ \t\r]*"
)
_LABEL = re.compile(_LABEL_PAIR)
_ESCAPE = re.compile(r"\\(.)")
_UNESCAPED = {"n": "\n", "\\": "\\", '"': '"'}


def _refuse(text: str, position: int, line: str) -> MetricsParseError:
    number = text.count("\n", 0, position) + 1
    return MetricsParseError(f"not Prometheus text format: line {number}: {line[:60]!r}")


def labels_of(text: str) -> dict[str, str]:
    """The label pairs of a sample line ``used_samples`` accepted, with their escapes undone."""
    return {
        match.group(1): _ESCAPE.sub(
            lambda escape: _UNESCAPED.get(escape.group(1), escape.group(0)), match.group(2)[1:-1]
        )
        for match in _LABEL.finditer(text)
    }


def used_samples(text: str) -> list[tuple[str, str, float]]:
    """``(name, label text, value)`` of each sample of a used series, in order; every other line
    must still look like a comment, a blank or a sample line, or the text is refused."""
    shaped = _SHAPED_LINES.match(text)
    end = shaped.end() if shaped is not None else 0
    if end < len(text) and _SHAPED_LAST_LINE.fullmatch(text, end) is None:
        raise _refuse(text, end, text[end:].split("\n", 1)[0])
    found = []
    for line in _USED_LINE.finditer("\n" + text):  # line.start(): the line's offset in text
        sample = _SAMPLE.fullmatch(line.group(0), 1)
        if sample is None:
            raise _refuse(text, line.start(), line.group(0)[1:])
        try:
            value = float(sample.group("value"))
        except ValueError:
            raise _refuse(text, line.start(), line.group(0)[1:]) from None
        found.append((sample.group("name"), sample.group("labels") or "", value))
    return found


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
    """One pod's series at one moment (``at``: seconds on the caller's clock)."""

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


def parse_pod_metrics(text: str, at: float) -> PodSample:
    """Parse one exposition. Series the operator does not use are ignored; missing ones are 0
    (a vLLM without speculative decoding has no spec-decode counters: ``spec_decode`` False)."""
    counters: dict[str, float] = {}
    created: dict[str, float] = {}
    gauges: dict[str, float] = {}
    buckets: dict[float, float] = {}
    cache_config: CacheConfigInfo | None = None
    usage: list[float] = []
    for name, label_text, value in used_samples(text):
        if name in _COUNTER_OF:
            key = _COUNTER_OF[name]
            counters[key] = counters.get(key, 0.0) + value
        elif name in _CREATED_OF:
            key = _CREATED_OF[name]
            created[key] = max(created.get(key, 0.0), value)
        elif name == KV_CACHE_USAGE:
            usage.append(value)  # a fraction of each engine's own pool: the mean
        elif name in GAUGES:
            gauges[name] = gauges.get(name, 0.0) + value
        elif name == _BUCKET:
            le = labels_of(label_text).get("le")
            if le is None:
                raise MetricsParseError(f"not Prometheus text format: {name} without `le`")
            try:
                bound = float(le)
            except ValueError:
                raise MetricsParseError(f"not Prometheus text format: le={le!r}") from None
            buckets[bound] = buckets.get(bound, 0.0) + value
        elif name == CACHE_CONFIG_INFO and cache_config is None:
            cache_config = CacheConfigInfo(labels_of(label_text))
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
    )
