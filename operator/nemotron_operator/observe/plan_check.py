"""The plan checked against the KV cache vLLM really allocated.

vLLM publishes its cache configuration once, after profiling, as the info-style gauge
``vllm:cache_config_info`` (value 1): its labels are every ``CacheConfig`` field as a string,
``"None"`` when unset, plus ``engine`` (``PrometheusStatLogger.log_metrics_info`` with
``CacheConfig.metrics_info()``, vllm/v1/metrics/loggers.py, vllm/config/cache.py). The labels used
here:

- ``num_gpu_blocks`` — blocks in the pool, the same count as ``status.plan.kvCacheBlocks``;
- ``block_size`` — the smallest group block size (the hybrid-aligned attention block);
- ``kv_cache_size_tokens`` and ``kv_cache_max_concurrency`` — added by vLLM PR #42206 (merged May
  2026, before 0.31): ``int(max_concurrency × max_model_len)`` and
  ``get_max_concurrency_for_kv_cache_config``, the same definitions as the plan's
  ``kvCacheTokens`` and ``maxConcurrency``.

An older vLLM (or one that leaves them "None") lacks the last two; they are then derived from
``num_gpu_blocks`` and the plan's own ``blocksPerSequence`` — the same arithmetic as vLLM's
``get_max_concurrency_for_kv_cache_config``: concurrency = blocks / blocks per full-length request,
tokens = int(concurrency × maxModelLen) — and listed in ``derived``. ``num_gpu_blocks × block_size``
is not used: for a hybrid model one request holds blocks in several groups, so it overstates the
capacity (the reason for PR #42206).

``kv_cache_memory_bytes`` is the pool vLLM was given (``--kv-cache-memory-bytes``, with
``spec.engine.kvCacheMemory: Planned``; "None" when vLLM measured its own). With it a shortfall
names its cause: a pool smaller than the plan's (something overrode the flag, e.g.
``VLLM_CPU_KVCACHE_SPACE`` in the image's environment), or the planned pool holding fewer,
larger blocks — the engine's cache layout is not the plan's (the model described in
``spec.model.architecture`` is not the checkpoint vLLM loaded, or the release differs). Neither
is a reserve to calibrate.
"""

from __future__ import annotations

from dataclasses import dataclass

from nemotron_operator.api.plan import Plan
from nemotron_operator.api.status import PlanCheck
from nemotron_operator.observe.samples import CacheConfigInfo

DEFAULT_SHORTFALL_THRESHOLD = 0.05


@dataclass(frozen=True)
class ObservedCache:
    """What one pod's vLLM allocated."""

    pod: str
    kv_cache_blocks: int
    block_size_tokens: int
    kv_cache_tokens: int
    max_concurrency: float
    derived: tuple[str, ...]
    pool_bytes: int | None = None  # the pool vLLM was given; None when it measured its own


@dataclass(frozen=True)
class FigureDeviation:
    figure: str  # kvCacheBlocks, kvCacheTokens, maxConcurrency
    planned: float
    observed: float

    @property
    def deviation(self) -> float:
        """observed / planned − 1; 0 when nothing was planned."""
        if self.planned <= 0:
            return 0.0
        return self.observed / self.planned - 1.0


@dataclass(frozen=True)
class PlanCheckResult:
    observed: ObservedCache
    deviations: tuple[FigureDeviation, ...]
    threshold: float
    pods_checked: int
    planned_pool_bytes: int = 0  # per GPU, as passed with --kv-cache-memory-bytes
    planned_blocks: int = 0
    planned_blocks_per_sequence: int = 0

    @property
    def shortfalls(self) -> tuple[FigureDeviation, ...]:
        """Figures where vLLM got materially less than planned."""
        return tuple(d for d in self.deviations if d.deviation < -self.threshold)

    @property
    def accurate(self) -> bool:
        return not self.shortfalls

    def deviation(self, figure: str) -> float:
        return next(d.deviation for d in self.deviations if d.figure == figure)

    @property
    def reason(self) -> str:
        if self.shortfalls:
            return "LessThanPlanned"
        if any(d.deviation > self.threshold for d in self.deviations):
            return "MoreThanPlanned"
        return "WithinTolerance"

    @property
    def message(self) -> str:
        """The condition message and Event text: names each figure that fell short."""
        parts = [
            f"{d.figure} planned {_show(d.planned)}, vLLM allocated {_show(d.observed)} "
            f"({d.deviation:+.1%})"
            for d in (self.shortfalls or self.deviations)
        ]
        where = f"on pod {self.observed.pod}"
        if self.shortfalls:
            return (
                f"vLLM got materially less KV cache than planned {where} (threshold "
                f"{self.threshold:.0%}): " + "; ".join(parts) + ". " + self._cause()
            )
        return f"vLLM's allocation matches the plan {where}: " + "; ".join(parts)

    def _cause(self) -> str:
        """Why, when vLLM said which pool it was given; else the reserves are the suspect."""
        pool, planned = self.observed.pool_bytes, self.planned_pool_bytes
        blocks = self.observed.kv_cache_blocks
        if pool is None or planned <= 0:
            return (
                "Report it with the plan and vLLM's startup log so the catalog's reserves can be "
                "calibrated (docs/observability.md)."
            )
        if pool < planned * (1 - self.threshold):
            return (
                f"vLLM was given a pool of {pool:,} bytes where the plan passes {planned:,} "
                f"({pool / planned - 1:+.1%}): something overrode --kv-cache-memory-bytes (e.g. "
                "VLLM_CPU_KVCACHE_SPACE in the image's environment)."
            )
        concurrency = self.observed.max_concurrency
        if self.deviation("kvCacheBlocks") >= -self.threshold and concurrency > 0:
            return (
                f"vLLM holds the planned blocks but a full-length request takes more of them: "
                f"about {blocks / concurrency:,.1f} where the plan has "
                f"{self.planned_blocks_per_sequence:,}: check that the pod runs the planned "
                "--max-model-len and draft tokens."
            )
        if blocks > 0 and self.planned_blocks > 0:
            return (
                f"vLLM was given the planned pool ({pool:,} bytes) but fits fewer blocks in it: "
                f"about {pool // blocks:,} bytes per block where the plan has "
                f"{planned // self.planned_blocks:,}, so its cache layout is not the plan's: check "
                "spec.model.architecture against the checkpoint's config.json, and "
                "spec.engine.image against the vLLM release the image runs."
            )
        return "vLLM was given the planned pool but allocated no blocks in it."


def _show(value: float) -> str:
    return f"{value:,.2f}" if value != int(value) else f"{int(value):,}"


def observed_cache(pod: str, info: CacheConfigInfo, plan: Plan) -> ObservedCache | None:
    """The figures of one pod, derived from the plan where vLLM did not publish them; None when
    the pod has not published its block count yet (still profiling)."""
    blocks = info.integer("num_gpu_blocks")
    if blocks is None:
        return None
    derived: list[str] = []
    concurrency = info.number("kv_cache_max_concurrency")
    if concurrency is None:
        per_sequence = plan.blocks_per_sequence
        concurrency = blocks / per_sequence if per_sequence else 0.0
        derived.append("maxConcurrency")
    tokens = info.integer("kv_cache_size_tokens")
    if tokens is None:
        tokens = int(concurrency * plan.max_model_len)
        derived.append("kvCacheTokens")
    return ObservedCache(
        pod=pod,
        kv_cache_blocks=blocks,
        block_size_tokens=info.integer("block_size") or 0,
        kv_cache_tokens=tokens,
        max_concurrency=concurrency,
        derived=tuple(derived),
        pool_bytes=info.integer("kv_cache_memory_bytes"),
    )


def compare(
    plan: Plan,
    observed: list[ObservedCache],
    threshold: float = DEFAULT_SHORTFALL_THRESHOLD,
) -> PlanCheckResult | None:
    """Compare every pod's allocation with the plan and report the pod furthest below it (every
    replica runs the same plan, so the worst one is what the plan promised too much for)."""
    if not observed:
        return None
    results = [
        PlanCheckResult(
            observed=pod,
            deviations=(
                FigureDeviation("kvCacheBlocks", plan.kv_cache_blocks, pod.kv_cache_blocks),
                FigureDeviation("kvCacheTokens", plan.kv_cache_tokens, pod.kv_cache_tokens),
                FigureDeviation("maxConcurrency", plan.max_concurrency, pod.max_concurrency),
            ),
            threshold=threshold,
            pods_checked=len(observed),
            planned_pool_bytes=plan.per_gpu.kv_pool_bytes,
            planned_blocks=plan.kv_cache_blocks,
            planned_blocks_per_sequence=plan.blocks_per_sequence,
        )
        for pod in sorted(observed, key=lambda o: o.pod)
    ]
    return min(results, key=lambda r: min(d.deviation for d in r.deviations))


def to_status(result: PlanCheckResult, checked_at: str) -> PlanCheck:
    """The comparison as ``status.planCheck``."""
    observed = result.observed
    return PlanCheck(
        kv_cache_blocks=observed.kv_cache_blocks,
        kv_cache_tokens=observed.kv_cache_tokens,
        max_concurrency=round(observed.max_concurrency, 3),
        block_size_tokens=observed.block_size_tokens,
        blocks_deviation=round(result.deviation("kvCacheBlocks"), 4),
        tokens_deviation=round(result.deviation("kvCacheTokens"), 4),
        concurrency_deviation=round(result.deviation("maxConcurrency"), 4),
        derived=list(observed.derived),
        pod=observed.pod,
        pods_checked=result.pods_checked,
        checked_at=checked_at,
    )
