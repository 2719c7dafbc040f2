"""`vllm:cache_config_info` appears once the stand-in has "loaded", as vLLM publishes it after
profiling, with the figures of its own accounting and bias."""

from __future__ import annotations

import asyncio

import aiohttp

from nemotron_sim.vllm import StubVllm, Timing
from tests.integration.vllm_stub.conftest import MODEL, loopback_host, scrape


async def test_cache_config_is_published_after_loading(http: aiohttp.ClientSession) -> None:
    stubs = [
        StubVllm(
            ["vllm", "serve", MODEL, "--tensor-parallel-size", "4", "--max-model-len", "131072"],
            load_seconds=load,
            timing=Timing(step_seconds=0.0, prefill_seconds_per_token=0.0),
            gpu_product="NVIDIA-H200",
            kv_cache_bias=bias,
        )
        for load, bias in ((0.3, 0.0), (0.0, -0.10))
    ]
    try:
        for stub in stubs:
            await stub.start(loopback_host(), 0)
        loading, biased = stubs
        assert "vllm:cache_config_info" not in (await scrape(http, loading)).names()
        await asyncio.sleep(0.35)
        published = (await scrape(http, loading)).samples
        info = [s for s in published if s.name == "vllm:cache_config_info"]
        assert len(info) == 1
        assert info[0].value == 1
        labels = info[0].labels
        assert int(labels["num_gpu_blocks"]) == loading.cache_allocation.num_gpu_blocks > 0
        assert labels["engine"] == "0"
        short = [s for s in (await scrape(http, biased)).samples
                 if s.name == "vllm:cache_config_info"]  # fmt: skip
        assert int(short[0].labels["num_gpu_blocks"]) == int(
            loading.cache_allocation.num_gpu_blocks * 0.9
        )
    finally:
        for stub in stubs:
            await stub.stop()
