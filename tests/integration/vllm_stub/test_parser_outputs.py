"""The stand-in vLLM answers in the formats of vLLM's output parsers (reasoning split, parsed tool
calls, JSON-schema output), and each output fault breaks exactly its format."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest

from nemotron_sim.vllm import StubVllm
from nemotron_sim.vllm.parsers import THINK_END, OutputFault, parse_faults
from nemotron_sim.vllm.text import count_tokens
from tests.integration.vllm_stub.conftest import StartStub, post, sse_events

pytestmark = pytest.mark.integration

CHAT = "/v1/chat/completions"
SERVE = ("--reasoning-parser", "nemotron_v3", "--tool-call-parser", "qwen3_coder",
         "--enable-auto-tool-choice")  # fmt: skip
USER = [{"role": "user", "content": "What is the weather in Paris? Use the tool."}]
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"],
        },
    },
}
SCHEMA = {
    "type": "object",
    "properties": {"status": {"type": "string", "enum": ["ready"]}, "ok": {"type": "boolean"}},
    "required": ["status", "ok"],
}
JSON_REQUEST = {
    "messages": USER,
    "max_tokens": 256,
    "response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": SCHEMA}},
}


async def chat(http: aiohttp.ClientSession, stub: StubVllm, body: dict[str, Any]) -> Any:
    status, answer = await post(http, stub, CHAT, body)
    assert status == 200, answer
    return answer["choices"][0]


async def test_reasoning_is_split_from_the_answer(
    start_stub: StartStub, http: aiohttp.ClientSession
) -> None:
    stub = await start_stub(*SERVE)
    message = (await chat(http, stub, {"messages": USER, "max_tokens": 256}))["message"]
    assert message["reasoning"]
    assert message["content"]
    assert THINK_END not in message["content"]


async def test_reasoning_in_content_fault_leaves_the_thinking_in_the_answer(
    start_stub: StartStub, http: aiohttp.ClientSession
) -> None:
    stub = await start_stub(*SERVE)
    good = (await chat(http, stub, {"messages": USER, "max_tokens": 256}))["message"]
    stub.output_faults = frozenset({OutputFault.REASONING_IN_CONTENT})
    bad = (await chat(http, stub, {"messages": USER, "max_tokens": 256}))["message"]
    assert bad["reasoning"] is None
    assert bad["content"] == f"{good['reasoning']}{THINK_END}\n{good['content']}"


async def test_content_null_fault_puts_everything_in_reasoning(
    start_stub: StartStub, http: aiohttp.ClientSession
) -> None:
    stub = await start_stub(*SERVE)
    stub.output_faults = frozenset({OutputFault.CONTENT_NULL})
    message = (await chat(http, stub, {"messages": USER, "max_tokens": 256}))["message"]
    assert message["content"] is None
    assert message["reasoning"]


async def test_auto_tool_call_is_parsed(start_stub: StartStub, http: aiohttp.ClientSession) -> None:
    stub = await start_stub(*SERVE)
    choice = await chat(http, stub, {"messages": USER, "tools": [WEATHER], "max_tokens": 256})
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] is None
    [call] = choice["message"]["tool_calls"]
    assert call["type"] == "function"
    assert call["id"].startswith("chatcmpl-tool-")
    assert call["function"]["name"] == "get_weather"
    assert json.loads(call["function"]["arguments"]) == {"city": "ok", "days": 1}


async def test_unparsed_fault_leaves_the_tool_call_xml_in_content(
    start_stub: StartStub, http: aiohttp.ClientSession
) -> None:
    stub = await start_stub(*SERVE)
    stub.output_faults = frozenset({OutputFault.TOOL_CALL_UNPARSED})
    choice = await chat(http, stub, {"messages": USER, "tools": [WEATHER], "max_tokens": 256})
    assert choice["finish_reason"] == "stop"
    assert "tool_calls" not in choice["message"]  # as vLLM: absent, not []
    assert choice["message"]["content"] == (
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nok\n</parameter>\n"
        "<parameter=days>\n1\n</parameter>\n</function>\n</tool_call>"
    )


async def test_auto_tool_choice_without_a_parser_is_refused_as_vllm_does(
    start_stub: StartStub, http: aiohttp.ClientSession
) -> None:
    stub = await start_stub("--reasoning-parser", "nemotron_v3")
    status, body = await post(http, stub, CHAT, {"messages": USER, "tools": [WEATHER]})
    assert status == 400
    assert body["error"]["message"] == (
        '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'
    )
    named = {"type": "function", "function": {"name": "get_weather"}}
    choice = await chat(http, stub, {"messages": USER, "tools": [WEATHER], "tool_choice": named})
    assert choice["finish_reason"] == "stop"
    assert choice["message"]["tool_calls"][0]["function"]["name"] == "get_weather"


async def test_json_schema_answer_is_valid_json_and_counts_its_tokens(
    start_stub: StartStub, http: aiohttp.ClientSession
) -> None:
    stub = await start_stub(
        *SERVE, "--speculative-config", '{"method":"mtp","num_speculative_tokens":3}'
    )
    body = {**JSON_REQUEST, "chat_template_kwargs": {"enable_thinking": False}}
    status, answer = await post(http, stub, CHAT, body)
    assert status == 200
    content = answer["choices"][0]["message"]["content"]
    assert json.loads(content) == {"status": "ready", "ok": True}
    assert answer["usage"]["completion_tokens"] == count_tokens(content)


async def test_invalid_json_fault(start_stub: StartStub, http: aiohttp.ClientSession) -> None:
    stub = await start_stub(*SERVE)
    stub.output_faults = frozenset({OutputFault.INVALID_JSON})
    content = (await chat(http, stub, JSON_REQUEST))["message"]["content"]
    assert content.startswith("{{")
    with pytest.raises(json.JSONDecodeError):
        json.loads(content)


async def test_streamed_tool_call_arrives_parsed_in_the_last_delta(
    start_stub: StartStub, http: aiohttp.ClientSession
) -> None:
    stub = await start_stub(*SERVE)
    body = {"messages": USER, "tools": [WEATHER], "max_tokens": 256, "stream": True}
    async with http.post(f"{stub.url}{CHAT}", json=body) as response:
        events = [json.loads(e) for e in sse_events(await response.text()) if e != "[DONE]"]
    deltas = [e["choices"][0] for e in events if e.get("choices")]
    assert not any(d["delta"].get("content") for d in deltas)
    assert any(d["delta"].get("reasoning") for d in deltas)
    last = deltas[-1]
    assert last["finish_reason"] == "tool_calls"
    assert last["delta"]["tool_calls"][0]["function"]["name"] == "get_weather"


@pytest.mark.parametrize("text", ["nonsense", "invalid-json,typo"])
def test_unknown_faults_are_refused_by_name(text: str) -> None:
    with pytest.raises(ValueError, match="choose from reasoning-in-content"):
        parse_faults(text)
