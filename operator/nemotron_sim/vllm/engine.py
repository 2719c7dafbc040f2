"""A pretend engine core: admission, prefill, decode steps, MTP drafts, and the metrics they move.

Timing is simulated with `asyncio.sleep`, never computed: a request waits for a slot
(`--max-num-seqs`), "prefills" for a time proportional to its prompt, then emits tokens one decode
step at a time. With a speculative config each step also verifies a draft of
`num_speculative_tokens` tokens, and the accepted ones come out in the same step, so MTP visibly
raises tokens per step. Acceptance is deterministic per request (seeded from the prompt): draft
position p is accepted with probability `ACCEPTANCE_FIRST × ACCEPTANCE_DECAY**p`, and a position
counts only if all earlier ones were accepted. These are simulation choices, not measurements.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass

from nemotron_sim.vllm.metrics import VllmMetrics
from nemotron_sim.vllm.text import PlannedOutput

ACCEPTANCE_FIRST = 0.8
ACCEPTANCE_DECAY = 0.75


@dataclass(frozen=True)
class Timing:
    """Simulated speeds. The defaults keep a 64-token answer under a tenth of a second."""

    step_seconds: float = 0.001  # one decode iteration
    prefill_seconds_per_token: float = 0.00001


@dataclass(frozen=True)
class Delta:
    """What one choice produced in one step."""

    index: int
    tokens: int
    reasoning: str = ""
    content: str = ""
    finish_reason: str | None = None


@dataclass
class _Choice:
    index: int
    planned: PlannedOutput
    emitted: int = 0

    @property
    def pieces(self) -> tuple[str, ...]:
        return self.planned.reasoning + self.planned.content

    @property
    def done(self) -> bool:
        return self.emitted >= self.planned.num_tokens

    def take(self, count: int) -> Delta:
        start, self.emitted = self.emitted, min(self.emitted + count, self.planned.num_tokens)
        split = len(self.planned.reasoning)
        pieces = self.pieces
        reasoning = "".join(pieces[i] for i in range(start, self.emitted) if i < split)
        content = "".join(pieces[i] for i in range(start, self.emitted) if i >= split)
        finish = self.planned.finish_reason if self.done else None
        return Delta(self.index, self.emitted - start, reasoning, content, finish)


@dataclass
class _Clock:
    """When a request reached each phase (event-loop time)."""

    arrived: float
    admitted: float = 0.0
    prefilled: float = 0.0
    first_token: float | None = None
    last_step: float = 0.0


@dataclass
class GenerationRequest:
    prompt_tokens: int
    outputs: Sequence[PlannedOutput]
    max_tokens: int
    seed: str


class Engine:
    """Admits, runs and accounts for requests of one stand-in server."""

    def __init__(
        self,
        metrics: VllmMetrics,
        *,
        max_num_seqs: int,
        kv_capacity_tokens: int,
        num_speculative_tokens: int,
        timing: Timing,
    ) -> None:
        self._metrics = metrics
        self._slots = asyncio.Semaphore(max_num_seqs)
        self._kv_capacity = kv_capacity_tokens
        self._spec_tokens = num_speculative_tokens
        self._timing = timing
        self._kv_in_use = 0
        self.running = 0
        self.waiting = 0

    def run(self, request: GenerationRequest) -> contextlib.aclosing[AsyncGenerator[list[Delta]]]:
        """Use as `async with engine.run(req) as steps: async for deltas in steps: ...`.

        The context releases the slot and settles the metrics however the consumer leaves.
        """
        return contextlib.aclosing(self._generate(request))

    async def _generate(self, request: GenerationRequest) -> AsyncGenerator[list[Delta], None]:
        loop = asyncio.get_running_loop()
        clock = _Clock(arrived=loop.time())
        self._set_waiting(+1)
        try:
            await self._slots.acquire()
        finally:
            self._set_waiting(-1)
        clock.admitted = clock.prefilled = loop.time()
        self._set_running(+1)
        choices = [_Choice(i, planned) for i, planned in enumerate(request.outputs)]
        kv_tokens = request.prompt_tokens
        self._use_kv(kv_tokens)
        rng = random.Random(request.seed)  # noqa: S311 - simulated acceptance, not security
        finished = False
        try:
            await asyncio.sleep(self._timing.prefill_seconds_per_token * request.prompt_tokens)
            clock.prefilled = clock.last_step = loop.time()
            self._record_prefill(request)
            while not all(choice.done for choice in choices):
                await asyncio.sleep(self._timing.step_seconds)
                deltas = [c.take(self._tokens_this_step(rng)) for c in choices if not c.done]
                emitted = sum(delta.tokens for delta in deltas)
                kv_tokens += emitted
                self._use_kv(emitted)
                self._record_step(request, clock, loop.time(), emitted)
                yield deltas
            finished = True
        finally:
            self._use_kv(-kv_tokens)
            self._set_running(-1)
            self._slots.release()
            self._record_finish(choices, finished, clock, loop.time())

    def _tokens_this_step(self, rng: random.Random) -> int:
        if self._metrics.spec_decode is None:
            return 1
        accepted = 0
        for position in range(self._spec_tokens):
            if rng.random() >= ACCEPTANCE_FIRST * ACCEPTANCE_DECAY**position:
                break
            accepted += 1
        self._metrics.spec_decode.record_draft(accepted)
        return 1 + accepted

    def _record_prefill(self, request: GenerationRequest) -> None:
        metrics = self._metrics
        metrics.prompt_tokens.inc(request.prompt_tokens)
        metrics.prefix_cache_queries.inc(request.prompt_tokens)
        metrics.request_prompt_tokens.observe(request.prompt_tokens)
        metrics.request_params_n.observe(len(request.outputs))
        metrics.request_params_max_tokens.observe(request.max_tokens)
        metrics.mark_changed()

    def _record_step(
        self, request: GenerationRequest, clock: _Clock, now: float, emitted: int
    ) -> None:
        metrics = self._metrics
        metrics.generation_tokens.inc(emitted)
        if clock.first_token is None:
            clock.first_token = now
            metrics.time_to_first_token.observe(now - clock.arrived)
            metrics.iteration_tokens.observe(emitted + request.prompt_tokens)
        else:
            metrics.inter_token_latency.observe(now - clock.last_step)
            metrics.iteration_tokens.observe(emitted)
        clock.last_step = now
        metrics.mark_changed()

    def _record_finish(
        self, choices: Sequence[_Choice], finished: bool, clock: _Clock, end: float
    ) -> None:
        metrics = self._metrics
        generated = sum(choice.emitted for choice in choices)
        for choice in choices:
            reason = choice.planned.finish_reason if finished else "abort"
            metrics.request_success[reason].inc()
        metrics.request_generation_tokens.observe(generated)
        metrics.e2e_request_latency.observe(end - clock.arrived)
        metrics.request_queue_time.observe(clock.admitted - clock.arrived)
        metrics.request_inference_time.observe(end - clock.admitted)
        metrics.request_prefill_time.observe(clock.prefilled - clock.admitted)
        metrics.request_decode_time.observe(end - clock.prefilled)
        if clock.first_token is not None and generated > 1:
            per_token = (end - clock.first_token) / (generated - 1)
            metrics.request_time_per_output_token.observe(per_token)
        metrics.mark_changed()

    def _set_waiting(self, change: int) -> None:
        self.waiting += change
        self._metrics.num_requests_waiting.set(self.waiting)
        self._metrics.mark_changed()

    def _set_running(self, change: int) -> None:
        self.running += change
        self._metrics.num_requests_running.set(self.running)
        self._metrics.mark_changed()

    def _use_kv(self, tokens: int) -> None:
        self._kv_in_use += tokens
        self._metrics.kv_cache_usage_perc.set(min(1.0, self._kv_in_use / self._kv_capacity))
        self._metrics.mark_changed()
