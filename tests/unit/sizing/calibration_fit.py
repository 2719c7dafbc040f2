"""The reserve's fit to vLLM's startup logs, redone in the open so it can be checked out of sample.

Two reserve terms are fitted ([F] in sizing/reserve.py): ``profileBase``, the profile run's torch
peak beyond the modelled activations and sampler logits, and ``cudaGraphs``, the graphs' private
pool. Every other term is modelled from the shapes. From one logged point:

- ``cudaGraphs`` is what the log prints ("Graph capturing ... took X GiB");
- ``profileBase`` is the logged torch peak minus the modelled activations and logits when the log
  prints the peak; otherwise everything vLLM held besides weights and cache (usable − "Model
  loading took" − "Available KV cache memory") minus the logged graphs minus every modelled,
  unfitted term.

``fit(points)`` averages those over a set of points; ``predicted_pool`` applies a fit to another
point with that point's logged weights, so the error measures the reserve alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from nemotron_operator.catalog.gpus import GIB
from nemotron_operator.sizing import LayoutMemory

from .calibration_points import LogPoint

FITTED = frozenset({"profileBase", "cudaGraphs"})
PEAK_TERMS = frozenset({"activations", "samplerLogits"})


@dataclass(frozen=True)
class Fit:
    profile_base_bytes: float
    cuda_graphs_bytes: float

    @property
    def bytes(self) -> float:
        return self.profile_base_bytes + self.cuda_graphs_bytes


def unfitted_bytes(memory: LayoutMemory, names: frozenset[str] | None = None) -> int:
    """The modelled reserve terms other than the fitted ones (or only ``names``)."""
    return sum(
        b
        for name, b in memory.binding.reserve
        if name not in FITTED and (names is None or name in names)
    )


def held_besides_weights_and_cache(point: LogPoint, memory: LayoutMemory) -> float:
    assert point.weights_gib is not None
    assert point.kv_gib is not None
    return memory.binding.usable_bytes - point.weights_gib * GIB - point.kv_gib * GIB


def point_fit(point: LogPoint, memory: LayoutMemory) -> Fit:
    """What one logged point says the two fitted terms are."""
    graphs = point.extra["cudaGraphGiB"] * GIB
    if "peakActivationGiB" in point.extra:
        profile = point.extra["peakActivationGiB"] * GIB - unfitted_bytes(memory, PEAK_TERMS)
    else:
        held = held_besides_weights_and_cache(point, memory)
        profile = held - graphs - unfitted_bytes(memory)
    return Fit(profile, graphs)


def fit(points: Sequence[tuple[LogPoint, LayoutMemory]]) -> Fit:
    fits = [point_fit(point, memory) for point, memory in points]
    return Fit(
        sum(f.profile_base_bytes for f in fits) / len(fits),
        sum(f.cuda_graphs_bytes for f in fits) / len(fits),
    )


def predicted_pool(point: LogPoint, memory: LayoutMemory, fitted: Fit) -> float:
    """The KV pool the planner would give ``point`` with ``fitted``, with the logged weights."""
    assert point.weights_gib is not None
    reserve = unfitted_bytes(memory) + fitted.bytes
    return memory.binding.usable_bytes - point.weights_gib * GIB - reserve


def pool_error(point: LogPoint, memory: LayoutMemory, fitted: Fit) -> float:
    """Planner ÷ log − 1 for the KV pool."""
    assert point.kv_gib is not None
    return predicted_pool(point, memory, fitted) / (point.kv_gib * GIB) - 1
