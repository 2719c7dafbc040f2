"""The stand-in's start-up, phase by phase, the way vLLM v0.31 starts and logs it: read the weights
onto the GPUs ("Loading weights took ..."), torch.compile the model ("torch.compile takes ... in
total"; with a warm cache "Directly load the compiled graph(s) ... from the cache"), capture CUDA
graphs ("Graph capturing finished in ..."), then serve ("Application startup complete.").
``/health`` answers 503 until the end, as vLLM answers nothing before its engine is built.

The compile cache: vLLM keeps torch.compile's output under ``$VLLM_CACHE_ROOT/torch_compile_cache/
<hash of its config>`` and loads it on the next start of the same configuration; CUDA graphs are
captured again on every start. The stand-in has no files for in-process pods, so
``CompileCaches`` remembers which cache locations (a claim and a path in it, from the kubelet)
hold a compiled configuration.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass

log = logging.getLogger("vllm")


@dataclass(frozen=True)
class StartupTimes:
    """Seconds per phase of a start (configurable: the kubelet's settings, a test's knob)."""

    load_seconds: float = 0.0
    compile_seconds: float = 0.0  # skipped when the compile cache holds this configuration
    capture_seconds: float = 0.0


# Which compile-cache entries exist: ``location/torch_compile_cache/hash``, where the location
# names the volume (``pvc:namespace/claim/path``); shared by every stand-in.
CompileCaches = set[str]


def config_hash(argv: Sequence[str]) -> str:
    """What vLLM hashes into its cache directory: here, the whole command line."""
    return hashlib.sha256("\0".join(argv).encode()).hexdigest()[:10]


class StartupRun:
    """One start: which phases it goes through and how long it takes in all."""

    def __init__(
        self,
        times: StartupTimes,
        *,
        caches: CompileCaches | None = None,
        location: str | None = None,
        argv: Sequence[str] = (),
    ) -> None:
        self.times = times
        self.caches = caches
        self.entry = (
            None if location is None else f"{location}/torch_compile_cache/{config_hash(argv)}"
        )
        self.compile_cached = False
        self.finished = False

    def begin(self) -> None:
        """The start begins: is the compiled model in the cache already?"""
        self.compile_cached = bool(
            self.caches is not None and self.entry is not None and self.entry in self.caches
        )
        self.finished = False

    @property
    def total_seconds(self) -> float:
        compile_seconds = 0.0 if self.compile_cached else self.times.compile_seconds
        return self.times.load_seconds + compile_seconds + self.times.capture_seconds

    def finish(self) -> None:
        """The engine is up: the compiled model is in the cache; vLLM's log lines of the start."""
        if self.finished:
            return
        self.finished = True
        times = self.times
        log.info("Loading weights took %.2f seconds", times.load_seconds)
        if self.compile_cached:
            log.info("Directly load the compiled graph(s) from the cache (%s)", self.entry)
        else:
            if self.caches is not None and self.entry is not None:
                self.caches.add(self.entry)
            log.info("torch.compile takes %.2f s in total", times.compile_seconds)
        log.info("Graph capturing finished in %.0f secs, took 0.00 GiB", times.capture_seconds)
        log.info("Application startup complete.")
