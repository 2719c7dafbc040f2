"""Reading a `vllm serve` argument list the way the pinned vLLM would: each flag looked up in
the table (``catalog.vllm_flag_table``, re-exported here), its value checked by its kind.

Pure. Used by the renderer (every rendered flag must be known; every extraArgs flag is checked)
and by the stand-in vLLM (it refuses what real vLLM would refuse).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from nemotron_operator.catalog.vllm_flag_table import (
    BY_SPELLING,
    DENIED,
    FLAGS,
    OWNED_BY_FIELD,
    REMOVED,
    VLLM_VERSION,
    Kind,
    VllmFlag,
)
from nemotron_operator.catalog.vllm_release_flags import ReleaseSurface

__all__ = [
    "DENIED",
    "FLAGS",
    "OWNED_BY_FIELD",
    "REMOVED",
    "VLLM_VERSION",
    "FlagError",
    "FlagUse",
    "Kind",
    "VllmFlag",
    "canonical",
    "lookup",
    "parse_args",
    "parse_serve_command",
]


class FlagError(ValueError):
    """An argument vLLM would refuse; ``index`` is its position in the argument list."""

    def __init__(self, index: int, message: str) -> None:
        self.index = index
        super().__init__(message)


@dataclass(frozen=True)
class FlagUse:
    """One flag as it appears in an argument list."""

    flag: VllmFlag
    spelled: str
    value: str | tuple[str, ...] | None
    negated: bool
    index: int
    sub_key: str | None = None  # "method" in --speculative-config.method


_HUMAN_INT = re.compile(r"^(auto|-1|[0-9]+(\.[0-9]+)?[kKmMgG]?)$")


def _normalise(option: str) -> str:
    """Underscores → dashes in the flag name only: a dotted JSON sub-key
    (``--speculative-config.num_speculative_tokens``) keeps its own spelling."""
    if option.startswith("--"):
        name, dot, sub_key = option[2:].partition(".")
        return "--" + name.replace("_", "-") + dot + sub_key
    return option


def lookup(option: str) -> tuple[VllmFlag, bool, str | None] | None:
    """Resolve one spelling (``--tp``, ``--max_model_len``, ``--no-enable-prefix-caching``,
    ``--speculative-config.method``) to (flag, negated, JSON sub-key), or None if unknown."""
    spelled = _normalise(option.split("=", 1)[0])
    if spelled in BY_SPELLING:
        return BY_SPELLING[spelled], False, None
    if spelled.startswith("--no-"):
        flag = FLAGS.get("--" + spelled[5:])
        if flag is not None and flag.kind is Kind.BOOL:
            return flag, True, None
    head, dot, sub_key = spelled.partition(".")
    if dot and sub_key:
        flag = BY_SPELLING.get(head)
        if flag is not None and flag.kind is Kind.JSON:
            return flag, False, sub_key
    return None


def canonical(option: str) -> str | None:
    """The canonical long name of a spelling, or None if vLLM has no such flag."""
    found = lookup(option)
    return None if found is None else found[0].name


def _is_option(token: str) -> bool:
    return token.startswith("-") and not _looks_numeric(token)


def _looks_numeric(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _check_value(flag: VllmFlag, value: str, index: int, sub_key: str | None) -> None:
    if sub_key is not None:
        return  # a dotted JSON sub-key takes any scalar
    problem = None
    if flag.kind is Kind.INT and not re.fullmatch(r"-?[0-9]+", value):
        problem = "an integer"
    elif flag.kind is Kind.FLOAT and not _looks_numeric(value):
        problem = "a number"
    elif flag.kind is Kind.HUMAN_INT and not _HUMAN_INT.match(value):
        problem = "an integer (k/M/G suffixes allowed) or auto"
    elif flag.kind is Kind.CHOICE and value not in flag.choices:
        problem = "one of " + ", ".join(flag.choices)
    elif flag.kind is Kind.JSON:
        try:
            json.loads(value)
        except ValueError:
            problem = "valid JSON"
    if problem is not None:
        raise FlagError(index, f"{flag.name} takes {problem}, got {value!r}")


def parse_args(
    args: Sequence[str], *, offset: int = 0, release: ReleaseSurface | None = None
) -> list[FlagUse]:
    """Split an argument list (no positional arguments) into flags with their values, the way
    vLLM's parser would; raise FlagError on the first argument it would refuse. Indices in the
    result and in errors are positions in ``args`` plus ``offset``. With ``release``, a flag (or
    a spelling) that release does not have is refused, naming the release."""
    try:
        uses = _parse(args, release)
        if release is not None:
            check_release(uses, release)
    except FlagError as exc:
        raise FlagError(exc.index + offset, str(exc)) from None
    return [replace(u, index=u.index + offset) for u in uses]


def check_release(uses: Sequence[FlagUse], release: ReleaseSurface) -> None:
    """Raise FlagError for the first flag (or short alias) ``release`` does not accept."""
    for use in uses:
        name = use.flag.name
        if name not in release.flags:
            raise FlagError(use.index, f"vLLM {release.release} has no flag {name}")
        spelled = _normalise(use.spelled).split(".", 1)[0]
        if not spelled.startswith("--") and release.aliases.get(spelled) != name:
            raise FlagError(
                use.index, f"vLLM {release.release} has no option {spelled} (use {name})"
            )


def _unknown(name: str, release: ReleaseSurface | None) -> str:
    if release is None:
        return REMOVED.get(name, f"vLLM {VLLM_VERSION} has no flag {name}")
    if release.has_flag(name):
        return (
            f"{name} exists in vLLM {release.release}, but the operator's flag table "
            "(catalog/vllm_flag_table.py) does not know how it takes its value, so it cannot be "
            "checked"
        )
    return REMOVED.get(name, f"vLLM {release.release} has no flag {name}")


def _parse(args: Sequence[str], release: ReleaseSurface | None = None) -> list[FlagUse]:
    uses: list[FlagUse] = []
    i = 0
    while i < len(args):
        token = args[i]
        if not _is_option(token):
            raise FlagError(i, f"unexpected value {token!r}: every argument must start with --")
        found = lookup(token)
        if found is None:
            name = _normalise(token.split("=", 1)[0])
            raise FlagError(i, _unknown(name, release))
        flag, negated, sub_key = found
        inline = token.split("=", 1)[1] if "=" in token else None
        start = i
        value: str | tuple[str, ...] | None
        if flag.kind in (Kind.BOOL, Kind.SWITCH) and sub_key is None:
            if inline is not None:
                raise FlagError(i, f"{flag.name} is a switch and takes no value (use --no-… off)")
            value = None
        elif flag.kind is Kind.LIST and inline is None:
            values = []
            while i + 1 < len(args) and not _is_option(args[i + 1]):
                i += 1
                values.append(args[i])
            if not values:
                raise FlagError(start, f"{flag.name} needs at least one value")
            value = tuple(values)
        else:
            if inline is None:
                if i + 1 >= len(args) or _is_option(args[i + 1]):
                    raise FlagError(i, f"{flag.name} needs a value")
                i += 1
                inline = args[i]
            _check_value(flag, inline, start, sub_key)
            value = inline
        uses.append(FlagUse(flag, token.split("=", 1)[0], value, negated, start, sub_key))
        i += 1
    return uses


def parse_serve_command(
    argv: Sequence[str], *, release: ReleaseSurface | None = None
) -> tuple[str, list[FlagUse]]:
    """Parse ``["vllm", "serve", MODEL, *flags]`` into (MODEL, flags); with ``release``, as that
    release's parser would."""
    if len(argv) < 3 or list(argv[:2]) != ["vllm", "serve"] or _is_option(argv[2]):
        raise FlagError(0, "expected: vllm serve MODEL [flags...]")
    return argv[2], parse_args(argv[3:], offset=3, release=release)
