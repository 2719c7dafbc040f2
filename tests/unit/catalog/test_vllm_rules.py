"""The vLLM rules: specs → the rules that fire (refused / fixed / warned), with the exact messages,
through the real planner and renderer; the flags a fix adds are accepted by vLLM's parser."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from nemotron_operator.api.errors import parse_deployment
from nemotron_operator.catalog import vllm_flags
from nemotron_operator.catalog.vllm_rules import (
    PINNED,
    RULES,
    Action,
    Fired,
    Rule,
    RuleInput,
    evaluate,
    image_version,
)
from nemotron_operator.catalog.vllm_rules_dropped import DROPPED
from nemotron_operator.cli import main as cli_main
from nemotron_operator.render import RenderError, render_all
from nemotron_operator.sizing import PlanningError, plan_deployment
from nemotron_sim.vllm import parse_serve_argv

SUPER_FP8 = "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8"
NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
ULTRA = "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-NVFP4"
H200 = {"gpu": {"products": ["NVIDIA-H200"]}}
B200 = {"gpu": {"products": ["NVIDIA-B200"]}}
DOCS = Path(__file__).resolve().parents[3] / "docs" / "compatibility.md"

MTP_ALIGN = (
    "mtp-prefix-caching-mamba-align",
    "fix",
    "spec.engine.enablePrefixCaching",
    "MTP with prefix caching on a hybrid model: passing --mamba-cache-mode align, the only "
    "Mamba cache mode that starts with MTP (vllm#39809)",
)
MTP_OUTPUT = (
    "mtp-structured-output",
    "warn",
    "spec.engine.speculativeDecoding",
    "tool calls and JSON-schema output with MTP have broken in vLLM releases "
    "(anyscale/templates#1086, vllm PR #44993): the behavioural check tests them before the pod "
    "takes traffic",
)


def granularity(block: int) -> tuple[str, str, str, str]:
    return (
        "prefix-cache-block-granularity",
        "warn",
        "spec.engine.enablePrefixCaching",
        f"prefix caching reuses whole blocks of {block} tokens only: a shared prefix shorter "
        "than one block is never a hit (vllm#54504)",
    )


def deployment(spec: dict[str, Any]) -> Any:
    return parse_deployment(
        {
            "apiVersion": "serving.nemotron.io/v1alpha1",
            "kind": "NemotronDeployment",
            "metadata": {"name": "rules", "namespace": "ai"},
            "spec": spec,
        }
    )


def fired(spec: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    result = plan_deployment(deployment(spec).spec)
    return [(f.rule.id, f.action.value, f.field, f.message) for f in result.rules]


CASES: list[tuple[str, dict[str, Any], list[tuple[str, str, str, str]]]] = [
    (
        # vLLM 0.34 (the default image): 'all' is no Mamba cache mode any more, no fix.
        "super-defaults",
        {"model": {"id": SUPER_FP8}, "engine": {"maxModelLen": 131072}, "capacity": H200},
        [granularity(4224), MTP_OUTPUT],
    ),
    (
        # vLLM 0.31 keeps the fix (it restates vLLM's own choice; its commands stay as they were).
        "super-defaults-0.31",
        {
            "model": {"id": SUPER_FP8},
            "engine": {"maxModelLen": 131072, "image": "vllm/vllm-openai:v0.31.0"},
            "capacity": H200,
        },
        [MTP_ALIGN, granularity(4176), MTP_OUTPUT],
    ),
    (
        "super-no-prefix-caching",
        {
            "model": {"id": SUPER_FP8},
            "engine": {"maxModelLen": 131072, "enablePrefixCaching": False},
            "capacity": H200,
        },
        [MTP_OUTPUT],
    ),
    (
        "super-short-context",
        {"model": {"id": SUPER_FP8}, "engine": {"maxModelLen": 2048}, "capacity": H200},
        [
            (
                "prefix-caching-inert-below-block",
                "warn",
                "spec.engine.enablePrefixCaching",
                "prefix caching does nothing: maxModelLen 2048 is below the hybrid KV block of "
                "4224 tokens and vLLM caches whole blocks only (vllm#48401); set "
                "spec.engine.enablePrefixCaching: false (saves one Mamba state slot per "
                "sequence) or raise spec.engine.maxModelLen to at least 4224",
            ),
            MTP_OUTPUT,
        ],
    ),
    (
        "super-fp16-ssm-no-mtp",
        {
            "model": {"id": SUPER_FP8},
            "engine": {
                "maxModelLen": 131072,
                "mambaSsmCacheDtype": "float16",
                "speculativeDecoding": {"method": "none"},
            },
            "capacity": H200,
        },
        [
            granularity(2112),
            (
                "nemotron-h-mamba-ssm-reduced-precision",
                "warn",
                "spec.engine.mambaSsmCacheDtype",
                "float16 Mamba SSM state: only float32 is known to keep NemotronH accuracy "
                "(vllm PR #39032); answers may degrade",
            ),
        ],
    ),
    (
        "nano-other-tier-plugin",
        {
            "model": {"id": NANO},
            "engine": {
                "maxModelLen": 131072,
                "reasoningParserPlugin": {
                    "configMapName": "parser",
                    "fileName": "super_v3_reasoning_parser.py",
                    "parserName": "super_v3",
                },
            },
            "capacity": H200,
        },
        [
            granularity(2112),
            (
                "reasoning-parser-wrong-family",
                "warn",
                "spec.engine.reasoningParserPlugin.parserName",
                "super_v3 is the Nemotron 3 Super parser, not Nano's: thinking text can stay in "
                "the answer (NVIDIA-NeMo/Nemotron#259); use nemotron_v3 or the model "
                "repository's own plugin",
            ),
        ],
    ),
    (
        "nano-foreign-built-in-parser",
        {
            "model": {"id": NANO},
            "engine": {"maxModelLen": 131072, "reasoningParser": "deepseek_r1"},
            "capacity": H200,
        },
        [
            granularity(2112),
            (
                "reasoning-parser-wrong-family",
                "warn",
                "spec.engine.reasoningParser",
                "deepseek_r1 is not a Nemotron parser: thinking text can stay in the answer "
                "(NVIDIA-NeMo/Nemotron#259); use nemotron_v3 or the model repository's own "
                "plugin",
            ),
        ],
    ),
    (
        "nano-own-plugin-and-reasoning-off",
        {
            "model": {"id": NANO},
            "engine": {"maxModelLen": 131072, "reasoningParser": "none"},
            "capacity": H200,
        },
        [granularity(2112)],
    ),
]


@pytest.mark.parametrize(("name", "spec", "expected"), CASES, ids=[c[0] for c in CASES])
def test_spec_fires_exactly_these_rules(
    name: str, spec: dict[str, Any], expected: list[tuple[str, str, str, str]]
) -> None:
    assert fired(spec) == expected


@pytest.mark.parametrize(("name", "spec", "expected"), CASES, ids=[c[0] for c in CASES])
def test_fixes_and_warnings_are_plan_notes(
    name: str, spec: dict[str, Any], expected: list[tuple[str, str, str, str]]
) -> None:
    notes = plan_deployment(deployment(spec).spec).plan.notes
    verb = {"fix": "fixed", "warn": "warning"}
    rule_notes = [n for n in notes if n.startswith("vLLM rule ")]
    assert rule_notes == [f"vLLM rule {i} ({verb[a]}): {m}"[:512] for i, a, _, m in expected]


REFUSED = [
    (
        "ultra-fp16-ssm",
        {"model": {"id": ULTRA}, "engine": {"mambaSsmCacheDtype": "float16"}, "capacity": B200},
        "spec.engine.mambaSsmCacheDtype",
        "float16 Mamba SSM state is not how Nemotron 3 Ultra is served: its vLLM recipe runs "
        "float32 (vllm-project/recipes#509): set spec.engine.mambaSsmCacheDtype: float32 "
        "(rule ultra-mamba-ssm-float32)",
    ),
    (
        "reasoning-config-with-nemotron-v3",
        {
            "model": {"id": NANO},
            "engine": {
                "maxModelLen": 131072,
                "extraArgs": ["--max-log-len", "10", "--reasoning_config={}"],
            },
            "capacity": H200,
        },
        "spec.engine.extraArgs[2]",
        "--reasoning-config with the nemotron_v3 reasoning parser leaves every answer's content "
        "null (vllm#39103): remove it (rule reasoning-config-nemotron-v3)",
    ),
]


@pytest.mark.parametrize(("name", "spec", "field", "message"), REFUSED, ids=[c[0] for c in REFUSED])
def test_refusing_rules_name_the_field(
    name: str, spec: dict[str, Any], field: str, message: str
) -> None:
    with pytest.raises(PlanningError) as caught:
        plan_deployment(deployment(spec).spec)
    assert caught.value.reason == "IncompatibleEngineSettings"
    assert (caught.value.field, caught.value.message) == (field, message)


def test_the_renderer_refuses_too_with_every_field() -> None:
    # A plan made before the rule existed (or by hand) still cannot be rendered.
    spec = REFUSED[1][1]
    ok = deployment({**spec, "engine": {"maxModelLen": 131072}})
    result = plan_deployment(ok.spec)
    with pytest.raises(RenderError) as caught:
        render_all(deployment(spec), result)
    assert [(e.path, e.message) for e in caught.value.errors] == [(REFUSED[1][2], REFUSED[1][3])]


def test_reasoning_config_is_fine_without_the_nemotron_parser() -> None:
    spec = {
        "model": {"id": NANO},
        "engine": {
            "maxModelLen": 131072,
            "reasoningParser": "none",
            "extraArgs": ["--reasoning-config", "{}"],
        },
        "capacity": H200,
    }
    assert [f[0] for f in fired(spec)] == ["prefix-cache-block-granularity"]


def serve_argv(spec: dict[str, Any]) -> list[str]:
    d = deployment(spec)
    objects = render_all(d, plan_deployment(d.spec))
    for obj in objects:
        if obj["kind"] == "StatefulSet":
            container = obj["spec"]["template"]["spec"]["containers"][0]
            return [*container["command"], *container["args"]]
    raise AssertionError("no StatefulSet rendered")


def case(name: str) -> dict[str, Any]:
    return next(spec for case_name, spec, _ in CASES if case_name == name)


def test_the_fix_reaches_the_command_and_vllm_parsers_accept_it() -> None:
    argv = serve_argv(case("super-defaults-0.31"))
    assert argv[argv.index("--mamba-cache-mode") + 1] == "align"
    _, uses = vllm_flags.parse_serve_command(argv)
    assert [u.value for u in uses if u.flag.name == "--mamba-cache-mode"] == ["align"]
    assert parse_serve_argv(argv).options["--mamba-cache-mode"] == "align"


def test_no_fix_flag_without_the_combination_or_from_0_32() -> None:
    assert "--mamba-cache-mode" not in serve_argv(case("super-no-prefix-caching"))
    assert "--mamba-cache-mode" not in serve_argv(case("super-defaults"))  # 0.34


@pytest.mark.parametrize(
    ("image", "version"),
    [
        ("vllm/vllm-openai:v0.31.0", (0, 31, 0)),
        ("vllm/vllm-openai:v0.19.1", (0, 19, 1)),
        ("registry.example:5000/vllm:0.28.0-cu130", (0, 28, 0)),
        ("vllm/vllm-openai:latest", PINNED),
        ("vllm/vllm-openai@sha256:abc", PINNED),
        ("registry.example:5000/vllm", PINNED),
    ],
)
def test_image_version(image: str, version: tuple[int, int, int]) -> None:
    assert image_version(image) == version


def test_a_rule_fires_only_on_the_versions_it_names() -> None:
    def always(rule: Rule, _: RuleInput) -> Fired:
        return Fired(rule, "spec.engine.image", "old vLLM")

    rule = Rule("old", "x", RULES[0].behaviour, "x", "x", "x", Action.WARN, always,
                first=(0, 20, 0), fixed_in=(0, 30, 0))  # fmt: skip
    base = RuleInput("Nemotron 3 Super", True, (0, 19, 9), True, 1, 8192, 4176, "float32",
                     "nemotron_v3", "spec.engine.reasoningParser", "nemotron_v3", None)  # fmt: skip
    versions = [(0, 19, 9), (0, 20, 0), (0, 29, 5), (0, 30, 0), PINNED]
    fires = [bool(evaluate(replace(base, vllm=v), [rule])) for v in versions]
    assert fires == [False, True, True, False, False]


def test_docs_list_every_rule_and_every_dropped_case() -> None:
    text = DOCS.read_text(encoding="utf-8")
    missing = [r.id for r in RULES if f"`{r.id}`" not in text]
    missing += [d.source for d in DROPPED if d.source not in text]
    assert missing == []
    sources = {s for r in RULES for s in re.findall(r"[\w.-]+/[\w.-]+#\d+", r.source)}
    assert sorted(s for s in sources if s not in text) == []


def write_deployment(path: Path, name: str, spec: dict[str, Any]) -> Path:
    obj = {
        "apiVersion": "serving.nemotron.io/v1alpha1",
        "kind": "NemotronDeployment",
        "metadata": {"name": name, "namespace": "ai"},
        "spec": spec,
    }
    path.write_text(yaml.safe_dump(obj), encoding="utf-8")
    return path


def test_plan_and_render_show_the_rules_that_fired(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_deployment(tmp_path / "super.yaml", "s", CASES[2][1])
    assert cli_main(["plan", "-f", str(path)]) == 0
    table = capsys.readouterr().out
    assert cli_main(["render", "-f", str(path)]) == 0
    header = capsys.readouterr().out
    for rule_id, action, _, message in CASES[2][2]:
        line = f"vLLM rule {rule_id} ({'fixed' if action == 'fix' else 'warning'}): {message}"
        assert f"  - {line}" in table
        assert f"# Note: {line}" in header
    refused = write_deployment(tmp_path / "ultra.yaml", "u", REFUSED[0][1])
    assert cli_main(["plan", "-f", str(refused)]) == 2
    assert f"{REFUSED[0][2]}: {REFUSED[0][3]}" in capsys.readouterr().err
