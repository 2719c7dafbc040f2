"""The stand-in vLLM's flag table: every option of the real ``vllm serve`` parser, how it takes
its value, its choices and default, and the reasoning and tool-call parsers the engine has built
in, derived from the real engine's recorded parser and nothing else (never from the operator's
flag table, which this stand-in is a witness against).

``data/serve-flags.json`` is generated from ``tests/contract/vllm-<release>-cpu/serve-parser.json``
(recorded by ``hack/record-vllm-contract.py --parser-only`` from vLLM's own
``make_arg_parser(FlexibleArgumentParser())``) with

    python -m nemotron_sim.vllm.flag_data tests/contract/vllm-0.32.0-cpu/serve-parser.json

and tests/unit/sim_vllm/test_recorded_facts.py fails when the two differ.
How an argparse action becomes a kind:

- ``BooleanOptionalAction`` → ``bool`` (``--x`` / ``--no-x``, no value); ``store_true`` →
  ``switch``; ``nargs="+"`` → ``list``; ``nargs="?"`` → ``optional`` (a value may follow);
  ``append`` → ``append``; an action with choices → ``choice``;
- otherwise the innermost value type: ``int``, ``float``, ``human_readable_int`` → ``human-int``,
  ``human_readable_int_or_auto`` → ``human-int-or-auto``, ``loads`` / ``parse_dataclass`` →
  ``json``, ``union_dict_and_str`` → ``json-or-str``, anything else → ``str``.

``nullable``: vLLM's ``optional_type`` wrapper, which takes ``None`` (and the empty string) for
"unset". ``typeName``: the outer type function's name, which argparse prints in "invalid X value";
``wraps``: the type a wrapper converts with (its failure reads "Value V cannot be converted to
<class 'int'>.").
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

DATA = "data/serve-flags.json"
_INNER_KINDS = {
    "int": "int",
    "float": "float",
    "human_readable_int": "human-int",
    "human_readable_int_or_auto": "human-int-or-auto",
    "loads": "json",
    "parse_dataclass": "json",
    "union_dict_and_str": "json-or-str",
}
_SKIPPED_ACTIONS = {"_HelpAction"}  # `--help` prints and exits; the stand-in never serves it


@dataclass(frozen=True)
class Flag:
    """One long option of ``vllm serve`` as the stand-in reads it."""

    name: str
    kind: str
    aliases: tuple[str, ...] = ()
    choices: tuple[Any, ...] = ()  # as the parser holds them: ints for an int flag, None
    item: str = "str"  # a list's item type: int or str
    nullable: bool = False
    type_name: str | None = None
    wraps: str | None = None  # the type a wrapper (optional_type, parse_type) converts with
    default: Any = None

    @property
    def spelled(self) -> str:
        """How argparse names the option in its errors: every option string, slash-joined."""
        negation = (f"--no-{self.name[2:]}",) if self.kind == "bool" else ()
        return "/".join((self.name, *negation, *self.aliases))


def derive(actions: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The stand-in's table from the recorded parser's actions (serve-parser.json)."""
    table: dict[str, dict[str, Any]] = {}
    for action in actions:
        if action["action"] in _SKIPPED_ACTIONS:
            continue
        options = list(action["options"])
        name = next(o for o in options if o.startswith("--"))
        kind = _kind(action)
        hidden = {name, f"--no-{name[2:]}"} if kind == "bool" else {name}
        entry: dict[str, Any] = {"kind": kind}
        aliases = [o for o in options if o not in hidden]
        if aliases:
            entry["aliases"] = aliases
        if action["choices"] is not None:
            entry["choices"] = list(action["choices"])
        types = [t for t in (action["type"], *action["wraps"]) if t]
        if kind == "list" and types and types[-1] == "int":
            entry["item"] = "int"
        if action["type"] == "_optional_type":
            entry["nullable"] = True
        if action["type"]:
            entry["typeName"] = action["type"]
        if action["wraps"]:
            entry["wraps"] = action["wraps"][-1]  # the innermost, whose failure is reported
        if action["default"] is not None and action["default"] != "==SUPPRESS==":
            entry["default"] = action["default"]
        table[name] = entry
    return table  # in the parser's order, which argparse lists an ambiguous prefix's matches in


def _kind(action: Mapping[str, Any]) -> str:
    kinds = {"BooleanOptionalAction": "bool", "_StoreTrueAction": "switch"}
    if action["action"] in kinds:
        return kinds[action["action"]]
    if action["nargs"] == "+":
        return "list"
    if action["nargs"] == "?":
        return "optional"
    if action["action"] == "_AppendAction":
        return "append"
    if action["choices"] is not None:
        return "choice"
    types = [t for t in (action["type"], *action["wraps"]) if t]
    return _INNER_KINDS.get(types[-1], "str") if types else "str"


def render(recorded: Mapping[str, Any]) -> str:
    """The data file's text for a recorded parser: one flag a line, so a diff reads per flag."""
    head = {
        "release": recorded["release"],
        "source": (
            f"vLLM {recorded['release']}'s own `vllm serve` parser, recorded by "
            "hack/record-vllm-contract.py --parser-only into "
            f"tests/contract/vllm-{recorded['release']}-cpu/serve-parser.json; generated by "
            "python -m nemotron_sim.vllm.flag_data (never edited by hand)"
        ),
        # what `vllm serve` checks --reasoning-parser and --tool-call-parser against
        "reasoningParsers": list(recorded["reasoningParsers"]),
        "toolCallParsers": list(recorded["toolCallParsers"]),
    }
    lines = [f"  {json.dumps(k)}: {json.dumps(v, sort_keys=True)}," for k, v in head.items()]
    flags = derive(recorded["actions"]).items()
    rows = [f"    {json.dumps(k)}: {json.dumps(v, sort_keys=True)}" for k, v in flags]
    return "{\n" + "\n".join(lines) + '\n  "flags": {\n' + ",\n".join(rows) + "\n  }\n}\n"


@functools.cache
def release() -> str:
    """The vLLM release whose parser the table was derived from."""
    return str(load_json(DATA)["release"])


@functools.cache
def reasoning_parsers() -> tuple[str, ...]:
    """The reasoning parsers the release has built in, in vLLM's order."""
    return tuple(load_json(DATA)["reasoningParsers"])


@functools.cache
def tool_call_parsers() -> tuple[str, ...]:
    """The tool-call parsers the release has built in, in vLLM's order."""
    return tuple(load_json(DATA)["toolCallParsers"])


@functools.cache
def flags() -> dict[str, Flag]:
    """The table by canonical long name."""
    return {
        name: Flag(
            name=name,
            kind=entry["kind"],
            aliases=tuple(entry.get("aliases", ())),
            choices=tuple(entry.get("choices", ())),
            item=entry.get("item", "str"),
            nullable=bool(entry.get("nullable", False)),
            type_name=entry.get("typeName"),
            wraps=entry.get("wraps"),
            default=entry.get("default"),
        )
        for name, entry in load_json(DATA)["flags"].items()
    }


def load_json(name: str) -> dict[str, Any]:
    """A JSON file of the package (``data/...``), as a dict."""
    text = resources.files("nemotron_sim.vllm").joinpath(name).read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def main(argv: Sequence[str]) -> int:
    if len(argv) != 1:
        sys.stderr.write("usage: python -m nemotron_sim.vllm.flag_data SERVE_PARSER_JSON\n")
        return 2
    recorded = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    target = Path(__file__).resolve().parent / DATA
    target.write_text(render(recorded), encoding="utf-8")
    sys.stderr.write(f"wrote {target.name}: {len(derive(recorded['actions']))} flags\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
