"""The stand-in vLLM answers the OpenAI API as vLLM does: usage counts, streaming, errors."""

from __future__ import annotations

import asyncio
import json

import aiohttp
import pytest

from nemotron_sim.vllm.text import (
    CHAT_TOKENS_FOR_REPLY_PRIMER,
    CHAT_TOKENS_PER_MESSAGE,
    TOKENS_PER_IMAGE,
    count_tokens,
)
from tests.integration.vllm_stub.conftest import MODEL, StartStub, post, sse_events

pytestmark = pytest.mark.integration

CHAT = "/v1/chat/completions"
COMPLETIONS = "/v1/completions"
QUESTION = "How many GPUs does Nemotron Super need at 256k context?"


def chat_prompt_tokens(*contents: str) -> int:
    """The documented chat-template stand-in: a flat cost per message and for the primer."""
    return CHAT_TOKENS_FOR_REPLY_PRIMER + sum(
        CHAT_TOKENS_PER_MESSAGE + count_tokens(content) for content in contents
    )


async def test_health_is_503_while_loading_then_200(
    start_stub: StartStub, http: aiohttp.ClientSession
) -> None:
    loop = asyncio.get_running_loop()
    started = loop.time()
    stub = await start_stub(load_seconds=0.3)
    async with http.get(f"{stub.url}/health") as response:
        assert response.status == 503
    status, body = await post(http, stub, CHAT, {"messages": [{"role": "user", "content": "x"}]})
    assert (status, body["error"]["code"]) == (503, 503)
    while True:
        async with http.get(f"{stub.url}/health") as response:
            if response.status == 200:
                break
            assert response.status == 503
        assert loop.time() - started < 3, "still loading long after the load time"
        await asyncio.sleep(0.02)
    assert loop.time() - started >= 0.3
    status, _ = await post(http, stub, CHAT, {"messages": [{"role": "user", "content": "x"}]})
    assert status == 200


async def test_models_and_version_say_they_are_simulated(
    start_stub: StartStub, http: aiohttp.ClientSession
) -> None:
    stub = await start_stub("--served-model-name", "super", "super-alias", "--max-model-len", "4k")
    async with http.get(f"{stub.url}/v1/models") as response:
        models = await response.json()
        assert "stand-in" in response.headers["X-Simulated"]
    assert [card["id"] for card in models["data"]] == ["super", "super-alias"]
    assert all("simulated" in card["owned_by"] for card in models["data"])
    assert {card["root"] for card in models["data"]} == {MODEL}
    assert models["data"][0]["max_model_len"] == 4000
    async with http.get(f"{stub.url}/version") as response:
        version = await response.json()
    # The release it stands in for: the default engine's (0.34) when the image names none.
    assert (version["version"], version["simulated"]) == ("0.34.0", True)


async def test_chat_completion_counts_usage_and_is_deterministic(
    start_stub: StartStub, http: aiohttp.ClientSession
) -> None:
    stub = await start_stub("--served-model-name", "super")
    messages = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": QUESTION},
    ]
    status, first = await post(http, stub, CHAT, {"model": "super", "messages": messages})
    assert status == 200
    _, second = await post(http, stub, CHAT, {"model": "super", "messages": messages})
    message = first["choices"][0]["message"]
    assert first["object"] == "chat.completion"
    assert first["model"] == "super"
    assert message["role"] == "assistant"
    assert message["content"] == second["choices"][0]["message"]["content"]
    assert first["choices"][0]["finish_reason"] == "stop"
    usage = first["usage"]
    assert usage["prompt_tokens"] == chat_prompt_tokens("You are terse.", QUESTION)
    assert usage["completion_tokens"] == count_tokens(message["content"]) > 0
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


async def test_completion_honours_max_tokens_n_and_the_default_model(
    start_stub: StartStub, http: aiohttp.ClientSession
) -> None:
    stub = await start_stub()
    status, body = await post(
        http, stub, COMPLETIONS, {"prompt": QUESTION, "max_tokens": 5, "n": 3}
    )
    assert status == 200
    assert body["object"] == "text_completion"
    assert body["model"] == MODEL
    assert [choice["index"] for choice in body["choices"]] == [0, 1, 2]
    assert all(choice["finish_reason"] == "length" for choice in body["choices"])
    assert all(count_tokens(choice["text"]) == 5 for choice in body["choices"])
    assert len({choice["text"] for choice in body["choices"]}) > 1
    assert body["usage"] == {
        "prompt_tokens": count_tokens(QUESTION),
        "completion_tokens": 15,
        "total_tokens": count_tokens(QUESTION) + 15,
        "prompt_tokens_details": None,
    }


async def test_completion_accepts_token_ids_and_ignore_eos(
    start_stub: StartStub, http: aiohttp.ClientSession
) -> None:
    stub = await start_stub()
    body = {"prompt": [1, 2, 3, 4], "max_tokens": 200, "ignore_eos": True}
    status, answer = await post(http, stub, COMPLETIONS, body)
    assert status == 200
    assert answer["usage"]["prompt_tokens"] == 4
    assert answer["usage"]["completion_tokens"] == 200


async def test_streamed_chat_matches_the_plain_answer_and_ends_with_usage_and_done(
    start_stub: StartStub, http: aiohttp.ClientSession
) -> None:
    stub = await start_stub()
    request = {"messages": [{"role": "user", "content": QUESTION}], "max_tokens": 30}
    _, plain = await post(http, stub, CHAT, request)
    streamed = {**request, "stream": True, "stream_options": {"include_usage": True}}
    async with http.post(f"{stub.url}{CHAT}", json=streamed) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/event-stream")
        events = list(sse_events(await response.text()))
    assert events[-1] == "[DONE]"
    chunks = [json.loads(event) for event in events[:-1]]
    assert all(chunk["object"] == "chat.completion.chunk" for chunk in chunks)
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    assert text == plain["choices"][0]["message"]["content"]
    finishes = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]]
    assert finishes[-1] == plain["choices"][0]["finish_reason"]
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"] == plain["usage"]


async def test_streamed_completion_without_usage_option_sends_no_usage(
    start_stub: StartStub, http: aiohttp.ClientSession
) -> None:
    stub = await start_stub()
    request = {"prompt": "Say something", "max_tokens": 7, "stream": True}
    async with http.post(f"{stub.url}{COMPLETIONS}", json=request) as response:
        events = list(sse_events(await response.text()))
    chunks = [json.loads(event) for event in events[:-1]]
    assert events[-1] == "[DONE]"
    assert all("usage" not in chunk for chunk in chunks)
    assert count_tokens("".join(chunk["choices"][0]["text"] for chunk in chunks)) == 7
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"


async def test_reasoning_parser_adds_reasoning_unless_thinking_is_off(
    start_stub: StartStub, http: aiohttp.ClientSession
) -> None:
    stub = await start_stub("--reasoning-parser", "nemotron_v3")
    request = {"messages": [{"role": "user", "content": QUESTION}]}
    _, thinking = await post(http, stub, CHAT, request)
    message = thinking["choices"][0]["message"]
    assert message["reasoning"]
    assert thinking["usage"]["completion_tokens"] == count_tokens(
        message["reasoning"]
    ) + count_tokens(message["content"])
    off = {**request, "chat_template_kwargs": {"enable_thinking": False}}
    _, plain = await post(http, stub, CHAT, off)
    assert plain["choices"][0]["message"]["reasoning"] is None


async def test_wrong_model_name_is_a_vllm_style_404(
    start_stub: StartStub, http: aiohttp.ClientSession
) -> None:
    stub = await start_stub("--served-model-name", "super")
    request = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}
    status, body = await post(http, stub, CHAT, request)
    assert status == 404
    assert body == {
        "error": {
            "message": f"The model `{MODEL}` does not exist.",
            "type": "NotFoundError",
            "param": "model",
            "code": 404,
        }
    }


@pytest.mark.parametrize(
    ("path", "body", "fragment"),
    [
        (CHAT, {"messages": []}, "'messages'"),
        (CHAT, {"messages": [{"content": "no role"}]}, "role"),
        (CHAT, {"messages": [{"role": "user", "content": "x"}], "max_tokens": -1}, "max_tokens"),
        (CHAT, {"messages": [{"role": "user", "content": "x"}], "n": "two"}, "'n'"),
        (CHAT, {"messages": [{"role": "user", "content": "x"}], "stream": "yes"}, "'stream'"),
        (
            CHAT,
            {"messages": [{"role": "user", "content": "x"}], "stream_options": {}},
            "stream=True",
        ),
        (COMPLETIONS, {"prompt": 42}, "'prompt'"),
        (COMPLETIONS, {"prompt": "x", "max_tokens": 10**9}, "maximum context length"),
        (COMPLETIONS, ["not", "an", "object"], "JSON object"),
    ],
)
async def test_bad_bodies_are_400(
    start_stub: StartStub,
    http: aiohttp.ClientSession,
    path: str,
    body: object,
    fragment: str,
) -> None:
    stub = await start_stub("--max-model-len", "1000")
    status, answer = await post(http, stub, path, body)
    assert status == 400
    assert answer["error"]["type"] == "BadRequestError"
    assert fragment in answer["error"]["message"]


async def test_invalid_json_is_400_and_unknown_routes_404(
    start_stub: StartStub, http: aiohttp.ClientSession
) -> None:
    stub = await start_stub()
    async with http.post(f"{stub.url}{CHAT}", data=b"{not json") as response:
        assert response.status == 400
    async with http.get(f"{stub.url}/v2/nothing") as response:
        assert (response.status, await response.json()) == (404, {"detail": "Not Found"})


async def test_media_beyond_limit_mm_per_prompt_is_refused(
    start_stub: StartStub, http: aiohttp.ClientSession
) -> None:
    stub = await start_stub("--limit-mm-per-prompt", '{"image": 1}')
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    text = {"type": "text", "text": "Describe"}
    one = {"messages": [{"role": "user", "content": [text, image]}], "max_tokens": 1}
    status, answer = await post(http, stub, CHAT, one)
    assert status == 200
    expected = chat_prompt_tokens("Describe") + TOKENS_PER_IMAGE
    assert answer["usage"]["prompt_tokens"] == expected
    two = {"messages": [{"role": "user", "content": [text, image, image]}]}
    status, answer = await post(http, stub, CHAT, two)
    assert status == 400
    assert "At most 1 image(s)" in answer["error"]["message"]
