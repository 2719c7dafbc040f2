"""The behavioural check's requests per promised feature, and the verdict on each answer shape
vLLM's parsers produce, right and wrong (the wrong ones as the stand-in's output faults make
them)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from nemotron_operator.observe.behaviour import Promises, checks_for, verdict

ALL = Promises("nano", "nemotron_v3", "qwen3_coder", 1)
PLAIN = Promises("nano", None, None, 0)


def by_name(promises: Promises) -> dict[str, Any]:
    return {c.name: c for c in checks_for(promises)}


def test_the_checks_follow_what_the_deployment_promises() -> None:
    assert list(by_name(ALL)) == ["chat", "reasoning", "tool-call", "json-schema"]
    assert list(by_name(PLAIN)) == ["chat", "json-schema"]
    checks = by_name(ALL)
    assert checks["reasoning"].body["chat_template_kwargs"] == {"enable_thinking": True}
    assert checks["tool-call"].body["tool_choice"] == "auto"
    assert checks["json-schema"].body["response_format"]["type"] == "json_schema"
    assert all(c.body["model"] == "nano" for c in checks.values())
    # The bounded cost docs/controller.md states.
    assert sum(c.body["max_tokens"] for c in checks.values()) == 1472


def choice(**message: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}


CALL = {"type": "function", "function": {"name": "get_weather", "arguments": '{"city": "x"}'}}
XML = "<tool_call>\n<function=get_weather>\n<parameter=city>\nok\n</parameter>\n</function>"
CASES: list[tuple[str, int, Any, str | None]] = [
    ("chat", 200, choice(content="ready"), None),
    ("chat", 200, choice(content=None, reasoning="all of it"),
     'the answer has no content: {"content":null,"reasoning":"all of it"}'),
    ("chat", 400, {"error": {"message": "bad"}}, 'HTTP 400: {"error":{"message":"bad"}}'),
    ("chat", 200, {"object": "error"}, 'no choices in the answer: {"object":"error"}'),
    ("reasoning", 200, choice(content="5", reasoning="2 plus 3"), None),
    ("reasoning", 200, choice(content="2 plus 3</think>\n5", reasoning=None),
     "thinking text is left in the content: 2 plus 3</think>\n5"),
    ("reasoning", 200, choice(content="5", reasoning=None),
     "no reasoning was separated from the content: 5"),
    ("reasoning", 200, choice(content=None, reasoning="2 plus 3 is"),
     "content is empty, everything went to reasoning: 2 plus 3 is"),
    ("tool-call", 200, choice(content=None, tool_calls=[CALL]), None),
    ("tool-call", 200, choice(content=XML, tool_calls=[]),
     "the tool call was not parsed, it is in the content: " + XML),
    ("tool-call", 200, choice(content="It is sunny.", tool_calls=[]),
     'no tool call came back: {"content":"It is sunny.","tool_calls":[]}'),
    ("tool-call", 200,
     choice(tool_calls=[{"function": {"name": "get_weather", "arguments": "{city"}}]),
     "the tool call's arguments are not JSON: {city"),
    ("json-schema", 200, choice(content='{"status": "ready", "ok": true}'), None),
    ("json-schema", 200, choice(content='{{"status": "ready", "ok": true}'),
     'the answer is not valid JSON: {{"status": "ready", "ok": true}'),
    ("json-schema", 200, choice(content='{"status": "ready"}'),
     'the JSON answer lacks ok: {"status": "ready"}'),
]  # fmt: skip


@pytest.mark.parametrize(("check", "status", "answer", "problem"), CASES)
def test_verdicts(check: str, status: int, answer: Any, problem: str | None) -> None:
    assert verdict(by_name(ALL)[check], status, answer) == problem


def test_a_long_answer_is_cut_to_an_excerpt() -> None:
    problem = verdict(by_name(ALL)["json-schema"], 200, choice(content="x" * 1000))
    assert problem is not None
    assert problem.endswith("…")
    assert len(problem) < 220
    json.dumps(problem)  # a status message: plain text


def test_every_request_is_deterministic_and_thinking_is_off_except_for_reasoning() -> None:
    for name, check in by_name(ALL).items():
        body = check.body
        assert body["temperature"] == 0, name
        (message,) = body["messages"]
        assert message["role"] == "user"
        assert isinstance(message["content"], str)
        assert message["content"].strip(), name
        thinking = body["chat_template_kwargs"]["enable_thinking"]
        assert thinking is (name == "reasoning"), name
    schema = by_name(ALL)["json-schema"].body["response_format"]["json_schema"]
    assert schema["name"] == "status"
    assert set(schema["schema"]["required"]) == {"status", "ok"}


def test_an_answer_that_is_no_object_or_whose_first_choice_is_no_object_has_no_choices() -> None:
    chat = by_name(ALL)["chat"]
    assert verdict(chat, 200, ["ready"]) == 'no choices in the answer: ["ready"]'
    assert verdict(chat, 200, {"choices": ["ready"]}) == (
        'no choices in the answer: {"choices":["ready"]}'
    )
    assert verdict(chat, 200, {"choices": []}) == 'no choices in the answer: {"choices":[]}'
    # a message that is no object reads as an empty one
    assert verdict(chat, 200, {"choices": [{"message": "ready"}]}) == (
        "the answer has no content: {}"
    )


def test_the_old_reasoning_field_and_the_length_cut_are_understood() -> None:
    reasoning = by_name(ALL)["reasoning"]
    old = choice(content="5", reasoning_content="2 plus 3")
    assert verdict(reasoning, 200, old) is None
    cut = {
        "choices": [{"message": {"content": "", "reasoning": "2 plus"}, "finish_reason": "length"}]
    }
    assert verdict(reasoning, 200, cut) == (
        "content is empty, everything went to reasoning (max_tokens reached while thinking): 2 plus"
    )


def test_an_excerpt_keeps_160_characters_and_cuts_longer_text_to_159_and_an_ellipsis() -> None:
    json_check = by_name(ALL)["json-schema"]
    exact = "x" * 160
    assert verdict(json_check, 200, choice(content=exact)) == (
        f"the answer is not valid JSON: {exact}"
    )
    longer = verdict(json_check, 200, choice(content="y" * 161))
    assert longer == "the answer is not valid JSON: " + "y" * 159 + "…"


def test_the_wrong_tool_and_arguments_that_are_no_object_are_named() -> None:
    tool = by_name(ALL)["tool-call"]
    other = {"function": {"name": "get_time", "arguments": "{}"}}
    assert verdict(tool, 200, choice(tool_calls=[other])) == (
        "the tool call names 'get_time', not get_weather"
    )
    listed = {"function": {"name": "get_weather", "arguments": "[1, 2]"}}
    assert verdict(tool, 200, choice(tool_calls=[listed])) == (
        "the tool call's arguments are not a JSON object: [1,2]"
    )


def test_a_json_answer_that_is_no_object_or_lacks_both_keys() -> None:
    check = by_name(ALL)["json-schema"]
    assert verdict(check, 200, choice(content="[1]")) == "the answer is not a JSON object: [1]"
    assert verdict(check, 200, choice(content=None)) == "the answer is not a JSON object: null"
    assert verdict(check, 200, choice(content="{}")) == "the JSON answer lacks status, ok: {}"
