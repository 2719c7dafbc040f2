"""The stand-in vLLM's facts are its own data, checked against what the real engine answered
(tests/contract/vllm-<release>-cpu/, recorded by hack/record-vllm-contract.py from vLLM's CPU
build), never taken from the operator's tables: where the operator is wrong, the witness is not
wrong with it."""

from __future__ import annotations

import ast
import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from nemotron_sim.vllm import flag_data, flags, lora_rules
from nemotron_sim.vllm.args import parse_serve_argv

ROOT = Path(__file__).resolve().parents[3]
SIM = ROOT / "operator" / "nemotron_sim"
CONTRACT = ROOT / "tests" / "contract" / f"vllm-{flag_data.release()}-cpu"
REGENERATE = (
    f"hack/gen-stand-in-flags.py {CONTRACT.relative_to(ROOT)}/serve-parser.json "
    "(after hack/record-vllm-contract.py --parser-only)"
)


def generator() -> ModuleType:
    """hack/gen-stand-in-flags.py, which writes the stand-in's flag table."""
    spec = importlib.util.spec_from_file_location("gen_flags", ROOT / "hack/gen-stand-in-flags.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# The operator's tables the simulator may not read (pyproject.toml's import contract names the
# modules; these are the names the catalog package re-exports, which the contract cannot see).
FORBIDDEN_MODULES = {
    "nemotron_operator.catalog.vllm_flags",
    "nemotron_operator.catalog.vllm_flag_table",
    "nemotron_operator.catalog.vllm_release_flags",
    "nemotron_operator.catalog.vllm_lora",
    "nemotron_operator.catalog.gpus",
}
FORBIDDEN_NAMES = {"GPUS", "GpuProduct", "lookup_gpu", "vllm_flags", "vllm_lora", "gpus"}


def recorded_parser() -> dict[str, Any]:
    parser: dict[str, Any] = json.loads((CONTRACT / "serve-parser.json").read_text())
    return parser


def recorded_cases() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads((CONTRACT / "serve-parser.json").read_text())["cases"]
    return cases


def recorded_action(name: str) -> dict[str, Any]:
    return next(a for a in recorded_parser()["actions"] if name in a["options"])


def test_the_stand_ins_release_was_recorded() -> None:
    assert (CONTRACT / "serve-parser.json").is_file(), f"no recording for {CONTRACT.name}"
    assert recorded_parser()["release"] == flag_data.release()


def test_the_flag_data_is_derived_from_the_recorded_parser() -> None:
    shipped = (SIM / "vllm" / flag_data.DATA).read_text(encoding="utf-8")
    assert shipped == generator().render(recorded_parser()), f"regenerate: {REGENERATE}"


def test_the_stand_in_knows_exactly_the_real_engines_long_options() -> None:
    real = set((CONTRACT / "serve-flags.txt").read_text().split()) - {"--help"}
    spelled = {
        s
        for flag in flag_data.flags().values()
        for s in (*flag.spelled.split("/"),)
        if s.startswith("--")
    }
    assert sorted(real - spelled) == []
    assert sorted(spelled - real) == []


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("--max-lora-rank", "choice"),
        ("--enable-lora", "bool"),
        ("--headless", "switch"),
        ("--served-model-name", "list"),
        ("--max-model-len", "human-int-or-auto"),
        ("--max-num-batched-tokens", "human-int"),
        ("--speculative-config", "json"),
        ("--middleware", "append"),
        ("--hf-token", "optional"),
    ],
)
def test_kinds_follow_the_recorded_actions(name: str, kind: str) -> None:
    assert flag_data.flags()[name].kind == kind
    assert flag_data.flags()[name].default == (
        None if recorded_action(name)["default"] in ("==SUPPRESS==", None)
        else recorded_action(name)["default"]
    )  # fmt: skip


def test_lora_facts_are_the_real_engines() -> None:
    rank = recorded_action("--max-lora-rank")
    assert flag_data.flags()["--max-lora-rank"].choices == tuple(rank["choices"])
    limits = lora_rules.lora_limits({})
    assert (limits.max_lora_rank, limits.max_loras) == (
        rank["default"],
        recorded_action("--max-loras")["default"],
    )
    assert lora_rules.facts()["release"] == flag_data.release()
    assert lora_rules.facts()["runtimeUpdatesEnv"] in recorded_parser()["environmentVariables"]
    assert recorded_action("--lora-modules")["action"] == "LoRAParserAction"


def test_the_built_in_parsers_are_the_real_engines() -> None:
    assert flag_data.reasoning_parsers() == tuple(recorded_parser()["reasoningParsers"])
    assert flag_data.tool_call_parsers() == tuple(recorded_parser()["toolCallParsers"])
    # what the operator renders for Nemotron is built in
    assert {"nemotron_v3"} <= set(flag_data.reasoning_parsers())
    assert {"qwen3_coder"} <= set(flag_data.tool_call_parsers())


def test_a_rank_the_parser_does_not_offer_is_refused_by_the_parser() -> None:
    with pytest.raises(ValueError, match="invalid choice: 24"):
        parse_serve_argv(["vllm", "serve", "m", "--enable-lora", "--max-lora-rank", "24"])


def test_the_simulator_reads_none_of_the_operators_flag_gpu_or_lora_tables() -> None:
    for path in SIM.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules = {a.name for a in node.names}
                assert not modules & FORBIDDEN_MODULES, path
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "nemotron_operator"
            ):
                names = {a.name for a in node.names}
                assert node.module not in FORBIDDEN_MODULES, path
                assert not names & FORBIDDEN_NAMES, (path, names & FORBIDDEN_NAMES)
        assert "vllm_release_data" not in path.read_text(encoding="utf-8"), path


def stand_in_verdict(args: list[str]) -> str | None:
    """What the stand-in's parser says to ``vllm serve MODEL *args``: None or its error (the
    --lora-modules values are read while parsing, as vLLM's LoRAParserAction reads them)."""
    try:
        for use in flags.parse(args):
            if use.flag.name == "--lora-modules" and isinstance(use.value, tuple):
                for value in use.value:
                    lora_rules.parse_lora_module(value)
    except (flags.ParseError, lora_rules.LoraConfigError) as error:
        return str(error)
    return None


@pytest.mark.parametrize("case", recorded_cases(), ids=lambda c: " ".join(c["args"])[:60])
def test_the_stand_in_answers_each_recorded_argument_list_as_the_real_parser(
    case: dict[str, Any],
) -> None:
    """hack/record-vllm-contract.py ran the real parser on these lists (PARSER_CASES): the same
    verdict, and the same error to the letter (argparse's, or vLLM's type functions')."""
    assert stand_in_verdict(case["args"]) == case["error"]
