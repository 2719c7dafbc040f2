"""Read a `vllm serve` argument list as vLLM's argparse parser does, from the stand-in's own flag
table (``flag_data``, derived from the real parser's recording), and refuse it with argparse's
words where vLLM would.

What is copied from vLLM's ``FlexibleArgumentParser`` (vllm/utils/argparse_utils.py) and Python's
argparse: ``--a_b`` means ``--a-b``; ``--x=v`` and ``--x v``; a unique prefix of a long option
stands for it (argparse's ``allow_abbrev``: ``--max-model 4`` is ``--max-model-len 4``); a token
that looks like a negative number is a value; ``--json-flag.key value`` sets one key of a JSON
flag; every argument left over is reported at once as "unrecognized arguments". Not copied: the
ambiguity of a prefix among several options is reported, but a dotted key of a non-JSON flag is
simply unknown here, and choices are compared as written (vLLM lower-cases a few backends).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from nemotron_sim.vllm.flag_data import Flag, flags

_HUMAN = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")
_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")  # argparse's _negative_number_matcher
_CLASSES = frozenset({"int", "float", "str"})
# The flag kinds whose value a plain conversion checks, as the type function converts it.
_CONVERSIONS: dict[str, Callable[[str], object]] = {"int": int, "float": float, "json": json.loads}


class ParseError(ValueError):
    """vLLM's parser refuses the arguments; the message is argparse's, without the usage line."""


@dataclass(frozen=True)
class FlagUse:
    """One flag as it appears in an argument list, its value checked."""

    flag: Flag
    value: str | tuple[str, ...] | None
    negated: bool = False
    sub_key: str | None = None  # "method" in --speculative-config.method


@functools.cache
def _spellings() -> dict[str, tuple[Flag, bool]]:
    """Every option string → (flag, negated), built once."""
    found: dict[str, tuple[Flag, bool]] = {}
    for flag in flags().values():  # argparse's order: the actions', each one's option strings
        for spelled in flag.spelled.split("/"):
            found[spelled] = (flag, spelled == f"--no-{flag.name[2:]}" and flag.kind == "bool")
    return found


def lookup(option: str) -> tuple[Flag, bool, str | None] | None:
    """(flag, negated, JSON sub-key) for one spelling, exact or a unique prefix; None if unknown.
    Raises ParseError for a prefix of several options, as argparse does."""
    name = option.split("=", 1)[0]
    if name.startswith("--"):
        head, dot, sub_key = name[2:].partition(".")
        name = "--" + head.replace("_", "-")
        if dot:
            found = _spellings().get(name)
            if found is None or not found[0].kind.startswith("json") or not sub_key:
                return None
            return found[0], False, sub_key
    spellings = _spellings()
    if name in spellings:
        flag, negated = spellings[name]
        return flag, negated, None
    if not name.startswith("--") or len(name) < 3:
        return None
    matches = [s for s in spellings if s.startswith(name)]
    if len({spellings[s] for s in matches}) > 1:
        raise ParseError(f"ambiguous option: {name} could match {', '.join(matches)}")
    return (*spellings[matches[0]], None) if matches else None


def _is_option(token: str) -> bool:
    return token.startswith("-") and len(token) > 1 and not _NUMBER.match(token)


def parse(args: Sequence[str]) -> list[FlagUse]:
    """The flags of ``args`` (everything after MODEL) in order; ParseError where vLLM refuses."""
    uses: list[FlagUse] = []
    extras: list[str] = []
    i = 0
    while i < len(args):
        token = args[i]
        found = lookup(token) if _is_option(token) else None
        if found is None:
            extras.append(token)
            i += 1
            continue
        flag, negated, sub_key = found
        inline = token.split("=", 1)[1] if "=" in token else None
        following: list[str] = []
        while i + 1 + len(following) < len(args) and not _is_option(args[i + 1 + len(following)]):
            following.append(args[i + 1 + len(following)])
        value, taken = _take(flag, sub_key, inline, following)
        uses.append(FlagUse(flag, value, negated, sub_key))
        i += 1 + taken
    if extras:
        raise ParseError(f"unrecognized arguments: {' '.join(extras)}")
    return uses


def _take(
    flag: Flag, sub_key: str | None, inline: str | None, following: Sequence[str]
) -> tuple[str | tuple[str, ...] | None, int]:
    """(value, how many following arguments it took)."""
    if flag.kind in ("bool", "switch"):
        if inline is not None:
            raise ParseError(f"argument {flag.spelled}: ignored explicit argument {inline!r}")
        return None, 0
    if flag.kind == "list" and sub_key is None:
        values = [inline] if inline is not None else list(following)
        if not values:
            raise ParseError(f"argument {flag.spelled}: expected at least one argument")
        for value in values:
            _check(flag, value, flag.item)
        return tuple(values), 0 if inline is not None else len(values)
    if inline is not None:
        value, taken = inline, 0
    elif following:
        value, taken = following[0], 1
    elif flag.kind == "optional":
        return None, 0
    else:
        raise ParseError(f"argument {flag.spelled}: expected one argument")
    if sub_key is None:
        _check(flag, value, flag.kind)
    return value, taken


def _check(flag: Flag, value: str, kind: str) -> None:
    """Convert ``value`` as the flag's type function would; raise argparse's error if it fails."""
    if flag.nullable and value in ("", "None"):
        return
    invalid = ParseError(f"argument {flag.spelled}: invalid {flag.type_name} value: {value!r}")
    if flag.wraps is not None:  # vLLM's parse_type: its own message, naming the inner type
        inner = f"<class '{flag.wraps}'>" if flag.wraps in _CLASSES else f"<function {flag.wraps}>"
        invalid = ParseError(
            f"argument {flag.spelled}: Value {value} cannot be converted to {inner}."
        )
    if kind == "choice":
        typed = flag.type_name == "int"
        if typed:
            _check(flag, value, "int")
        chosen = int(value) if typed else value
        if chosen not in flag.choices:  # argparse prints each as its repr: 'fp8', 16, None
            shown = ", ".join(repr(c) for c in flag.choices)
            raise ParseError(
                f"argument {flag.spelled}: invalid choice: {chosen!r} (choose from {shown})"
            )
    elif kind in _CONVERSIONS:
        try:
            _CONVERSIONS[kind](value)
        except ValueError:  # json.JSONDecodeError is one
            raise invalid from None
    elif kind.startswith("human-int"):
        _human_int(flag, value, auto=kind == "human-int-or-auto", invalid=invalid)


def _human_int(flag: Flag, value: str, *, auto: bool, invalid: ParseError) -> None:
    """vLLM's ``human_readable_int`` (and ``_or_auto``, which also takes ``auto``)."""
    text = value.strip()
    if auto and text.lower() == "auto":
        return
    match = _HUMAN.fullmatch(text)
    if match is not None:
        number, suffix = match.groups()
        if suffix.isupper() and "." in number:
            raise ParseError(
                f"argument {flag.spelled}: Decimals are not allowed with binary suffixes like "
                f"{suffix}. Did you mean to use {number}{suffix.lower()} instead?"
            )
        return
    try:
        int(text)
    except ValueError:
        raise invalid from None
