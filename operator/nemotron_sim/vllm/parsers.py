"""What vLLM's output parsers make of a reply, and the ways the stand-in can be told to get them
wrong (output faults), so every failure the operator's behavioural check looks for can be tested.

The "model" writes what a Nemotron checkpoint writes: thinking, then ``</think>``, then the
answer; a tool call in the Qwen3-Coder XML format Nemotron 3 uses
(``<tool_call><function=NAME><parameter=KEY>VALUE</parameter></function></tool_call>``); a JSON
answer when the request asks for one. vLLM's parsers turn that into the message fields:

- reasoning parser (``--reasoning-parser``): the thinking goes to ``message.reasoning``, the rest
  to ``message.content``;
- tool-call parser (``--tool-call-parser`` with ``--enable-auto-tool-choice``), or a named
  ``tool_choice`` (served by structured outputs): the call goes to ``message.tool_calls`` with
  ``arguments`` a JSON string, ``content`` null;
- ``response_format`` ``json_schema`` / ``json_object``: ``content`` is JSON text.

Faults (``--sim-output-faults a,b`` or ``NEMOTRON_SIM_VLLM_OUTPUT_FAULTS``):

- ``reasoning-in-content``: the split fails (a wrong parser): reasoning null, the thinking and
  ``</think>`` left in ``content``;
- ``content-null``: everything goes to reasoning, ``content`` null (vllm#39103);
- ``tool-call-unparsed``: the tool-call XML stays in ``content``, ``tool_calls`` empty;
- ``invalid-json``: the JSON answer starts with a doubled brace (vllm#48228), not JSON.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

THINK_END = "</think>"


class OutputFault(StrEnum):
    REASONING_IN_CONTENT = "reasoning-in-content"
    CONTENT_NULL = "content-null"
    TOOL_CALL_UNPARSED = "tool-call-unparsed"
    INVALID_JSON = "invalid-json"


def parse_faults(text: str) -> frozenset[OutputFault]:
    """``"a,b"`` → the faults; ValueError naming the known ones on anything else."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    known = {f.value: f for f in OutputFault}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(
            f"unknown output fault(s) {', '.join(unknown)}: choose from {', '.join(known)}"
        )
    return frozenset(known[n] for n in names)


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: Mapping[str, Any]

    def as_text(self) -> str:
        """How a Nemotron 3 checkpoint writes the call (Qwen3-Coder XML)."""
        params = "".join(
            f"<parameter={key}>\n{_scalar_text(value)}\n</parameter>\n"
            for key, value in self.arguments.items()
        )
        return f"<tool_call>\n<function={self.name}>\n{params}</function>\n</tool_call>"


@dataclass(frozen=True)
class Features:
    """What one chat request asks of the parsers."""

    tool_call: ToolCall | None = None  # the call the "model" makes
    named_tool_choice: bool = False  # served by structured outputs, not the parser
    schema: Mapping[str, Any] | None = None  # response_format's schema (json_object: {})

    def answer(self, faults: frozenset[OutputFault]) -> str | None:
        """The answer text the "model" writes, or None for filler words."""
        if self.tool_call is not None:
            return self.tool_call.as_text()
        if self.schema is not None:
            text = json.dumps(example_of(self.schema), separators=(", ", ": "))
            return "{" + text if OutputFault.INVALID_JSON in faults else text
        return None


@dataclass
class Message:
    """The fields of a chat completion's message that the parsers decide."""

    content: str | None
    reasoning: str | None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    finish_reason: str | None = None  # overrides the generation's when set


def present(
    reasoning: str,
    content: str,
    features: Features,
    *,
    tool_parser: bool,
    faults: frozenset[OutputFault],
    finished: bool,
) -> Message:
    """The message vLLM returns for what the "model" wrote (``reasoning`` is the thinking the
    reasoning parser would split off; empty without one)."""
    if OutputFault.CONTENT_NULL in faults and (reasoning or content):
        return Message(content=None, reasoning=reasoning + content)
    if OutputFault.REASONING_IN_CONTENT in faults and reasoning:
        reasoning, content = "", f"{reasoning}{THINK_END}\n{content}"
    call = features.tool_call
    parsed = call is not None and finished and (tool_parser or features.named_tool_choice)
    if call is not None and parsed and OutputFault.TOOL_CALL_UNPARSED not in faults:
        return Message(
            content=None,
            reasoning=reasoning or None,
            tool_calls=[tool_call_object(call)],
            finish_reason="stop" if features.named_tool_choice else "tool_calls",
        )
    return Message(
        content=content if content or not reasoning else None, reasoning=reasoning or None
    )


def tool_call_object(call: ToolCall) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-tool-{uuid.uuid4().hex}",
        "type": "function",
        "function": {"name": call.name, "arguments": json.dumps(dict(call.arguments))},
    }


def example_of(schema: Any) -> Any:
    """A small value that satisfies a JSON schema (the subset structured outputs use: type,
    properties, required, items, enum, const)."""
    if not isinstance(schema, Mapping):
        return {}
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        properties = schema.get("properties") or {}
        return {key: example_of(sub) for key, sub in properties.items()}
    if kind == "array":
        count = int(schema.get("minItems", 1))
        return [example_of(schema.get("items") or {}) for _ in range(count)]
    scalars: dict[str, Any] = {"string": "ok", "integer": 1, "number": 1.5, "boolean": True}
    return scalars.get(str(kind))


def _scalar_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


_PIECE = re.compile(r"\s*(?:\w{1,4}|[^\w\s])|\s+$")


def pieces_of(text: str) -> tuple[str, ...]:
    """``text`` as one-token pieces by the stand-in tokenizer (runs of at most four word
    characters, or one symbol), each carrying the whitespace before it."""
    return tuple(_PIECE.findall(text))


def first_tool(tools: Iterable[Mapping[str, Any]], name: str | None) -> ToolCall | None:
    """The call the "model" makes: the named tool, or the first one; arguments from its
    parameter schema."""
    for tool in tools:
        function = tool.get("function") or {}
        if name is None or function.get("name") == name:
            arguments = example_of(function.get("parameters") or {"type": "object"})
            return ToolCall(str(function.get("name")), arguments)
    return None
