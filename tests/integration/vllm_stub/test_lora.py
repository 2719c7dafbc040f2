"""The stand-in vLLM's LoRA: the flags with vLLM's rules, adapters in /v1/models with their
parent, the runtime load/unload endpoints with vLLM's answers, requests by adapter name and
``vllm:lora_requests_info`` (nemotron_sim/vllm/lora.py)."""

from __future__ import annotations

import json
from pathlib import Path

import aiohttp
import pytest

from nemotron_sim.vllm import StubVllm, StubVllmArgumentError
from tests.integration.vllm_stub.conftest import MODEL, StartStub, scrape

LORA = ("--served-model-name", "base", "--enable-lora", "--max-loras", "2", "--max-lora-rank", "16")
RUNTIME = {"VLLM_ALLOW_RUNTIME_LORA_UPDATING": "True"}


async def post_text(
    http: aiohttp.ClientSession, stub: StubVllm, path: str, body: object
) -> tuple[int, str]:
    async with http.post(f"{stub.url}{path}", json=body) as response:
        return response.status, await response.text()


async def models(http: aiohttp.ClientSession, stub: StubVllm) -> list[tuple[str, str | None]]:
    async with http.get(f"{stub.url}/v1/models") as response:
        assert response.status == 200
        return [(m["id"], m["parent"]) for m in (await response.json())["data"]]


@pytest.mark.parametrize(
    ("flags", "problem"),
    [
        (("--enable-lora", "--max-lora-rank", "24"), "invalid choice: 24"),
        (("--enable-lora", "--max-loras", "4", "--max-cpu-loras", "2"), "must be >= max_loras"),
        # vLLM 0.32's LoRAParserAction: no "=" means JSON, so a bare word is bad JSON
        (("--enable-lora", "--lora-modules", "no-path"), "Invalid JSON format for --lora-modules"),
        (("--enable-lora", "--lora-modules", '{"name": "a"}'), "Invalid fields for --lora-modules"),
    ],
)
def test_lora_flags_are_refused_like_vllm(flags: tuple[str, ...], problem: str) -> None:
    with pytest.raises(StubVllmArgumentError, match=problem):
        StubVllm(["vllm", "serve", MODEL, *flags])


async def test_runtime_load_serve_and_unload(
    start_stub: StartStub, http: aiohttp.ClientSession
) -> None:
    stub = await start_stub(*LORA, env=RUNTIME)
    assert await models(http, stub) == [("base", None)]

    status, text = await post_text(
        http, stub, "/v1/load_lora_adapter", {"lora_name": "sql", "lora_path": "org/sql-lora"}
    )
    assert (status, text) == (200, "Success: LoRA adapter 'sql' added successfully.")
    assert await models(http, stub) == [("base", None), ("sql", "base")]

    status, text = await post_text(
        http, stub, "/v1/load_lora_adapter", {"lora_name": "sql", "lora_path": "org/sql-lora"}
    )
    assert status == 400
    assert "has already been loaded" in text

    body = {"model": "sql", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}
    async with http.post(f"{stub.url}/v1/chat/completions", json=body) as response:
        assert response.status == 200
        assert (await response.json())["model"] == "sql"
    info = (await scrape(http, stub)).value("vllm:lora_requests_info", max_lora="2")
    assert info > 0  # the time of the last update

    status, text = await post_text(http, stub, "/v1/unload_lora_adapter", {"lora_name": "sql"})
    assert (status, text) == (200, "Success: LoRA adapter 'sql' removed successfully.")
    assert await models(http, stub) == [("base", None)]
    status, text = await post_text(http, stub, "/v1/unload_lora_adapter", {"lora_name": "sql"})
    assert status == 404
    assert "cannot be found" in text
    async with http.post(f"{stub.url}/v1/chat/completions", json=body) as response:
        assert response.status == 404  # the adapter's name is no model any more


async def test_without_the_environment_there_are_no_load_endpoints(
    start_stub: StartStub, http: aiohttp.ClientSession
) -> None:
    stub = await start_stub(*LORA)
    status, _ = await post_text(
        http, stub, "/v1/load_lora_adapter", {"lora_name": "sql", "lora_path": "org/sql"}
    )
    assert status == 404


async def test_lora_modules_are_served_from_the_start(
    start_stub: StartStub, http: aiohttp.ClientSession
) -> None:
    module = json.dumps({"name": "law", "path": "org/law", "base_model_name": "base"})
    stub = await start_stub(*LORA, "--lora-modules", "sql=org/sql", module)
    assert await models(http, stub) == [("base", None), ("sql", "base"), ("law", "base")]


async def test_adapters_come_through_the_pods_volumes(
    start_stub: StartStub, http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    claim, cache = tmp_path / "claim", tmp_path / "cache"
    (claim / "law").mkdir(parents=True)
    (claim / "law" / "adapter_config.json").write_text('{"r": 64}')
    (claim / "small").mkdir()
    (claim / "small" / "adapter_config.json").write_text('{"r": 8}')
    cache.mkdir()
    mounts = {"/adapters/loras": str(claim), "/adapter-cache": str(cache)}
    env = {**RUNTIME, "NEMOTRON_SIM_MOUNTS": json.dumps(mounts), "HF_HUB_CACHE": "/adapter-cache"}
    stub = await start_stub(*LORA, env=env)

    def load(name: str, path: str) -> dict[str, str]:
        return {"lora_name": name, "lora_path": path}

    status, text = await post_text(
        http, stub, "/v1/load_lora_adapter", load("law", "/adapters/loras/law")
    )
    assert status == 400
    assert "LoRA rank 64 is greater than max_lora_rank 16" in text
    status, text = await post_text(
        http, stub, "/v1/load_lora_adapter", load("gone", "/adapters/loras/gone")
    )
    assert status == 400
    assert "No adapter found for /adapters/loras/gone" in text
    status, _ = await post_text(
        http, stub, "/v1/load_lora_adapter", load("small", "/adapters/loras/small")
    )
    assert status == 200
    # A Hub adapter is "fetched" into the cache directory, as vLLM's loader fills HF_HUB_CACHE.
    status, _ = await post_text(http, stub, "/v1/load_lora_adapter", load("sql", "org/sql-lora"))
    assert status == 200
    assert (cache / "models--org--sql-lora" / "snapshots").is_dir()


async def test_the_hub_offline_refuses_hub_adapters(
    start_stub: StartStub, http: aiohttp.ClientSession
) -> None:
    stub = await start_stub(*LORA, env={**RUNTIME, "HF_HUB_OFFLINE": "1"})
    status, text = await post_text(
        http, stub, "/v1/load_lora_adapter", {"lora_name": "sql", "lora_path": "org/sql"}
    )
    assert status == 400
    assert "HF_HUB_OFFLINE" in text
