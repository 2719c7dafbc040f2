"""Known-bad vLLM combinations for Nemotron models, as data: which combination, what vLLM does
with it, where that is documented, and what the operator does about it. Beside the flag table
(``catalog.vllm_flag_table``): the flag table says which flags exist; these rules say which
combinations of existing flags fail.

Each rule is checked against the vLLM of the image (``spec.engine.image``; an image whose tag is
not a version counts as the pinned ``VLLM_VERSION``). Actions:

- ``refuse``: the spec is not served; the field named is what to change (``Feasible=False``).
- ``fix``: the operator passes the flags that avoid the failure and says so in
  ``status.plan.notes`` (and ``plan``/``render`` output).
- ``warn``: served as asked, with a note; the behavioural check before traffic (see
  docs/controller.md) catches the misbehaviours a warning names.

docs/compatibility.md lists every rule with its source, and the rules dropped at the pinned
version with the reason. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from nemotron_operator.catalog.vllm_flag_table import VLLM_VERSION

Version = tuple[int, int, int]


class Action(StrEnum):
    REFUSE = "refuse"
    FIX = "fix"
    WARN = "warn"


class Behaviour(StrEnum):
    """What vLLM does with the combination."""

    REFUSES = "refuses"
    CRASHES = "crashes"
    IGNORES = "silently ignores"
    MISBEHAVES = "misbehaves"


def parse_version(text: str) -> Version | None:
    """``v0.31.0``, ``0.31.0`` or ``0.31.0-cu130`` → (0, 31, 0); None for anything else."""
    found = re.fullmatch(r"v?(\d+)\.(\d+)\.(\d+)(?:[-+.].*)?", text)
    return None if found is None else (int(found[1]), int(found[2]), int(found[3]))


PINNED: Version = parse_version(VLLM_VERSION) or (0, 0, 0)


def image_version(image: str) -> Version:
    """The vLLM version an image runs, read from its tag; the pinned version when the tag is not
    a version (a digest, ``latest``, a custom build)."""
    name = image.split("@", 1)[0]
    tag = name.rsplit(":", 1)[1] if ":" in name.rsplit("/", 1)[-1] else ""
    return parse_version(tag) or PINNED


@dataclass(frozen=True)
class RuleInput:
    """What the rules look at: the spec's engine settings resolved against the model and the
    plan. ``family`` is the catalog's ("Nemotron 3 Super 120B-A12B"); ``hybrid``: the model has
    Mamba layers. Parser names are the ones the command line will carry (None: off)."""

    family: str
    hybrid: bool
    vllm: Version
    prefix_caching: bool
    speculative_tokens: int
    max_model_len: int
    block_size: int
    mamba_ssm_cache_dtype: str
    reasoning_parser: str | None
    reasoning_parser_field: str  # the spec field that chose it
    default_reasoning_parser: str | None
    tool_call_parser: str | None
    extra_args: tuple[str, ...] = ()


@dataclass(frozen=True)
class Fired:
    """One rule that applies: the field to change or that caused it, the message, and the flags
    a fix adds to the command line."""

    rule: Rule
    field: str
    message: str
    args: tuple[str, ...] = ()

    @property
    def action(self) -> Action:
        return self.rule.action

    @property
    def note(self) -> str:
        """The line in ``status.plan.notes``."""
        verb = {Action.FIX: "fixed", Action.WARN: "warning", Action.REFUSE: "refused"}
        return f"vLLM rule {self.rule.id} ({verb[self.action]}): {self.message}"[:512]


Check = Callable[["Rule", RuleInput], "Fired | None"]


@dataclass(frozen=True)
class Rule:
    id: str
    combination: str
    behaviour: Behaviour
    what_vllm_does: str
    source: str
    affected: str  # the vLLM versions affected, as the source says
    action: Action
    check: Check
    first: Version | None = None  # the rule applies from this version (None: all before)
    fixed_in: Version | None = None  # ...up to, not including, this one (None: still open)
    models: str = "hybrid models (Mamba layers)"  # the architectures it concerns

    def applies_to(self, version: Version) -> bool:
        return (self.first is None or version >= self.first) and (
            self.fixed_in is None or version < self.fixed_in
        )


def _tier(family: str) -> str | None:
    for tier in ("Ultra", "Super", "Nano", "Lightning"):
        if tier in family.split():
            return "Nano" if tier == "Lightning" else tier
    return None


# The reasoning-parser plugins NVIDIA ships in each model repository, by model tier.
PLUGIN_PARSER_TIER = {"nano_v3": "Nano", "super_v3": "Super", "ultra_v3": "Ultra"}
NEMOTRON_BUILT_IN_PARSER = "nemotron_v3"


def _mtp_prefix_caching(rule: Rule, x: RuleInput) -> Fired | None:
    if not (x.hybrid and x.prefix_caching and x.speculative_tokens > 0):
        return None
    return Fired(
        rule,
        "spec.engine.enablePrefixCaching",
        "MTP with prefix caching on a hybrid model: passing --mamba-cache-mode align, the only "
        "Mamba cache mode that starts with MTP (vllm#39809)",
        ("--mamba-cache-mode", "align"),
    )


def _prefix_caching_inert(rule: Rule, x: RuleInput) -> Fired | None:
    if not (x.hybrid and x.prefix_caching and x.max_model_len < x.block_size):
        return None
    return Fired(
        rule,
        "spec.engine.enablePrefixCaching",
        f"prefix caching does nothing: maxModelLen {x.max_model_len} is below the hybrid KV "
        f"block of {x.block_size} tokens and vLLM caches whole blocks only (vllm#48401); set "
        "spec.engine.enablePrefixCaching: false (saves one Mamba state slot per sequence) or "
        f"raise spec.engine.maxModelLen to at least {x.block_size}",
    )


def _prefix_cache_granularity(rule: Rule, x: RuleInput) -> Fired | None:
    if not (x.hybrid and x.prefix_caching and x.max_model_len >= x.block_size):
        return None
    return Fired(
        rule,
        "spec.engine.enablePrefixCaching",
        f"prefix caching reuses whole blocks of {x.block_size} tokens only: a shared prefix "
        "shorter than one block is never a hit (vllm#54504)",
    )


def _ssm_dtype(rule: Rule, x: RuleInput) -> Fired | None:
    if not x.hybrid or x.mamba_ssm_cache_dtype == "float32":
        return None
    field = "spec.engine.mambaSsmCacheDtype"
    if _tier(x.family) == "Ultra":
        if rule.action is not Action.REFUSE:
            return None
        return Fired(
            rule,
            field,
            f"{x.mamba_ssm_cache_dtype} Mamba SSM state is not how Nemotron 3 Ultra is served: "
            "its vLLM recipe runs float32 (vllm-project/recipes#509): set "
            "spec.engine.mambaSsmCacheDtype: float32",
        )
    if rule.action is not Action.WARN:
        return None
    return Fired(
        rule,
        field,
        f"{x.mamba_ssm_cache_dtype} Mamba SSM state: only float32 is known to keep NemotronH "
        "accuracy (vllm PR #39032); answers may degrade",
    )


def _reasoning_config(rule: Rule, x: RuleInput) -> Fired | None:
    if x.reasoning_parser != NEMOTRON_BUILT_IN_PARSER:
        return None
    for index, arg in enumerate(x.extra_args):
        name = arg.split("=", 1)[0].split(".", 1)[0].replace("_", "-")
        if name == "--reasoning-config":
            return Fired(
                rule,
                f"spec.engine.extraArgs[{index}]",
                "--reasoning-config with the nemotron_v3 reasoning parser leaves every answer's "
                "content null (vllm#39103): remove it",
            )
    return None


def _reasoning_parser_family(rule: Rule, x: RuleInput) -> Fired | None:
    parser, tier = x.reasoning_parser, _tier(x.family)
    if parser is None or tier is None or x.default_reasoning_parser is None:
        return None
    parser_tier = PLUGIN_PARSER_TIER.get(parser)
    if parser_tier is not None and parser_tier != tier:
        why = f"{parser} is the Nemotron 3 {parser_tier} parser, not {tier}'s"
    elif parser_tier is None and parser != NEMOTRON_BUILT_IN_PARSER:
        why = f"{parser} is not a Nemotron parser"
    else:
        return None
    return Fired(
        rule,
        x.reasoning_parser_field,
        f"{why}: thinking text can stay in the answer (NVIDIA-NeMo/Nemotron#259); use "
        f"{NEMOTRON_BUILT_IN_PARSER} or the model repository's own plugin",
    )


def _mtp_structured_output(rule: Rule, x: RuleInput) -> Fired | None:
    if x.speculative_tokens == 0:
        return None
    what = "tool calls and JSON-schema output" if x.tool_call_parser else "JSON-schema output"
    return Fired(
        rule,
        "spec.engine.speculativeDecoding",
        f"{what} with MTP have broken in vLLM releases (anyscale/templates#1086, vllm PR "
        "#44993): the behavioural check tests them before the pod takes traffic",
    )


RULES: tuple[Rule, ...] = (
    Rule(
        "mtp-prefix-caching-mamba-align",
        "hybrid model + MTP + prefix caching, Mamba cache mode other than align",
        Behaviour.CRASHES,
        "with --mamba-cache-mode all (the default with prefix caching before PR #40454) the "
        "MTP drafter crashes the engine at start-up",
        "vllm-project/vllm#39809; default changed by vllm-project/vllm#40454 (opened 2026-04-21, "
        "merged)",
        "v0.19 and earlier crash; later versions choose align themselves when speculative "
        "decoding is on (v0.31.0 included), so the flag pins the working mode. From 0.32 "
        "'all' is no longer a mode (MambaCacheMode is align|none): the rule stops there",
        Action.FIX,
        _mtp_prefix_caching,
        # Kept at 0.31, where it only restates vLLM's choice, so that the command of a deployment
        # pinned to v0.31.0 does not change (no restart on an operator upgrade).
        fixed_in=(0, 32, 0),
    ),
    Rule(
        "prefix-caching-inert-below-block",
        "hybrid model + prefix caching + maxModelLen below the hybrid KV block size",
        Behaviour.IGNORES,
        "accepts prefix caching, then never records a hit: no request fills a whole block",
        "vllm-project/vllm#48401 (open; PR #48402 would only log a warning)",
        "reported on v0.23.1rc1; no fix up to 0.34.0 (align mode checkpoints the Mamba state at "
        "block boundaries only: mamba_block_size = block_size)",
        Action.WARN,
        _prefix_caching_inert,
    ),
    Rule(
        "prefix-cache-block-granularity",
        "hybrid model + prefix caching (maxModelLen at least one block)",
        Behaviour.IGNORES,
        "caches whole blocks of the raised hybrid block size only, so shared prefixes shorter "
        "than a block (system prompts, early chat turns) stay at zero hits",
        "vllm-project/vllm#54504 (open), vllm-project/vllm#53749 (open)",
        "reported on v0.28.0 and nightly 2026-08-30; no fix up to 0.34.0 (0.32's "
        "--prefix-match-unit refines matching only, not where Mamba states are stored)",
        Action.WARN,
        _prefix_cache_granularity,
    ),
    Rule(
        "ultra-mamba-ssm-float32",
        "Nemotron 3 Ultra + mambaSsmCacheDtype float16 or bfloat16",
        Behaviour.MISBEHAVES,
        "serves with reduced-precision SSM state: no error, lower accuracy",
        "vllm-project/recipes#509 (Ultra recipe: --mamba-ssm-cache-dtype float32); "
        "vllm-project/vllm#39032",
        "all versions (a property of the model)",
        Action.REFUSE,
        _ssm_dtype,
        models="Nemotron 3 Ultra (NemotronHForCausalLM)",
    ),
    Rule(
        "nemotron-h-mamba-ssm-reduced-precision",
        "NemotronH (not Ultra) + mambaSsmCacheDtype float16 or bfloat16",
        Behaviour.MISBEHAVES,
        "serves with reduced-precision SSM state: no error, possibly lower accuracy",
        "vllm-project/vllm#39032 (float32 made the NemotronH default: the only dtype known to "
        "have no accuracy issues)",
        "all versions (a property of the model)",
        Action.WARN,
        _ssm_dtype,
        models="NemotronH other than Ultra",
    ),
    Rule(
        "reasoning-config-nemotron-v3",
        "--reasoning-config in extraArgs + the nemotron_v3 reasoning parser",
        Behaviour.MISBEHAVES,
        "puts every generated token in reasoning: content is null and thinking is unbounded",
        "vllm-project/vllm#39103 (open)",
        "reported on v0.19.1rc1; no fix up to v0.31.0",
        Action.REFUSE,
        _reasoning_config,
        models="Nemotron reasoning models (nemotron_v3 parser)",
    ),
    Rule(
        "reasoning-parser-wrong-family",
        "Nemotron reasoning model + another tier's plugin parser (nano_v3 on Super, ...) or a "
        "non-Nemotron built-in parser",
        Behaviour.MISBEHAVES,
        "starts; thinking text stays in content or streamed tool calls are lost",
        "NVIDIA-NeMo/Nemotron#259 (nano_v3 on Super); eugr/spark-vllm-docker#234",
        "all versions (a property of the parser)",
        Action.WARN,
        _reasoning_parser_family,
        models="Nemotron 3 / 3.5 reasoning models of the catalog",
    ),
    Rule(
        "mtp-structured-output",
        "MTP speculative decoding + tool calls or response_format JSON schema",
        Behaviour.MISBEHAVES,
        "returns invalid JSON or unparsed tool calls in some releases",
        "anyscale/templates#1086 (vLLM 0.25.1); vllm-project/vllm#44993 (grammar across the "
        "reasoning boundary with speculative decoding)",
        "seen on v0.25.1; the behavioural check verifies the pinned image",
        Action.WARN,
        _mtp_structured_output,
        models="models with an MTP head",
    ),
)


def evaluate(facts: RuleInput, rules: Sequence[Rule] = RULES) -> tuple[Fired, ...]:
    """Every rule that fires for ``facts``, in table order."""
    fired = []
    for rule in rules:
        if not rule.applies_to(facts.vllm):
            continue
        found = rule.check(rule, facts)
        if found is not None:
            fired.append(found)
    return tuple(fired)
