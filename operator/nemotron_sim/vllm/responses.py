"""vLLM's chat and text completion bodies and stream chunks, with what its output parsers make
of the reply (``nemotron_sim.vllm.parsers``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from nemotron_sim.vllm.engine import Delta
from nemotron_sim.vllm.parsers import Message, OutputFault, present, tool_call_object
from nemotron_sim.vllm.protocol import ParsedRequest, new_id, now, usage


class ResponseShape:
    """Builds vLLM's chat and text completion bodies and stream chunks for one request."""

    def __init__(
        self,
        chat: bool,
        model: str,
        parsed: ParsedRequest,
        *,
        tool_parser: bool = False,
        faults: frozenset[OutputFault] = frozenset(),
    ) -> None:
        self.chat = chat
        self.parsed = parsed
        self._tool_parser = tool_parser
        self._faults = faults
        self._model = model
        self._id = new_id("chatcmpl" if chat else "cmpl")
        self._created = now()

    def _envelope(self, object_name: str, choices: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "id": self._id,
            "object": object_name,
            "created": self._created,
            "model": self._model,
            "choices": choices,
        }

    def full(self, outputs: Sequence[Any], texts: dict[int, list[str]]) -> dict[str, Any]:
        choices = []
        for index, planned in enumerate(outputs):
            reasoning, content = texts[index]
            choice: dict[str, Any] = {"index": index}
            finish_reason = planned.finish_reason
            if self.chat:
                message = self._message(reasoning, content, finish_reason)
                finish_reason = message.finish_reason or finish_reason
                # vLLM's ChatMessage serialises its fields null or not, except tool_calls, absent
                # when there is none (vLLM 0.32.0's CPU build, tests/contract/).
                choice["message"] = {
                    "role": "assistant",
                    "content": message.content,
                    "refusal": None,
                    "annotations": None,
                    "audio": None,
                    "function_call": None,
                    **({"tool_calls": message.tool_calls} if message.tool_calls else {}),
                    "reasoning": message.reasoning,
                }
            else:
                choice["text"] = content
            choice.update(logprobs=None, finish_reason=finish_reason, stop_reason=None)
            choices.append(choice)
        generated = sum(planned.num_tokens for planned in outputs)
        body = self._envelope("chat.completion" if self.chat else "text_completion", choices)
        body["usage"] = usage(self.parsed.prompt_tokens, generated)
        return body

    def role_chunk(self, index: int, completion_tokens: int) -> dict[str, Any]:
        choice = {"index": index, "delta": {"role": "assistant", "content": ""}, "logprobs": None,
                  "finish_reason": None}  # fmt: skip
        return self._chunk(choice, completion_tokens)

    def _message(self, reasoning: str, content: str, finish_reason: str) -> Message:
        return present(
            reasoning,
            content,
            self.parsed.features,
            tool_parser=self._tool_parser,
            faults=self._faults,
            finished=finish_reason != "length",
        )

    def delta_chunk(self, delta: Delta, completion_tokens: int) -> dict[str, Any]:
        choice: dict[str, Any] = {"index": delta.index}
        finish_reason = delta.finish_reason
        if self.chat:
            # Streamed, the parsers act piece by piece: the reasoning split (and its faults) per
            # delta, a parsed tool call as one delta with the last piece.
            message = present(
                delta.reasoning,
                delta.content,
                replace(self.parsed.features, tool_call=None),
                tool_parser=False,
                faults=self._faults,
                finished=True,
            )
            fields: dict[str, Any] = {"reasoning": message.reasoning, "content": message.content}
            if self._streams_tool_call:
                fields["content"] = None
                if finish_reason is not None and finish_reason != "length":
                    call = self.parsed.features.tool_call
                    assert call is not None
                    fields["tool_calls"] = [{"index": 0, **tool_call_object(call)}]
                    finish_reason = (
                        "stop" if self.parsed.features.named_tool_choice else "tool_calls"
                    )
            choice["delta"] = {key: text for key, text in fields.items() if text}
        else:
            choice["text"] = delta.content
        choice.update(logprobs=None, finish_reason=finish_reason, stop_reason=None)
        return self._chunk(choice, completion_tokens)

    @property
    def _streams_tool_call(self) -> bool:
        features = self.parsed.features
        return (
            features.tool_call is not None
            and (self._tool_parser or features.named_tool_choice)
            and OutputFault.TOOL_CALL_UNPARSED not in self._faults
        )

    def usage_chunk(self, completion_tokens: int) -> dict[str, Any]:
        body = self._envelope(self._chunk_object, [])
        body["usage"] = usage(self.parsed.prompt_tokens, completion_tokens)
        return body

    @property
    def _chunk_object(self) -> str:
        return "chat.completion.chunk" if self.chat else "text_completion"

    def _chunk(self, choice: dict[str, Any], completion_tokens: int) -> dict[str, Any]:
        body = self._envelope(self._chunk_object, [choice])
        if self.parsed.include_usage and self.parsed.continuous_usage:
            body["usage"] = usage(self.parsed.prompt_tokens, completion_tokens)
        return body
