"""`StubVllm`: one simulated vLLM OpenAI server, in-process, on aiohttp.

Light by design, because a benchmark runs hundreds in one process: no threads, one aiohttp
runner and one Prometheus registry per instance. Worker ranks (`--headless`, `--node-rank` > 0)
open no socket at all, like vLLM's headless executor.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from aiohttp import web

from nemotron_sim.vllm import kv_cache, object_store
from nemotron_sim.vllm.args import ServeConfig, StubVllmArgumentError, parse_serve_argv
from nemotron_sim.vllm.engine import Engine, GenerationRequest, Timing
from nemotron_sim.vllm.lora import LoraAdapters, LoraError
from nemotron_sim.vllm.lora_rules import LoraConfigError
from nemotron_sim.vllm.metrics import VllmMetrics
from nemotron_sim.vllm.parsers import OutputFault, pieces_of
from nemotron_sim.vllm.protocol import (
    ApiError,
    ParsedRequest,
    model_list,
    now,
    parse_chat,
    parse_completion,
    tool_parser_enabled,
)
from nemotron_sim.vllm.responses import ResponseShape
from nemotron_sim.vllm.startup import StartupRun, StartupTimes
from nemotron_sim.vllm.text import plan_output

log = logging.getLogger("vllm")
VLLM_VERSION = "0.34.0"  # the release it stands in for unless told another (vllm_version)
SIMULATION_HEADER = "X-Simulated"
SIMULATION_NOTE = f"nemotron-operator stand-in for vLLM {VLLM_VERSION}: no GPU, no model"
# The stand-in has no GPU memory to divide; its KV pool holds this many full-length sequences.
KV_POOL_SEQUENCES = 4
_SHUTDOWN_SECONDS = 0.5  # in-flight requests get this long when the stand-in is stopped
_MAX_BODY_BYTES = 64 * 2**20  # room for inline base64 images

_Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class StubVllm:
    """A stand-in for `vllm serve` built from the same argv the operator renders."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        load_seconds: float = 0.0,
        timing: Timing | None = None,
        gpu_product: str | None = None,
        kv_cache_bias: float = 0.0,
        output_faults: frozenset[OutputFault] = frozenset(),
        env: Mapping[str, str] | None = None,
        startup: StartupRun | None = None,
        vllm_version: str = VLLM_VERSION,
    ) -> None:
        """``startup``: the phases of its start and its compile cache (nemotron_sim.vllm.startup);
        by default ``load_seconds`` of loading and nothing else."""
        self.config: ServeConfig = parse_serve_argv(argv)
        # A bucket URI: the load format, the streamer's config and its credentials, as vLLM
        # checks them before it binds its socket (it pulls config.json from the bucket first).
        object_store.check(self.config, env or {})
        try:
            # The container's environment decides runtime adapter loading and the Hub cache.
            self.lora = LoraAdapters(self.config.options, env or {})
        except LoraConfigError as error:
            raise StubVllmArgumentError(str(error)) from None
        # What the output parsers get wrong (nemotron_sim.vllm.parsers); a test may change it.
        self.output_faults = output_faults
        # What this "vLLM" allocates on the node's GPU (vllm:cache_config_info); the bias makes
        # it get more (+) or less (-) than its own accounting, for the operator's plan check.
        self.cache_allocation = kv_cache.allocate(
            self.config.model,
            self.config.options,
            max_model_len=self.config.max_model_len,
            max_num_seqs=self.config.max_num_seqs
            if "--max-num-seqs" in self.config.options
            else None,
            spec_tokens=self.config.num_speculative_tokens,
            gpu_product=gpu_product,
            bias=kv_cache_bias,
            release=_release(vllm_version),
        )
        self.served_model_name: str = self.config.served_model_name
        self.vllm_version = vllm_version
        self.startup = startup or StartupRun(StartupTimes(load_seconds=load_seconds))
        self._timing = timing
        self._created_at = time.time()
        self._runner: web.AppRunner | None = None
        self._started_at: float | None = None
        self._created = now()
        self.host: str | None = None
        self.port: int | None = None

    @functools.cached_property
    def metrics(self) -> VllmMetrics:
        """Built at the first scrape or request: a thousand stand-ins starting at once spent
        ~3 ms each on prometheus_client objects most never show. The series are the same, and
        their ``_created`` is still when this server was created."""
        return VllmMetrics(
            self.served_model_name,
            max_model_len=self.config.max_model_len,
            spec_tokens=self.config.num_speculative_tokens,
            created=self._created_at,
        )

    @functools.cached_property
    def _engine(self) -> Engine:
        return Engine(
            self.metrics,
            max_num_seqs=self.config.max_num_seqs,
            kv_capacity_tokens=KV_POOL_SEQUENCES * self.config.max_model_len,
            num_speculative_tokens=self.config.num_speculative_tokens,
            timing=self._timing or Timing(),
        )

    @property
    def is_worker(self) -> bool:
        """A multi-node worker rank: it runs no API server."""
        return self.config.is_worker

    @property
    def running(self) -> bool:
        return self._started_at is not None

    @property
    def loaded(self) -> bool:
        """Whether the simulated model load has finished (then /health answers 200)."""
        if self._started_at is None:
            return False
        elapsed = asyncio.get_running_loop().time() - self._started_at
        if elapsed < self.startup.total_seconds:
            return False
        self.startup.finish()
        return True

    @property
    def url(self) -> str:
        if self.host is None or self.port is None:
            raise RuntimeError("the stand-in vLLM is not serving (not started, or a worker rank)")
        return f"http://{self.host}:{self.port}"

    async def start(self, host: str, port: int = 8000) -> None:
        """Bind and serve at once, as vLLM binds before loading; loading starts now."""
        if self._started_at is not None:
            raise RuntimeError("the stand-in vLLM is already started")
        if not self.is_worker:
            try:
                self.lora.load_static()  # --lora-modules, before the server answers
            except LoraError as error:
                raise RuntimeError(error.message) from None
            runner = web.AppRunner(self._app(), access_log=None, shutdown_timeout=_SHUTDOWN_SECONDS)
            await runner.setup()
            try:
                await web.TCPSite(runner, host, port, reuse_address=True).start()
            except BaseException:
                await runner.cleanup()
                raise
            self._runner = runner
            self.host, self.port = host, _bound_port(runner, port)
        if object_store.is_object_store(self.config.model):
            extra = self.config.options.get("--model-loader-extra-config") or {}
            log.info(
                "Streaming the weights from %s with the Run:ai model streamer (concurrency %s)",
                self.config.model,
                extra.get("concurrency", "default"),
            )
        self.startup.begin()
        self._started_at = asyncio.get_running_loop().time()

    async def stop(self) -> None:
        """Close the socket and end in-flight requests; safe to call twice."""
        runner, self._runner = self._runner, None
        self._started_at = None
        if runner is not None:
            await runner.cleanup()

    def _app(self) -> web.Application:
        app = web.Application(middlewares=[_json_errors], client_max_size=_MAX_BODY_BYTES)
        app.on_response_prepare.append(_label_simulated)
        app.router.add_get("/health", self._health)
        app.router.add_route("*", "/ping", self._health)
        app.router.add_get("/version", self._version)
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/load", self._load)
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/completions", self._completions)
        if self.lora.runtime_updates:
            app.router.add_post("/v1/load_lora_adapter", self._load_lora)
            app.router.add_post("/v1/unload_lora_adapter", self._unload_lora)
        return app

    async def _health(self, _: web.Request) -> web.Response:
        return web.Response(status=200 if self.loaded else 503)

    async def _version(self, _: web.Request) -> web.Response:
        return web.json_response(
            {"version": self.vllm_version, "simulated": True, "simulator": SIMULATION_NOTE}
        )

    async def _metrics(self, _: web.Request) -> web.Response:
        if self.loaded:
            # vLLM publishes its cache config once the engine is built (after profiling).
            self.metrics.publish_cache_config(
                kv_cache.info_labels(self.cache_allocation, self.config.options)
            )
            if self.lora.enabled:
                self.metrics.publish_lora_info(self.lora.info_labels())
        response = web.Response(body=self.metrics.exposition())
        response.headers["Content-Type"] = self.metrics.content_type
        return response

    async def _load(self, _: web.Request) -> web.Response:
        return web.json_response({"server_load": self._engine.running + self._engine.waiting})

    async def _models(self, _: web.Request) -> web.Response:
        self._require_loaded()
        listing = model_list(self.config, self._created)
        listing["data"] += self.lora.cards(self.served_model_name, self._created)
        return web.json_response(listing)

    async def _load_lora(self, request: web.Request) -> web.Response:
        body = await _json_body(request)
        body = body if isinstance(body, dict) else {}
        try:
            adapter = self.lora.load(body.get("lora_name"), body.get("lora_path"))
        except LoraError as error:
            raise ApiError(error.status, error.message) from None
        return web.Response(text=f"Success: LoRA adapter '{adapter.name}' added successfully.")

    async def _unload_lora(self, request: web.Request) -> web.Response:
        body = await _json_body(request)
        name = body.get("lora_name") if isinstance(body, dict) else None
        try:
            self.lora.unload(name)
        except LoraError as error:
            raise ApiError(error.status, error.message) from None
        return web.Response(text=f"Success: LoRA adapter '{name}' removed successfully.")

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        self._require_loaded()
        body, adapter = self._adapter_request(await _json_body(request))
        parsed = parse_chat(body, self.config)
        return await self._generate(request, parsed, chat=True, adapter=adapter)

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        self._require_loaded()
        body, adapter = self._adapter_request(await _json_body(request))
        parsed = parse_completion(body, self.config)
        return await self._generate(request, parsed, chat=False, adapter=adapter)

    def _adapter_request(self, body: Any) -> tuple[Any, str | None]:
        """A request naming a loaded adapter runs on the base model with that adapter."""
        model = body.get("model") if isinstance(body, dict) else None
        if isinstance(model, str) and model in self.lora.loaded:
            return {**body, "model": self.served_model_name}, model
        return body, None

    def _require_loaded(self) -> None:
        if not self.loaded:
            raise ApiError(503, "The model is still loading (simulated load time).")

    async def _generate(
        self, request: web.Request, parsed: ParsedRequest, *, chat: bool, adapter: str | None
    ) -> web.StreamResponse:
        if adapter is None:
            return await self._run(request, parsed, chat=chat, name=self.served_model_name)
        running = self.lora.running
        running[adapter] = running.get(adapter, 0) + 1
        try:
            return await self._run(request, parsed, chat=chat, name=adapter)
        finally:
            running[adapter] -= 1

    async def _run(
        self, request: web.Request, parsed: ParsedRequest, *, chat: bool, name: str
    ) -> web.StreamResponse:
        answer = parsed.features.answer(self.output_faults) if chat else None
        outputs = [
            plan_output(
                f"{name}\x00{prompt}",
                index=index,
                max_tokens=parsed.max_tokens,
                with_reasoning=parsed.with_reasoning,
                ignore_eos=parsed.ignore_eos,
                answer=None if answer is None else pieces_of(answer),
            )
            for prompt in parsed.prompts
            for index in range(parsed.n)
        ]
        generation = GenerationRequest(
            prompt_tokens=parsed.prompt_tokens,
            outputs=outputs,
            max_tokens=parsed.max_tokens,
            seed="\x00".join(parsed.prompts),
        )
        shape = ResponseShape(
            chat,
            name,
            parsed,
            tool_parser=tool_parser_enabled(self.config),
            faults=self.output_faults,
        )
        if parsed.stream:
            return await self._stream(request, generation, shape)
        texts: dict[int, list[str]] = {i: ["", ""] for i in range(len(outputs))}
        async with self._engine.run(generation) as steps:
            async for deltas in steps:
                for delta in deltas:
                    texts[delta.index][0] += delta.reasoning
                    texts[delta.index][1] += delta.content
        return web.json_response(shape.full(outputs, texts))

    async def _stream(
        self, request: web.Request, generation: GenerationRequest, shape: ResponseShape
    ) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        completion_tokens = 0
        try:
            for index in range(len(generation.outputs)):
                if shape.chat:
                    await _send(response, shape.role_chunk(index, completion_tokens))
            async with self._engine.run(generation) as steps:
                async for deltas in steps:
                    for delta in deltas:
                        completion_tokens += delta.tokens
                        await _send(response, shape.delta_chunk(delta, completion_tokens))
            if shape.parsed.include_usage:
                await _send(response, shape.usage_chunk(completion_tokens))
            await response.write(b"data: [DONE]\n\n")
            await response.write_eof()
        except ConnectionResetError:
            pass  # the client went away; the engine context has counted the abort
        return response


async def _send(response: web.StreamResponse, chunk: dict[str, Any]) -> None:
    await response.write(f"data: {json.dumps(chunk)}\n\n".encode())


async def _json_body(request: web.Request) -> Any:
    try:
        return await request.json()
    except ValueError as error:
        raise ApiError(400, f"The request body is not valid JSON: {error}") from None


@web.middleware
async def _json_errors(request: web.Request, handler: _Handler) -> web.StreamResponse:
    """vLLM's error envelope for API errors; FastAPI's `{"detail": ...}` for unknown routes."""
    try:
        return await handler(request)
    except ApiError as error:
        return web.json_response(error.body, status=error.status)
    except web.HTTPException as error:
        if error.status < 400:
            raise
        return web.json_response({"detail": error.reason}, status=error.status)


async def _label_simulated(_: web.Request, response: web.StreamResponse) -> None:
    response.headers[SIMULATION_HEADER] = SIMULATION_NOTE


def _bound_port(runner: web.AppRunner, requested: int) -> int:
    """The port actually bound (differs from the request when it was 0)."""
    for address in runner.addresses:
        if isinstance(address, tuple) and len(address) >= 2:
            return int(address[1])
    return requested


def _release(version: str) -> tuple[int, int]:
    """``0.33.0`` / ``v0.33.1`` → (0, 33); anything else is the release it defaults to."""
    parts = version.removeprefix("v").split(".")
    if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit():
        return int(parts[0]), int(parts[1])
    return _release(VLLM_VERSION)
