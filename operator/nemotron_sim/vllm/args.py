"""Read a `vllm serve MODEL ...` command line the way the real vLLM would, or refuse it.

Which flags exist, how each takes its value and which values are valid come from the stand-in's
own table (``flag_data``: derived from the real engine's recorded parser, never from the
operator's flag table, which this stand-in is a witness against); ``flags`` reads an argument
list with it in argparse's words. This module adds the values the stand-in acts on and the few
checks vLLM makes after parsing (the speculative config, multimodal limits, the reasoning parser,
multi-node ranks).
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nemotron_sim.vllm.flag_data import reasoning_parsers, tool_call_parsers
from nemotron_sim.vllm.flags import FlagUse, ParseError, parse

USAGE = "usage: vllm serve [model_tag] [options]"
# The argument parser does not read config.json; Nemotron 3 Super's max_position_embeddings stands
# in for "derived from the model" (model-facts.md §1.1).
DEFAULT_MAX_MODEL_LEN = 262144
# vLLM's scheduler default when nothing else decides it (vllm/config/scheduler.py).
DEFAULT_MAX_NUM_SEQS = 128
DEFAULT_PORT = 8000  # vLLM FrontendArgs.port
# Methods whose draft comes from the model's own MTP head; `nemotron_h_mtp` is the deprecated
# alias of `mtp` (model-facts.md §4). MTP defaults to the checkpoint's one MTP layer.
MTP_METHODS = frozenset({"mtp", "nemotron_h_mtp"})


class StubVllmArgumentError(ValueError):
    """vLLM would refuse this command line; the message reads like its argparse error."""

    def __init__(self, problem: str) -> None:
        super().__init__(f"{USAGE}\nvllm serve: error: {problem}")


class StubVllmStartError(StubVllmArgumentError):
    """vLLM accepted the command line but fails to start (a ValueError of its configuration, a
    missing credential): exit status 1 and the error alone, without the usage line."""

    def __init__(self, problem: str) -> None:
        ValueError.__init__(self, problem)


@dataclass(frozen=True)
class ServeConfig:
    """The parts of a `vllm serve` command line the stand-in acts on."""

    model: str
    served_model_names: tuple[str, ...]
    host: str | None = None
    port: int = DEFAULT_PORT
    max_model_len: int = DEFAULT_MAX_MODEL_LEN
    max_num_seqs: int = DEFAULT_MAX_NUM_SEQS
    speculative_method: str | None = None
    num_speculative_tokens: int = 0
    reasoning_parser: str | None = None
    mm_limits: Mapping[str, int] = field(default_factory=dict)
    nnodes: int = 1
    node_rank: int = 0
    headless: bool = False
    options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def served_model_name(self) -> str:
        """The name vLLM reports in metrics: the first served name."""
        return self.served_model_names[0]

    @property
    def is_worker(self) -> bool:
        """Ranks > 0 of a multi-node replica, and `--headless`, run no API server."""
        return self.headless or self.node_rank > 0


def parse_serve_argv(argv: Sequence[str]) -> ServeConfig:
    """Parse a container's command + args (`vllm serve MODEL ...`, possibly via `sh -c`)."""
    command = _unwrap_command(argv)
    try:
        uses = parse(command[3:])
    except ParseError as error:
        raise StubVllmArgumentError(str(error)) from None
    return _build_config(command[2], _collect(uses))


def _unwrap_command(argv: Sequence[str]) -> list[str]:
    """`/usr/bin/vllm serve ...`, `sh -c "exec vllm serve ..."` -> `["vllm", "serve", ...]`."""
    words = list(argv)
    if len(words) >= 3 and os.path.basename(words[0]) in {"sh", "bash"} and words[1] == "-c":
        words = shlex.split(words[2])
        if words and words[0] == "exec":
            words = words[1:]
    if words and os.path.basename(words[0]) == "vllm":
        words[0] = "vllm"
    if len(words) < 3 or words[:2] != ["vllm", "serve"] or words[2].startswith("-"):
        raise StubVllmArgumentError(
            "the stand-in runs only `vllm serve MODEL [options]`, got: " + shlex.join(argv)
        )
    return words


def _collect(uses: Sequence[FlagUse]) -> dict[str, Any]:
    """Flag values by canonical name; the last occurrence wins, as with argparse (``append``
    flags collect every occurrence)."""
    options: dict[str, Any] = {}
    for use in uses:
        name, kind = use.flag.name, use.flag.kind
        if kind in ("bool", "switch"):
            options[name] = not use.negated
        elif use.sub_key is not None:
            merged = options.get(name)
            merged = dict(merged) if isinstance(merged, dict) else {}
            merged[use.sub_key] = _scalar(str(use.value))
            options[name] = merged
        elif use.flag.nullable and use.value in ("", "None"):
            options[name] = None
        elif kind == "json" or (kind == "json-or-str" and str(use.value).lstrip()[:1] == "{"):
            options[name] = json.loads(str(use.value))
        elif kind == "append":
            options[name] = [*options.get(name, ()), use.value]
        elif kind == "optional" and use.value is None:
            options[name] = True  # `--hf-token` alone: the token of `hf auth login`
        else:
            options[name] = use.value
    return options


def _scalar(text: str) -> Any:
    """A dotted sub-key's value: JSON when it parses (numbers, true), else the string."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _build_config(model: str, options: Mapping[str, Any]) -> ServeConfig:
    served = options.get("--served-model-name") or (model,)
    method, spec_tokens = _speculative(options)
    node_rank = int(options.get("--node-rank", 0))
    nnodes = int(options.get("--nnodes", 1))
    if not 0 <= node_rank < nnodes:
        raise StubVllmArgumentError(
            f"argument --node-rank/-r: {node_rank} is not a rank of --nnodes {nnodes}"
        )
    return ServeConfig(
        model=model,
        served_model_names=tuple(served),
        host=options.get("--host"),
        port=int(options.get("--port", DEFAULT_PORT)),
        max_model_len=_max_model_len(options.get("--max-model-len")),
        max_num_seqs=_positive_int(options, "--max-num-seqs", DEFAULT_MAX_NUM_SEQS),
        speculative_method=method,
        num_speculative_tokens=spec_tokens,
        reasoning_parser=_reasoning_parser(options),
        mm_limits=_mm_limits(options.get("--limit-mm-per-prompt")),
        nnodes=nnodes,
        node_rank=node_rank,
        headless=bool(options.get("--headless", False)),
        options=dict(options),
    )


def _positive_int(options: Mapping[str, Any], name: str, default: int) -> int:
    value = int(options.get(name, default))
    if value < 1:
        raise StubVllmArgumentError(f"argument {name}: must be at least 1, got {value}")
    return value


def _max_model_len(value: str | None) -> int:
    """vLLM's human-readable ints: 1k = 1000, 1K = 1024; -1 and auto mean "from the model"."""
    if value is None or value in {"auto", "-1"}:
        return DEFAULT_MAX_MODEL_LEN
    multipliers = {"k": 10**3, "m": 10**6, "g": 10**9, "K": 2**10, "M": 2**20, "G": 2**30}
    suffix = value[-1]
    scale = multipliers.get(suffix)
    length = int(value) if scale is None else int(float(value[:-1]) * scale)
    if length < 1:
        raise StubVllmArgumentError(f"argument --max-model-len: invalid value {value!r}")
    return length


def _speculative(options: Mapping[str, Any]) -> tuple[str | None, int]:
    config = options.get("--speculative-config")
    if config is None and "--spec-method" not in options:
        return None, 0
    if config is None:
        config = {}
    if not isinstance(config, dict):
        raise StubVllmArgumentError(
            f"argument --speculative-config/-sc: expected a JSON object, got {json.dumps(config)}"
        )
    method = options.get("--spec-method", config.get("method"))
    tokens = options.get("--spec-tokens", config.get("num_speculative_tokens"))
    if tokens is None and method in MTP_METHODS:
        tokens = 1
    if not isinstance(method, str) or not method:
        raise StubVllmArgumentError("argument --speculative-config/-sc: 'method' is required")
    try:
        count = int(tokens)
    except (TypeError, ValueError):
        count = 0
    if count < 1:
        raise StubVllmArgumentError(
            "argument --speculative-config/-sc: num_speculative_tokens must be a positive "
            f"integer, got {tokens!r}"
        )
    return method, count


def _reasoning_parser(options: Mapping[str, Any]) -> str | None:
    """vLLM's ``validate_api_server_args``: the parser must be built in (a plugin file registers
    parsers under names of its own choosing), as the tool-call parser with auto tool choice."""
    tool = options.get("--tool-call-parser")
    if (
        options.get("--enable-auto-tool-choice")
        and "--tool-parser-plugin" not in options
        and tool not in tool_call_parsers()
    ):
        choices = ",".join(tool_call_parsers())
        raise StubVllmStartError(f"invalid tool call parser: {tool} (chose from {{ {choices} }})")
    name = options.get("--reasoning-parser")
    if name is None or name == "" or "--reasoning-parser-plugin" in options:
        return name if isinstance(name, str) and name else None
    if name not in reasoning_parsers():
        choices = ",".join(reasoning_parsers())
        raise StubVllmStartError(f"invalid reasoning parser: {name} (chose from {{ {choices} }})")
    return str(name)


def _mm_limits(value: Any) -> dict[str, int]:
    """`{"image": 8, "video": 2}` or `{"video": {"count": 1, "num_frames": 32}}` -> counts."""
    if value is None:
        return {}
    problem = f"argument --limit-mm-per-prompt: expected modality limits, got {json.dumps(value)}"
    if not isinstance(value, dict):
        raise StubVllmArgumentError(problem)
    limits: dict[str, int] = {}
    for modality, limit in value.items():
        count = limit.get("count") if isinstance(limit, dict) else limit
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise StubVllmArgumentError(problem)
        limits[str(modality)] = count
    return limits
