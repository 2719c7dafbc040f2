"""Building the input of the vLLM rules (``catalog.vllm_rules``) from a spec, the model and the
plan's numbers: shared by the planner (notes, refusals) and the renderer (the flags a fix adds),
so both see the same rules fire."""

from __future__ import annotations

from typing import Protocol

from nemotron_operator.api.spec import NemotronDeploymentSpec
from nemotron_operator.catalog.vllm_releases import (
    EngineVersionError,
    parse_version,
    resolve_release,
)
from nemotron_operator.catalog.vllm_rules import Fired, RuleInput, Version, evaluate

# Spec values that switch a defaulted feature off.
OFF = "none"


class RuleModel(Protocol):
    """The model facts the rules read (``catalog.ModelEntry`` satisfies it)."""

    @property
    def family(self) -> str: ...
    @property
    def layer_pattern(self) -> str: ...
    @property
    def default_reasoning_parser(self) -> str | None: ...
    @property
    def default_tool_call_parser(self) -> str | None: ...


def reasoning_parser(spec: NemotronDeploymentSpec, model: RuleModel) -> tuple[str | None, str]:
    """The reasoning parser the command line carries (None: off) and the field that chose it."""
    engine = spec.engine
    if engine.reasoning_parser_plugin is not None:
        return (
            engine.reasoning_parser_plugin.parser_name,
            "spec.engine.reasoningParserPlugin.parserName",
        )
    if engine.reasoning_parser is not None:
        parser = None if engine.reasoning_parser == OFF else engine.reasoning_parser
        return parser, "spec.engine.reasoningParser"
    return model.default_reasoning_parser, "spec.engine.reasoningParser"


def tool_call_parser(spec: NemotronDeploymentSpec, model: RuleModel) -> str | None:
    tools = spec.engine.tool_call_parser or model.default_tool_call_parser
    return None if tools == OFF else tools


def engine_version(spec: NemotronDeploymentSpec) -> Version:
    """The vLLM version the rules judge: the image's (or spec.engine.version), else the release
    of the profile it is planned with (a newer or unknown image: the newest profile's)."""
    try:
        release = resolve_release(spec.engine.image, spec.engine.version)
    except EngineVersionError:
        # The planner refuses such a spec first; judge it as the oldest profile.
        return (0, 31, 0)
    if release.version is not None:
        return release.version
    return parse_version(release.profile.release) or (0, 0, 0)


def rule_input(
    spec: NemotronDeploymentSpec,
    model: RuleModel,
    *,
    max_model_len: int,
    block_size: int,
    speculative_tokens: int,
) -> RuleInput:
    engine = spec.engine
    parser, parser_field = reasoning_parser(spec, model)
    return RuleInput(
        family=model.family,
        hybrid="M" in model.layer_pattern,
        vllm=engine_version(spec),
        prefix_caching=engine.enable_prefix_caching,
        speculative_tokens=speculative_tokens,
        max_model_len=max_model_len,
        block_size=block_size,
        mamba_ssm_cache_dtype=engine.mamba_ssm_cache_dtype,
        reasoning_parser=parser,
        reasoning_parser_field=parser_field,
        default_reasoning_parser=model.default_reasoning_parser,
        tool_call_parser=tool_call_parser(spec, model),
        extra_args=tuple(engine.extra_args),
    )


def rules_fired(
    spec: NemotronDeploymentSpec,
    model: RuleModel,
    *,
    max_model_len: int,
    block_size: int,
    speculative_tokens: int,
) -> tuple[Fired, ...]:
    """Every vLLM rule that fires for this spec on this model and plan."""
    return evaluate(
        rule_input(
            spec,
            model,
            max_model_len=max_model_len,
            block_size=block_size,
            speculative_tokens=speculative_tokens,
        )
    )
