"""``PlanningError``: the spec is valid but cannot be planned; says why and what to change."""

from __future__ import annotations

from collections.abc import Sequence

from nemotron_operator.api.plan import RejectedLayout

# Reasons, CamelCase for status conditions.
UNKNOWN_MODEL = "UnknownModel"
INVALID_ARCHITECTURE = "InvalidArchitecture"
INSUFFICIENT_GPU_MEMORY = "InsufficientGPUMemory"
NO_MATCHING_GPUS = "NoMatchingGPUs"
INVALID_PARALLELISM = "InvalidParallelism"
UNSUPPORTED_PRECISION = "UnsupportedPrecision"
MAX_MODEL_LEN_TOO_LONG = "MaxModelLenTooLong"
SPECULATIVE_DECODING_UNSUPPORTED = "SpeculativeDecodingUnsupported"
# spec.engine.image / spec.engine.version names a vLLM older than the oldest engine profile.
UNSUPPORTED_ENGINE_VERSION = "UnsupportedEngineVersion"
# A combination of engine settings a vLLM rule (catalog.vllm_rules) refuses.
INCOMPATIBLE_ENGINE_SETTINGS = "IncompatibleEngineSettings"


class PlanningError(Exception):
    """``reason`` (CamelCase), ``message`` (what to change), ``field`` (camelCase spec path or
    None) and ``rejected`` (the layouts tried, when any were)."""

    def __init__(
        self,
        reason: str,
        message: str,
        *,
        field: str | None = None,
        rejected: Sequence[RejectedLayout] = (),
        rejected_omitted: int = 0,
    ) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.reason = reason
        self.message = message
        self.field = field
        self.rejected = list(rejected)
        self.rejected_omitted = rejected_omitted
