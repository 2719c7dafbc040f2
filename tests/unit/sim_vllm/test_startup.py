"""The stand-in's start-up phases and its compile cache: a second start of the same
configuration on the same cache location skips torch.compile, as vLLM does."""

from __future__ import annotations

import asyncio
import logging

import pytest

from nemotron_sim.kubelet.stand_ins import cache_location
from nemotron_sim.vllm import StubVllm
from nemotron_sim.vllm.startup import CompileCaches, StartupRun, StartupTimes

ARGV = ["vllm", "serve", "nvidia/some-model", "--max-model-len", "100"]
TIMES = StartupTimes(load_seconds=1.0, compile_seconds=10.0, capture_seconds=2.0)


def test_a_cold_start_compiles_and_fills_the_cache_a_warm_one_skips_compiling(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caches = CompileCaches()
    first = StartupRun(TIMES, caches=caches, location="pvc:ai/w-0/.compile-cache/k", argv=ARGV)
    first.begin()
    assert first.total_seconds == 13.0
    with caplog.at_level(logging.INFO, logger="vllm"):
        first.finish()
    assert "torch.compile takes 10.00 s in total" in caplog.text
    assert "Graph capturing finished in 2 secs" in caplog.text
    second = StartupRun(TIMES, caches=caches, location="pvc:ai/w-0/.compile-cache/k", argv=ARGV)
    second.begin()
    assert second.compile_cached
    assert second.total_seconds == 3.0  # CUDA graphs are captured again
    other_layout = StartupRun(
        TIMES, caches=caches, location="pvc:ai/w-0/.compile-cache/k", argv=[*ARGV, "-tp", "2"]
    )
    other_layout.begin()
    assert other_layout.total_seconds == 13.0
    elsewhere = StartupRun(TIMES, caches=caches, location="pvc:ai/w-1/.compile-cache/k", argv=ARGV)
    elsewhere.begin()
    assert elsewhere.total_seconds == 13.0
    nowhere = StartupRun(TIMES, caches=caches, location=None, argv=ARGV)
    nowhere.begin()
    nowhere.finish()
    nowhere.begin()
    assert nowhere.total_seconds == 13.0  # no cache on a claim: every start compiles


async def test_health_answers_once_every_phase_has_passed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Load 0.2 s, compile 0.2 s, capture 0.1 s: read at set points of the event loop's clock
    (nothing awaits meanwhile, so the clock is the stand-in's only reader)."""
    stub = StubVllm(ARGV, startup=StartupRun(StartupTimes(0.2, 0.2, 0.1)))
    await stub.start("127.0.0.1", 0)
    loop = asyncio.get_running_loop()
    started = loop.time()  # a hair after the stand-in's own start
    try:
        for elapsed, loaded in ((0.0, False), (0.3, False), (0.49, False), (0.5, True)):
            monkeypatch.setattr(loop, "time", lambda elapsed=elapsed: started + elapsed)
            assert stub.loaded is loaded, f"at {elapsed} s"
    finally:
        monkeypatch.undo()
        await stub.stop()


def pod_with(volume: dict[str, object]) -> dict[str, object]:
    return {
        "metadata": {"namespace": "ai"},
        "spec": {"volumes": [{"name": "weights", **volume}, {"name": "scratch", "emptyDir": {}}]},
    }


CONTAINER = {
    "volumeMounts": [
        {"name": "weights", "mountPath": "/models", "readOnly": True},
        {"name": "weights", "mountPath": "/compile-cache", "subPath": ".compile-cache"},
        {"name": "scratch", "mountPath": "/tmp"},
    ]
}


def test_the_cache_location_is_the_claim_and_the_path_in_it() -> None:
    pod = pod_with({"persistentVolumeClaim": {"claimName": "weights-nano-0"}})
    assert (
        cache_location(pod, CONTAINER, "/compile-cache/tp1/vllm")
        == "pvc:ai/weights-nano-0/.compile-cache/tp1/vllm"
    )
    assert cache_location(pod, CONTAINER, "/tmp/vllm") is None  # an emptyDir goes with the pod
    assert cache_location(pod, CONTAINER, "/root/.cache/vllm") is None
    assert cache_location(pod, CONTAINER, None) is None
