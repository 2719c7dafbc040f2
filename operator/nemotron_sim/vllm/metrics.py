"""The stand-in's Prometheus metrics: vLLM's names, types, labels and buckets.

Names, help texts and bucket boundaries follow vLLM's `v1/metrics/loggers.py` and
`v1/spec_decode/metrics.py` (see docs/model-facts.md §4). prometheus_client
appends `_total` to counters, so `Counter("vllm:prompt_tokens")` is exposed as
`vllm:prompt_tokens_total`, exactly as vLLM's own server does. One CollectorRegistry per stand-in:
many stand-ins in one process keep independent numbers.
"""

from __future__ import annotations

import time

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

LABELS = ("model_name", "engine")
ENGINE_INDEX = "0"  # one engine core per server: no data parallelism inside the stand-in
FINISH_REASONS = ("stop", "length", "abort")

# Bucket boundaries copied from vLLM's loggers.py.
_TTFT_BUCKETS = (
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
    20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
)  # fmt: skip
_PER_TOKEN_BUCKETS = (
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
    20.0, 40.0, 80.0,
)  # fmt: skip
_REQUEST_LATENCY_BUCKETS = (
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0,
    240.0, 480.0, 960.0, 1920.0, 7680.0,
)  # fmt: skip
_ITERATION_TOKEN_BUCKETS = (1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
_N_BUCKETS = (1, 2, 5, 10, 20)


def one_two_five_buckets(max_value: int) -> tuple[float, ...]:
    """vLLM's `build_1_2_5_buckets`: 1, 2, 5, 10, 20, 50, ... up to `max_value`."""
    buckets: list[float] = []
    scale = 1
    while True:
        for mantissa in (1, 2, 5):
            if mantissa * scale > max_value:
                return tuple(buckets)
            buckets.append(mantissa * scale)
        scale *= 10


class VllmMetrics:
    """The series a vLLM server exposes, bound to one model name and engine 0."""

    def __init__(
        self,
        model_name: str,
        *,
        max_model_len: int,
        spec_tokens: int,
        created: float | None = None,
    ) -> None:
        """``created``: the time the counters and histograms report as their ``_created``
        (when they are built later than the server they belong to); now if not given."""
        self.registry = CollectorRegistry(auto_describe=True)
        self._timed: list[Counter | Histogram] = []  # the series with a `_created` sample
        self._exposition: bytes | None = None
        self.cache_config_published = False
        self.model_name = model_name
        self.num_requests_running = self._gauge(
            "vllm:num_requests_running", "Number of requests in model execution batches."
        )
        self.num_requests_waiting = self._gauge(
            "vllm:num_requests_waiting", "Number of requests waiting to be processed."
        )
        self.kv_cache_usage_perc = self._gauge(
            "vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage."
        )
        self.prompt_tokens = self._counter(
            "vllm:prompt_tokens", "Number of prefill tokens processed."
        )
        self.generation_tokens = self._counter(
            "vllm:generation_tokens", "Number of generation tokens processed."
        )
        self.prompt_tokens_cached = self._counter(
            "vllm:prompt_tokens_cached", "Number of cached prompt tokens (local prefix cache)."
        )
        self.num_preemptions = self._counter(
            "vllm:num_preemptions", "Cumulative number of preemption from the engine."
        )
        self.prefix_cache_queries = self._counter(
            "vllm:prefix_cache_queries",
            "Prefix cache queries, in terms of number of queried tokens.",
        )
        self.prefix_cache_hits = self._counter(
            "vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens."
        )
        success = Counter(
            "vllm:request_success",
            "Count of successfully processed requests.",
            [*LABELS, "finished_reason"],
            registry=self.registry,
        )
        self.request_success = {
            reason: success.labels(model_name, ENGINE_INDEX, reason) for reason in FINISH_REASONS
        }
        self._timed.extend(self.request_success.values())
        length_buckets = one_two_five_buckets(max_model_len)
        self.request_prompt_tokens = self._histogram(
            "vllm:request_prompt_tokens", "Number of prefill tokens processed.", length_buckets
        )
        self.request_generation_tokens = self._histogram(
            "vllm:request_generation_tokens",
            "Number of generation tokens processed.",
            length_buckets,
        )
        self.iteration_tokens = self._histogram(
            "vllm:iteration_tokens_total",
            "Histogram of number of tokens per engine_step.",
            _ITERATION_TOKEN_BUCKETS,
        )
        self.request_params_n = self._histogram(
            "vllm:request_params_n", "Histogram of the n request parameter.", _N_BUCKETS
        )
        self.request_params_max_tokens = self._histogram(
            "vllm:request_params_max_tokens",
            "Histogram of the max_tokens request parameter.",
            length_buckets,
        )
        self.time_to_first_token = self._histogram(
            "vllm:time_to_first_token_seconds",
            "Histogram of time to first token in seconds.",
            _TTFT_BUCKETS,
        )
        self.inter_token_latency = self._histogram(
            "vllm:inter_token_latency_seconds",
            "Histogram of inter-token latency in seconds.",
            _PER_TOKEN_BUCKETS,
        )
        self.request_time_per_output_token = self._histogram(
            "vllm:request_time_per_output_token_seconds",
            "Histogram of time_per_output_token_seconds per request.",
            _PER_TOKEN_BUCKETS,
        )
        self.e2e_request_latency = self._latency("vllm:e2e_request_latency_seconds", "e2e request")
        self.request_queue_time = self._latency("vllm:request_queue_time_seconds", "WAITING phase")
        self.request_inference_time = self._latency(
            "vllm:request_inference_time_seconds", "RUNNING phase"
        )
        self.request_prefill_time = self._latency(
            "vllm:request_prefill_time_seconds", "PREFILL phase"
        )
        self.request_decode_time = self._latency("vllm:request_decode_time_seconds", "DECODE phase")
        self.spec_decode = SpecDecodeMetrics(self, spec_tokens) if spec_tokens > 0 else None
        self._lora_info: Gauge | None = None
        self._lora_labels: dict[str, str] = {}
        if created is not None:
            for series in self._timed:
                series._created = created

    content_type = CONTENT_TYPE_LATEST

    def publish_cache_config(self, labels: dict[str, str]) -> None:
        """``vllm:cache_config_info``: an info-style gauge set to 1 whose labels are the cache
        config (vLLM's ``log_metrics_info``; published once, after profiling)."""
        if self.cache_config_published:
            return
        info = {**labels, "engine": ENGINE_INDEX}
        gauge = Gauge(
            "vllm:cache_config_info",
            "Information of the LLMEngine CacheConfig",
            list(info),
            registry=self.registry,
        )
        gauge.labels(**info).set(1)
        self.cache_config_published = True
        self.mark_changed()

    def publish_lora_info(self, labels: dict[str, str]) -> None:
        """``vllm:lora_requests_info``: a gauge whose value is the wall-clock time of the last
        update and whose labels are ``max_lora`` and the comma-separated running and waiting
        adapters (vLLM's ``v1/metrics/loggers.py``; vLLM's metrics design doc). Only the newest
        label set is kept, as vLLM's ``livemostrecent`` mode shows one."""
        if self._lora_info is None:
            self._lora_info = Gauge(
                "vllm:lora_requests_info",
                "Running stats on lora requests.",
                ["max_lora", "running_lora_adapters", "waiting_lora_adapters"],
                registry=self.registry,
            )
        if labels != self._lora_labels:
            self._lora_info.clear()
            self._lora_labels = dict(labels)
        self._lora_info.labels(**labels).set(time.time())
        self.mark_changed()

    def mark_changed(self) -> None:
        """Call after updating any series: the next scrape renders afresh."""
        self._exposition = None

    def exposition(self) -> bytes:
        # Rendering takes milliseconds and a benchmark scrapes hundreds of idle stand-ins, so
        # the text is kept until a series changes.
        if self._exposition is None:
            self._exposition = generate_latest(self.registry)
        return self._exposition

    def _gauge(self, name: str, documentation: str) -> Gauge:
        gauge = Gauge(name, documentation, LABELS, registry=self.registry)
        return gauge.labels(self.model_name, ENGINE_INDEX)

    def _counter(self, name: str, documentation: str) -> Counter:
        counter = Counter(name, documentation, LABELS, registry=self.registry)
        child = counter.labels(self.model_name, ENGINE_INDEX)
        self._timed.append(child)
        return child

    def _histogram(self, name: str, documentation: str, buckets: tuple[float, ...]) -> Histogram:
        histogram = Histogram(name, documentation, LABELS, buckets=buckets, registry=self.registry)
        child = histogram.labels(self.model_name, ENGINE_INDEX)
        self._timed.append(child)
        return child

    def _latency(self, name: str, phase: str) -> Histogram:
        return self._histogram(
            name, f"Histogram of time spent in {phase} in seconds.", _REQUEST_LATENCY_BUCKETS
        )


class SpecDecodeMetrics:
    """vLLM's speculative-decoding counters; registered only when a speculative config is set."""

    def __init__(self, parent: VllmMetrics, num_speculative_tokens: int) -> None:
        self._parent = parent
        self.num_drafts = parent._counter(
            "vllm:spec_decode_num_drafts", "Number of spec decoding drafts."
        )
        self.num_draft_tokens = parent._counter(
            "vllm:spec_decode_num_draft_tokens", "Number of draft tokens."
        )
        self.num_accepted_tokens = parent._counter(
            "vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens."
        )
        per_pos = Counter(
            "vllm:spec_decode_num_accepted_tokens_per_pos",
            "Accepted tokens per draft position.",
            [*LABELS, "position"],
            registry=parent.registry,
        )
        self.accepted_per_position = tuple(
            per_pos.labels(parent.model_name, ENGINE_INDEX, str(position))
            for position in range(num_speculative_tokens)
        )
        parent._timed.extend(self.accepted_per_position)

    def record_draft(self, accepted: int) -> None:
        """One verification step: `accepted` leading draft tokens of this draft were right."""
        self.num_drafts.inc()
        self.num_draft_tokens.inc(len(self.accepted_per_position))
        self.num_accepted_tokens.inc(accepted)
        for position in range(accepted):
            self.accepted_per_position[position].inc()
        self._parent.mark_changed()
