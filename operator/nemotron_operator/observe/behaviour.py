"""The behavioural check's requests and how their answers are judged: a few small requests per
feature the deployment promises, sent to a serving pod once vLLM reports ready and before the pod
takes traffic (``controller/pods/verifier.py`` sends them). Pure: the request bodies, and the
verdict on a status code and a JSON body.

Cost, per pod checked: at most four requests, each a one-line prompt, with these ``max_tokens``:
chat 64, reasoning 1024, tool call 256, JSON 128 (at most 1472 generated tokens); each request
times out after ``REQUEST_TIMEOUT_SECONDS``, so one check takes at most 4 × that.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

REQUEST_TIMEOUT_SECONDS = 60.0
EXCERPT_CHARS = 160
CHAT_PATH = "/v1/chat/completions"
TOOL_NAME = "get_weather"
_THINK_TAGS = ("<think>", "</think>")
_TOOL_CALL_TEXT = ("<tool_call>", "<function=")

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": TOOL_NAME,
        "description": "Current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "City name."}},
            "required": ["city"],
        },
    },
}
REQUIRED_KEYS = ("status", "ok")
STATUS_SCHEMA = {
    "type": "object",
    "properties": {"status": {"type": "string", "enum": ["ready"]}, "ok": {"type": "boolean"}},
    "required": list(REQUIRED_KEYS),
    "additionalProperties": False,
}


@dataclass(frozen=True)
class Promises:
    """What the deployment promises its clients, as the command line configures vLLM."""

    served_name: str
    reasoning_parser: str | None
    tool_call_parser: str | None
    speculative_tokens: int


Judge = Callable[[Mapping[str, Any]], str | None]  # the chat choice → a problem, or None


@dataclass(frozen=True)
class Check:
    name: str  # chat, reasoning, tool-call, json-schema
    body: dict[str, Any]
    judge: Judge


def checks_for(promises: Promises) -> list[Check]:
    """The checks for this deployment, cheapest first."""
    thinking_off = {"chat_template_kwargs": {"enable_thinking": False}}
    base = {"model": promises.served_name, "temperature": 0}

    def body(prompt: str, max_tokens: int, **extra: Any) -> dict[str, Any]:
        messages = [{"role": "user", "content": prompt}]
        return {**base, "messages": messages, "max_tokens": max_tokens, **extra}

    checks = [
        Check("chat", body("Reply with the word: ready", 64, **thinking_off), _judge_chat),
    ]
    if promises.reasoning_parser is not None:
        thinking_on = {"chat_template_kwargs": {"enable_thinking": True}}
        prompt = "What is 2 + 3? Answer with the number only."
        checks.append(Check("reasoning", body(prompt, 1024, **thinking_on), _judge_reasoning))
    if promises.tool_call_parser is not None:
        prompt = "Call the get_weather tool for Paris. Do not answer in text."
        tools = {"tools": [WEATHER_TOOL], "tool_choice": "auto"}
        checks.append(Check("tool-call", body(prompt, 256, **tools, **thinking_off), _judge_tool))
    schema = {"type": "json_schema", "json_schema": {"name": "status", "schema": STATUS_SCHEMA}}
    prompt = 'Answer with a JSON object: {"status": "ready", "ok": true}'
    fmt = {"response_format": schema}
    checks.append(Check("json-schema", body(prompt, 128, **fmt, **thinking_off), _judge_json))
    return checks


def verdict(check: Check, status: int, answer: Any) -> str | None:
    """None when the answer passes; otherwise what is wrong, with a short excerpt."""
    if status != 200:
        return f"HTTP {status}: {excerpt(answer)}"
    choices = answer.get("choices") if isinstance(answer, Mapping) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        return f"no choices in the answer: {excerpt(answer)}"
    return check.judge(choices[0])


def excerpt(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    return text if len(text) <= EXCERPT_CHARS else text[: EXCERPT_CHARS - 1] + "…"


def _message(choice: Mapping[str, Any]) -> Mapping[str, Any]:
    message = choice.get("message")
    return message if isinstance(message, Mapping) else {}


def _reasoning(message: Mapping[str, Any]) -> Any:
    # vLLM's field since the reasoning_content rename; older servers send the old name.
    return message.get("reasoning") or message.get("reasoning_content")


def _judge_chat(choice: Mapping[str, Any]) -> str | None:
    content = _message(choice).get("content")
    if not isinstance(content, str) or not content.strip():
        return f"the answer has no content: {excerpt(_message(choice))}"
    return None


def _judge_reasoning(choice: Mapping[str, Any]) -> str | None:
    message = _message(choice)
    content, reasoning = message.get("content"), _reasoning(message)
    if isinstance(content, str) and any(tag in content for tag in _THINK_TAGS):
        return f"thinking text is left in the content: {excerpt(content)}"
    if not reasoning:
        return f"no reasoning was separated from the content: {excerpt(content)}"
    if not isinstance(content, str) or not content.strip():
        cut = (
            " (max_tokens reached while thinking)"
            if choice.get("finish_reason") == "length"
            else ""
        )
        return f"content is empty, everything went to reasoning{cut}: {excerpt(reasoning)}"
    return None


def _judge_tool(choice: Mapping[str, Any]) -> str | None:
    message = _message(choice)
    calls = message.get("tool_calls") or []
    content = message.get("content")
    if not calls:
        if isinstance(content, str) and any(t in content for t in _TOOL_CALL_TEXT):
            return f"the tool call was not parsed, it is in the content: {excerpt(content)}"
        return f"no tool call came back: {excerpt(message)}"
    function = (calls[0] or {}).get("function") or {}
    if function.get("name") != TOOL_NAME:
        return f"the tool call names {function.get('name')!r}, not {TOOL_NAME}"
    try:
        arguments = json.loads(function.get("arguments") or "")
    except (TypeError, ValueError):
        return f"the tool call's arguments are not JSON: {excerpt(function.get('arguments'))}"
    if not isinstance(arguments, dict):
        return f"the tool call's arguments are not a JSON object: {excerpt(arguments)}"
    return None


def _judge_json(choice: Mapping[str, Any]) -> str | None:
    content = _message(choice).get("content")
    try:
        value = json.loads(content) if isinstance(content, str) else None
    except ValueError:
        return f"the answer is not valid JSON: {excerpt(content)}"
    if not isinstance(value, dict):
        return f"the answer is not a JSON object: {excerpt(content)}"
    missing = [key for key in REQUIRED_KEYS if key not in value]
    if missing:
        return f"the JSON answer lacks {', '.join(missing)}: {excerpt(content)}"
    return None
