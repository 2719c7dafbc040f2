"""What the simulated kubelet is configured with: its timings (compressed from a real kubelet's),
the programs mapped images run, and the stand-in vLLM's faults."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from nemotron_sim.kubelet.images import ImagePrograms
from nemotron_sim.kubelet.process_runner import RunnerSettings
from nemotron_sim.vllm.parsers import OutputFault

# The kubelet's crash back-off: 10 s doubling to 5 min (kubelet's default MaxContainerBackOff).
CRASH_BACKOFF_CAP_SECONDS = 300.0


@dataclass(frozen=True)
class KubeletSettings:
    load_seconds: float = 0.0  # simulated model load of each stand-in vLLM
    compile_seconds: float = 0.0  # its torch.compile (skipped on a warm compile cache)
    capture_seconds: float = 0.0  # its CUDA graph capture
    init_seconds: float = 0.05  # how long each init container "runs"
    # How long a stand-in container of a pod that runs to completion "runs" (the download Job's:
    # batch_pods.py).
    download_seconds: float = 0.05
    probe_period: float = 0.1  # seconds between readiness probes (real default: 10 s)
    crash_backoff_seconds: float = 10.0  # the first restart delay of a crashing container
    crash_backoff_cap_seconds: float = CRASH_BACKOFF_CAP_SECONDS
    programs: ImagePrograms = field(default_factory=ImagePrograms)  # none: stand-ins only
    probe_time_scale: float = 1.0  # process probes: their periods and delays times this
    workdir: Path = field(kw_only=True)  # the pods' directories (volumes, logs, files)
    stop_grace_seconds: float = 5.0  # SIGTERM → SIGKILL when the cluster stops
    # Every stand-in vLLM allocates this much more (+) or less (-) KV cache than its own
    # accounting; a container's NEMOTRON_SIM_VLLM_KV_CACHE_BIAS overrides it.
    kv_cache_bias: float = 0.0
    # What every stand-in vLLM's output parsers get wrong (nemotron_sim.vllm.parsers); a
    # container's NEMOTRON_SIM_VLLM_OUTPUT_FAULTS overrides it.
    output_faults: frozenset[OutputFault] = frozenset()

    def runner_settings(self) -> RunnerSettings:
        return RunnerSettings(
            programs=self.programs,
            probe_time_scale=self.probe_time_scale,
            crash_backoff_seconds=self.crash_backoff_seconds,
            crash_backoff_cap_seconds=self.crash_backoff_cap_seconds,
        )
