"""OpenAI request checking and response shapes, as vLLM's OpenAI server words them.

Errors use vLLM's envelope `{"error": {"message", "type", "param", "code"}}` with `code` the HTTP
status. Only the request fields the stand-in acts on are checked; others are accepted and
ignored, as vLLM ignores unknown fields.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from nemotron_sim.vllm.args import ServeConfig
from nemotron_sim.vllm.parsers import Features, first_tool
from nemotron_sim.vllm.text import (
    CHAT_TOKENS_FOR_REPLY_PRIMER,
    CHAT_TOKENS_PER_MESSAGE,
    TOKENS_PER_IMAGE,
    TOKENS_PER_VIDEO,
    count_tokens,
)

CHAT_ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})
# Content-part types that carry media, by the modality name `--limit-mm-per-prompt` uses.
_MEDIA_PARTS = {"image_url": "image", "video_url": "video", "input_audio": "audio"}
_MEDIA_TOKENS = {"image": TOKENS_PER_IMAGE, "video": TOKENS_PER_VIDEO, "audio": TOKENS_PER_IMAGE}
COMPLETIONS_DEFAULT_MAX_TOKENS = 16  # vLLM CompletionRequest.max_tokens, as OpenAI's


class ApiError(Exception):
    """A request vLLM would answer with an error status."""

    def __init__(self, status: int, message: str, *, param: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param

    @property
    def body(self) -> dict[str, Any]:
        kind = _ERROR_TYPES.get(self.status, "InternalServerError")
        return {"error": {"message": self.message, "type": kind, "param": self.param,
                          "code": self.status}}  # fmt: skip


_ERROR_TYPES = {400: "BadRequestError", 404: "NotFoundError", 503: "ServiceUnavailableError"}


@dataclass(frozen=True)
class ParsedRequest:
    """A checked chat or text completion request."""

    prompts: tuple[str, ...]  # what seeds the text; one per prompt
    prompt_tokens: int
    n: int
    max_tokens: int
    stream: bool
    include_usage: bool
    continuous_usage: bool
    ignore_eos: bool
    with_reasoning: bool
    features: Features = field(default_factory=Features)


def parse_chat(body: Any, config: ServeConfig) -> ParsedRequest:
    request = _object(body)
    _check_model(request, config)
    messages = request.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ApiError(400, "'messages' must be a non-empty list of messages", param="messages")
    media: dict[str, int] = {}
    prompt_tokens = CHAT_TOKENS_FOR_REPLY_PRIMER
    for index, message in enumerate(messages):
        prompt_tokens += CHAT_TOKENS_PER_MESSAGE + _message_tokens(message, index, media)
    _check_media_limits(media, config)
    max_tokens = _optional_int(request, "max_completion_tokens")
    if max_tokens is None:
        max_tokens = _optional_int(request, "max_tokens")
    features = chat_features(request, config)
    parsed = _finish(
        request,
        config,
        prompts=(json.dumps(messages, sort_keys=True),),
        prompt_tokens=prompt_tokens,
        max_tokens=max_tokens,
        with_reasoning=_thinking_enabled(request, config),
    )
    return replace(parsed, features=features)


def tool_parser_enabled(config: ServeConfig) -> bool:
    """``--enable-auto-tool-choice`` with a ``--tool-call-parser``."""
    options = config.options
    return bool(options.get("--enable-auto-tool-choice")) and bool(
        options.get("--tool-call-parser")
    )


def chat_features(request: Mapping[str, Any], config: ServeConfig) -> Features:
    """``tools``/``tool_choice`` and ``response_format``, checked as vLLM checks them."""
    tools = request.get("tools")
    if tools is not None and (
        not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools)
    ):
        raise ApiError(400, "'tools' must be a list of tool objects", param="tools")
    choice = request.get("tool_choice")
    if choice is not None and not tools:
        raise ApiError(400, "When using `tool_choice`, `tools` must be set.", param="tool_choice")
    if choice is None:
        choice = "auto" if tools else "none"
    named = None
    if isinstance(choice, dict):
        named = str((choice.get("function") or {}).get("name") or "")
        if first_tool(tools or [], named) is None:
            raise ApiError(
                400, f"Tool '{named}' has not been passed in `tools`.", param="tool_choice"
            )
    elif choice not in ("none", "auto", "required"):
        raise ApiError(400, f"Invalid tool_choice: {choice!r}", param="tool_choice")
    if choice == "auto" and not tool_parser_enabled(config):
        raise ApiError(
            400,
            '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to '
            "be set",
            param="tool_choice",
        )
    call = None if choice == "none" else first_tool(tools or [], named)
    return Features(
        tool_call=call,
        named_tool_choice=named is not None or choice == "required",
        schema=_response_schema(request.get("response_format")),
    )


def _response_schema(response_format: Any) -> Mapping[str, Any] | None:
    if response_format is None:
        return None
    kind = response_format.get("type") if isinstance(response_format, dict) else None
    if kind == "text":
        return None
    if kind == "json_object":
        return {"type": "object"}
    if kind == "json_schema":
        spec = response_format.get("json_schema")
        schema = spec.get("schema") if isinstance(spec, dict) else None
        if isinstance(schema, dict):
            return schema
    raise ApiError(
        400,
        "'response_format' must be {type: text}, {type: json_object} or "
        "{type: json_schema, json_schema: {name, schema}}",
        param="response_format",
    )


def parse_completion(body: Any, config: ServeConfig) -> ParsedRequest:
    request = _object(body)
    _check_model(request, config)
    prompts, prompt_tokens = _prompts(request.get("prompt"))
    max_tokens = _optional_int(request, "max_tokens")
    return _finish(
        request,
        config,
        prompts=prompts,
        prompt_tokens=prompt_tokens,
        max_tokens=COMPLETIONS_DEFAULT_MAX_TOKENS if max_tokens is None else max_tokens,
        with_reasoning=False,
    )


def _object(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise ApiError(400, "the request body must be a JSON object")
    return body


def _check_model(request: Mapping[str, Any], config: ServeConfig) -> None:
    model = request.get("model")
    if model is None:
        return  # vLLM serves the first served model name when none is given
    if not isinstance(model, str):
        raise ApiError(400, "'model' must be a string", param="model")
    if model not in config.served_model_names:
        raise ApiError(404, f"The model `{model}` does not exist.", param="model")


def _message_tokens(message: Any, index: int, media: dict[str, int]) -> int:
    where = f"messages[{index}]"
    if not isinstance(message, dict) or message.get("role") not in CHAT_ROLES:
        roles = ", ".join(sorted(CHAT_ROLES))
        raise ApiError(400, f"{where} must be an object with 'role' one of {roles}", param=where)
    content = message.get("content")
    if content is None or isinstance(content, str):
        return count_tokens(content or "")
    if not isinstance(content, list):
        raise ApiError(400, f"{where}.content must be a string or a list of parts", param=where)
    tokens = 0
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            tokens += count_tokens(part["text"])
        elif kind in _MEDIA_PARTS:
            modality = _MEDIA_PARTS[kind]
            media[modality] = media.get(modality, 0) + 1
            tokens += _MEDIA_TOKENS[modality]
        else:
            raise ApiError(400, f"{where}.content has an unsupported part: {part!r}", param=where)
    return tokens


def _check_media_limits(media: Mapping[str, int], config: ServeConfig) -> None:
    for modality, count in media.items():
        limit = config.mm_limits.get(modality)
        if limit is not None and count > limit:
            raise ApiError(
                400,
                f"At most {limit} {modality}(s) may be provided in one prompt "
                f"(--limit-mm-per-prompt); got {count}.",
            )


def _prompts(prompt: Any) -> tuple[tuple[str, ...], int]:
    """A string, a list of strings, a list of token ids, or a list of token-id lists."""
    if isinstance(prompt, str):
        return (prompt,), count_tokens(prompt)
    if isinstance(prompt, list) and prompt:
        if all(isinstance(p, str) for p in prompt):
            return tuple(prompt), sum(count_tokens(p) for p in prompt)
        if all(_is_token_ids(p) for p in prompt):
            return tuple(json.dumps(p) for p in prompt), sum(len(p) for p in prompt)
        if _is_token_ids(prompt):
            return (json.dumps(prompt),), len(prompt)
    raise ApiError(
        400, "'prompt' must be a string, a list of strings or a list of token ids", param="prompt"
    )


def _is_token_ids(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in value)
    )


def _thinking_enabled(request: Mapping[str, Any], config: ServeConfig) -> bool:
    if config.reasoning_parser is None:
        return False
    defaults = config.options.get("--default-chat-template-kwargs") or {}
    kwargs = request.get("chat_template_kwargs") or {}
    if not isinstance(kwargs, dict) or not isinstance(defaults, dict):
        raise ApiError(
            400, "'chat_template_kwargs' must be an object", param="chat_template_kwargs"
        )
    return bool(kwargs.get("enable_thinking", defaults.get("enable_thinking", True)))


def _finish(
    request: Mapping[str, Any],
    config: ServeConfig,
    *,
    prompts: tuple[str, ...],
    prompt_tokens: int,
    max_tokens: int | None,
    with_reasoning: bool,
) -> ParsedRequest:
    room = config.max_model_len - prompt_tokens
    if room <= 0:
        raise ApiError(
            400,
            f"This model's maximum context length is {config.max_model_len} tokens. However, "
            f"your request has {prompt_tokens} input tokens. Please reduce the length of the "
            "input messages.",
        )
    if max_tokens is None:
        max_tokens = room
    elif max_tokens > room:
        raise ApiError(
            400,
            f"'max_tokens' or 'max_completion_tokens' is too large: {max_tokens}. This model's "
            f"maximum context length is {config.max_model_len} tokens and your request has "
            f"{prompt_tokens} input tokens ({max_tokens} > {config.max_model_len} - "
            f"{prompt_tokens}).",
            param="max_tokens",
        )
    stream = _optional_bool(request, "stream")
    options = request.get("stream_options")
    if options is not None and not stream:
        raise ApiError(400, "Stream options can only be defined when `stream=True`.")
    if options is not None and not isinstance(options, dict):
        raise ApiError(400, "'stream_options' must be an object", param="stream_options")
    options = options or {}
    seed = _optional_int(request, "seed", minimum=None)
    n = _optional_int(request, "n")
    return ParsedRequest(
        prompts=prompts if seed is None else tuple(f"{seed}\x00{p}" for p in prompts),
        prompt_tokens=prompt_tokens,
        n=1 if n is None else n,
        max_tokens=max_tokens,
        stream=stream,
        include_usage=bool(options.get("include_usage", False)),
        continuous_usage=bool(options.get("continuous_usage_stats", False)),
        ignore_eos=_optional_bool(request, "ignore_eos"),
        with_reasoning=with_reasoning,
    )


def _optional_int(request: Mapping[str, Any], name: str, *, minimum: int | None = 1) -> int | None:
    value = request.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ApiError(400, f"'{name}' must be an integer, got {value!r}", param=name)
    if minimum is not None and value < minimum:
        raise ApiError(400, f"'{name}' must be at least {minimum}, got {value}", param=name)
    return value


def _optional_bool(request: Mapping[str, Any], name: str) -> bool:
    value = request.get(name, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ApiError(400, f"'{name}' must be a boolean, got {value!r}", param=name)
    return value


def new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex}"


def now() -> int:
    return int(time.time())


def usage(prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "completion_tokens": completion_tokens,
        "prompt_tokens_details": None,
    }


def model_card(
    name: str, created: int, *, root: str, parent: str | None, max_model_len: int | None
) -> dict[str, Any]:
    """One entry of ``/v1/models``: a served model name, or a LoRA adapter (its parent the base)."""
    return {
        "id": name,
        "object": "model",
        "created": created,
        "owned_by": "vllm (simulated: nemotron-operator stand-in)",
        "root": root,
        "parent": parent,
        "max_model_len": max_model_len,
        "permission": [],
    }


def model_list(config: ServeConfig, created: int) -> dict[str, Any]:
    names: Sequence[str] = config.served_model_names
    root, length = config.model, config.max_model_len
    cards = [model_card(n, created, root=root, parent=None, max_model_len=length) for n in names]
    return {"object": "list", "data": cards}
