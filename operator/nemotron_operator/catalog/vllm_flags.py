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
from nemotron_operator.catalog.vllm_release_flags import ReleaseSurface, newest_surface

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
    "choices",
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


# vLLM's human_readable_int: int(value), or a decimal suffix k/m/g/t (decimals allowed) or a
# binary one K/M/G/T (whole numbers only); ..._or_auto also takes "auto" in any case and -1.
_HUMAN_INT = re.compile(r"\s*([-+]?[0-9]+|[0-9]+(\.[0-9]+)?[kmgt]|[0-9]+[KMGT])\s*")


def _normalise(option: str) -> str:
    """Underscores → dashes in the flag name only: a dotted JSON sub-key
    (``--speculative-config.num_speculative_tokens``) keeps its own spelling."""
    if option.startswith("--"):
        name, dot, sub_key = option[2:].partition(".")
        return "--" + name.replace("_", "-") + dot + sub_key
    return option


def lookup(
    option: str, release: ReleaseSurface | None = None
) -> tuple[VllmFlag, bool, str | None] | None:
    """Resolve one spelling (``--tp``, ``--max_model_len``, ``--no-enable-prefix-caching``,
    ``--speculative-config.method``, a release's alias such as ``-dpa``) to (flag, negated, JSON
    sub-key), or None if unknown. Aliases are ``release``'s (default: the newest profile's)."""
    spelled = _normalise(option.split("=", 1)[0])
    if spelled in BY_SPELLING:
        return BY_SPELLING[spelled], False, None
    alias_of = (release or newest_surface()).aliases.get(spelled)
    if alias_of is not None and alias_of in FLAGS:
        return FLAGS[alias_of], False, None
    if spelled.startswith("--no-"):
        flag = FLAGS.get("--" + spelled[5:])
        if flag is not None and flag.kind is Kind.BOOL:
            return flag, True, None
    head, dot, sub_key = spelled.partition(".")
    if dot and sub_key:
        flag = BY_SPELLING.get(head)
        if flag is not None and flag.kind in (Kind.JSON, Kind.JSON_OR_STR):
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


def choices(flag: VllmFlag, release: ReleaseSurface | None) -> tuple[str, ...]:
    """A CHOICE flag's values: the table's, else the release's generated ones."""
    return flag.choices or (release or newest_surface()).choices.get(flag.name, ())


def _check_value(
    flag: VllmFlag, value: str, index: int, sub_key: str | None, release: ReleaseSurface | None
) -> None:
    if sub_key is not None:
        return  # a dotted JSON sub-key takes any scalar
    problem = None
    accepted = choices(flag, release)
    as_read = value.lower().replace("-", "_") if flag.folded else value
    if flag.kind in (Kind.INT, Kind.INT_LIST) and not re.fullmatch(r"-?[0-9]+", value):
        problem = "an integer"
    elif flag.kind is Kind.FLOAT and not _looks_numeric(value):
        problem = "a number"
    elif flag.kind is Kind.HUMAN_INT and not _HUMAN_INT.fullmatch(value):
        problem = "an integer (suffixes k/m/g/t ×1000, K/M/G/T ×1024; no auto)"
    elif (
        flag.kind is Kind.HUMAN_INT_OR_AUTO
        and value.lower() != "auto"
        and not _HUMAN_INT.fullmatch(value)
    ):
        problem = "an integer (suffixes k/m/g/t ×1000, K/M/G/T ×1024), auto or -1"
    elif flag.kind in (Kind.CHOICE, Kind.LIST) and accepted and as_read not in accepted:
        problem = "one of " + ", ".join(accepted)
    elif flag.kind is Kind.JSON or (
        flag.kind is Kind.JSON_OR_STR and re.fullmatch(r"(?s)\s*\{.*\}\s*", value)
    ):
        try:
            json.loads(value)
        except ValueError:
            problem = "valid JSON"
    if problem is not None:
        who = f"vLLM {(release or newest_surface()).release}'s {flag.name}"
        raise FlagError(index, f"{who} takes {problem}, got {value!r}")


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


def _abbreviated(name: str, release: ReleaseSurface | None) -> str | None:
    """The one flag ``name`` abbreviates (argparse accepts a unique prefix of a long option)."""
    surface = release or newest_surface()
    if not name.startswith("--") or len(name) < 3 or surface.has_flag(name):
        return None
    spellings = {s for s in (*surface.flags, *surface.aliases) if s.startswith("--")}
    candidates = {surface.aliases.get(s, s) for s in spellings if s.startswith(name)}
    return candidates.pop() if len(candidates) == 1 else None


def _unknown(name: str, release: ReleaseSurface | None) -> str:
    full = _abbreviated(name, release)
    if full is not None:
        return (
            f"{name} is an abbreviation vLLM would read as {full}; spell the full flag (the "
            "operator checks every flag by its full name)"
        )
    if release is None:
        return REMOVED.get(name, f"vLLM {VLLM_VERSION} has no flag {name}")
    if release.has_flag(name):
        return (
            f"{name} exists in vLLM {release.release}, but the operator's flag table "
            "(catalog/vllm_flag_table.py) does not know how it takes its value, so it cannot be "
            "checked"
        )
    return REMOVED.get(name, f"vLLM {release.release} has no flag {name}")


def _stray_value(index: int, token: str, uses: Sequence[FlagUse]) -> FlagError:
    if uses and uses[-1].flag.kind is Kind.APPEND:
        name = uses[-1].flag.name
        return FlagError(index, f"{name} takes one value per occurrence: repeat {name}")
    return FlagError(index, f"unexpected value {token!r}: every argument must start with --")


def _parse(args: Sequence[str], release: ReleaseSurface | None = None) -> list[FlagUse]:
    uses: list[FlagUse] = []
    i = 0
    while i < len(args):
        token = args[i]
        if not _is_option(token):
            raise _stray_value(i, token, uses)
        found = lookup(token, release)
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
        elif flag.kind in (Kind.LIST, Kind.INT_LIST) and inline is None:
            values = []
            while i + 1 < len(args) and not _is_option(args[i + 1]):
                i += 1
                values.append(args[i])
            if not values:
                raise FlagError(start, f"{flag.name} needs at least one value")
            for value_index, item in enumerate(values, start + 1):
                _check_value(flag, item, value_index, None, release)
            value = tuple(values)
        else:
            if inline is None:
                if i + 1 >= len(args) or _is_option(args[i + 1]):
                    raise FlagError(i, f"{flag.name} needs a value")
                i += 1
                inline = args[i]
            _check_value(flag, inline, start, sub_key, release)
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
