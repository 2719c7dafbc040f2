"""The stand-in vLLM against what the real one answered (tests/contract/vllm-*-cpu/, recorded by
hack/record-vllm-contract.py from vLLM's CPU build serving a tiny Nemotron-H): the same
requests get answers of the same shape — every field the stand-in sends exists in the real
answer with the same JSON type — and its /metrics has the real engine's names, types and label
names for every vllm: family it exposes. The series the operator reads must be in both."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from nemotron_operator.catalog import vllm_flags
from nemotron_operator.catalog.vllm_flags import FLAGS as FLAGS_TABLE
from nemotron_operator.catalog.vllm_flags import REMOVED, Kind
from nemotron_operator.catalog.vllm_release_flags import ReleaseSurface, all_surfaces
from nemotron_operator.observe.samples import USED_SERIES
from tests.integration.vllm_stub.conftest import StartStub

CONTRACTS = sorted((Path(__file__).resolve().parents[2] / "contract").glob("vllm-*-cpu"))
FLAGS = (
    "--served-model-name", "tiny", "--max-model-len", "2048",
    "--speculative-config", '{"method":"mtp","num_speculative_tokens":1}',
    "--reasoning-parser", "nemotron_v3", "--tool-call-parser", "qwen3_coder",
    "--enable-auto-tool-choice", "--no-enable-prefix-caching",
)  # fmt: skip
ANSWERS = [
    "chat-plain", "chat-reasoning-on", "chat-reasoning-off", "chat-tools", "chat-json-schema",
    "models", "error-unknown-model", "error-bad-max-tokens", "error-too-long",
]  # fmt: skip


def test_a_contract_was_recorded() -> None:
    assert CONTRACTS, "no tests/contract/vllm-*-cpu: run hack/record-vllm-contract.py"


def shape(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return type(value).__name__


def differences(stand_in: Any, real: Any, path: str = "") -> list[str]:
    """Where the stand-in's shape is not the real one's: a field the real answer lacks, or of
    another JSON type (null matches any type and absence: a client reads both alike)."""
    if "NoneType" in (stand_in, real) or stand_in == real:
        return []
    if isinstance(stand_in, dict) and isinstance(real, dict):
        out = []
        for key, item in stand_in.items():
            if key not in real and item != "NoneType":
                out.append(f"{path}.{key}: not in the real answer")
            elif key not in real:
                continue
            else:
                out.extend(differences(item, real[key], f"{path}.{key}"))
        return out
    if isinstance(stand_in, list) and isinstance(real, list):
        if not stand_in or not real:
            return []
        return differences(stand_in[0], real[0], f"{path}[0]")
    return [f"{path}: {stand_in} here, {real} in the real answer"]


def families(text: str) -> dict[str, tuple[str, frozenset[str]]]:
    """vllm: family → (type, label names of its samples)."""
    out = {}
    for family in text_string_to_metric_families(text):
        if family.name.startswith("vllm:"):
            labels = frozenset(k for s in family.samples for k in s.labels if k != "le")
            out[family.name] = (family.type, labels)
    return out


@pytest.fixture(params=CONTRACTS, ids=lambda p: p.name)
def contract(request: pytest.FixtureRequest) -> Path:
    directory: Path = request.param
    return directory


async def _answer(
    http: aiohttp.ClientSession, url: str, recorded: dict[str, Any]
) -> tuple[int, Any]:
    request = recorded["request"]
    async with http.request(request["method"], url + request["path"], json=request["body"]) as r:
        return r.status, await r.json()


@pytest.mark.parametrize("name", ANSWERS)
async def test_the_stand_in_answers_in_the_real_engines_shape(
    contract: Path, name: str, start_stub: StartStub, http: aiohttp.ClientSession
) -> None:
    recorded = json.loads((contract / f"{name}.json").read_text())
    stub = await start_stub(*FLAGS)
    status, body = await _answer(http, stub.url, recorded)
    assert status == recorded["status"], (status, body, recorded["body"])
    assert differences(shape(body), shape(recorded["body"])) == []


async def test_the_stand_in_streams_in_the_real_engines_shape(
    contract: Path, start_stub: StartStub, http: aiohttp.ClientSession
) -> None:
    recorded = json.loads((contract / "chat-stream.json").read_text())
    real = [json.loads(line[len("data: ") :]) for line in recorded["lines"][:-1]]
    assert recorded["lines"][-1] == "data: [DONE]"
    stub = await start_stub(*FLAGS)
    request = recorded["request"]
    async with http.post(stub.url + request["path"], json=request["body"]) as response:
        assert response.status == recorded["status"]
        lines = [line for line in (await response.text()).splitlines() if line.strip()]
    assert lines[-1] == "data: [DONE]"
    chunks = [json.loads(line[len("data: ") :]) for line in lines[:-1]]
    real_shapes = [shape(chunk) for chunk in real]
    for chunk in chunks:  # each chunk has the shape of some chunk the real engine sent
        assert any(not differences(shape(chunk), r) for r in real_shapes), chunk


async def test_the_stand_ins_metrics_have_the_real_names_types_and_labels(
    contract: Path, start_stub: StartStub, http: aiohttp.ClientSession
) -> None:
    real = families((contract / "metrics.txt").read_text())
    stub = await start_stub(*FLAGS)
    async with http.get(f"{stub.url}/metrics") as response:
        stand_in = families(await response.text())
    wrong = {  # the same type, and no label the real engine lacks (it has more: its version's)
        name: (kind, sorted(labels), real.get(name))
        for name, (kind, labels) in stand_in.items()
        if name not in real or real[name][0] != kind or not labels <= real[name][1]
    }
    assert wrong == {}


def test_the_series_the_operator_reads_are_in_the_real_engines_metrics(contract: Path) -> None:
    names = {
        sample.name
        for family in text_string_to_metric_families((contract / "metrics.txt").read_text())
        for sample in family.samples
    }
    assert [series for series in USED_SERIES if series not in names] == []


def test_every_flag_the_operators_table_knows_is_one_the_real_engine_accepts(
    contract: Path,
) -> None:
    """The operator checks rendered and user flags against its own table (catalog.vllm_flags);
    each flag there must exist in the real engine's parser, and a flag the table calls removed
    must not. (The stand-in has its own table, derived from this recording:
    tests/unit/sim_vllm/test_recorded_facts.py.)"""
    real = set((contract / "serve-flags.txt").read_text().split())
    known = {name for flag in FLAGS_TABLE.values() for name in (flag.name, *flag.aliases)}
    assert sorted(n for n in known if n.startswith("--") and n not in real) == []
    assert sorted(n for n in REMOVED if n in real) == []


# How the recorded parser's action reads a value (its type, or what _optional_type wraps).
_KIND_OF_TYPE = {
    None: Kind.STR, "str": Kind.STR, "int": Kind.INT, "float": Kind.FLOAT,
    "human_readable_int": Kind.HUMAN_INT, "human_readable_int_or_auto": Kind.HUMAN_INT_OR_AUTO,
    "loads": Kind.JSON, "parse_dataclass": Kind.JSON, "_parse_type": Kind.JSON,
    "union_dict_and_str": Kind.JSON_OR_STR,
}  # fmt: skip
# Where the operator's table still reads a flag otherwise than vLLM 0.32.0's parser, and why that
# is kept (docs/compatibility.md). Anything else that differs fails the test.
ALLOWED_TABLE_DIFFERENCES = {
    # The parser's choices are the nine LoRA ranks; catalog/vllm_lora.py checks the same ranks on
    # spec.engine.lora.maxLoraRank, which owns the flag (refused in extraArgs).
    "--max-lora-rank": "int, not choice "
    + str(sorted(str(rank) for rank in (1, 8, 16, 32, 64, 128, 256, 320, 512))),
    # An optional value (--hf-token alone reads the token from the Hugging Face login); the flag
    # is denied in extraArgs (a secret in the spec), so only its spelling with a value is known.
    "--hf-token": "str, not str with an optional value",
}
ALLOWED_CASE_DIFFERENCES = {
    # Refused on purpose: the operator must know every flag, so an abbreviation is refused asking
    # for the full spelling (argparse's allow_abbrev would read it as --max-model-len).
    ("--max-model", "4"): "refused, vLLM accepts",
    ("--hf-token",): "refused, vLLM accepts",  # denied anyway (see above)
    # _optional_type reads "None" as unset; the flag is owned by spec.engine.lora.maxCpuLoras.
    ("--max-cpu-loras", "None"): "refused, vLLM accepts",
    # Owned by typed fields, refused in extraArgs whatever the value; the fields check the rank
    # (catalog/vllm_lora.py) and the adapters (spec.adapters) themselves.
    ("--max-lora-rank", "24"): "accepted, vLLM refuses",
    ("--lora-modules", "no-path"): "accepted, vLLM refuses",
}


def _recorded(contract: Path) -> dict[str, Any]:
    parser: dict[str, Any] = json.loads((contract / "serve-parser.json").read_text())
    return parser


def _release(contract: Path) -> ReleaseSurface:
    release = _recorded(contract)["release"]
    return next(s for s in all_surfaces() if s.release == release)


def _reads(action: dict[str, Any]) -> str:
    """How a recorded action takes its value, in the table's terms."""
    kind: Kind
    if action["action"] == "_StoreTrueAction":
        kind = Kind.SWITCH
    elif action["action"] == "BooleanOptionalAction":
        kind = Kind.BOOL
    elif action["action"] == "_AppendAction":
        kind = Kind.APPEND
    elif action["nargs"] == "+":
        kind = Kind.INT_LIST if action["type"] == "int" else Kind.LIST
    elif action["choices"] is not None:
        kind = Kind.CHOICE
    else:
        wrapped = action["type"] == "_optional_type" and action["wraps"]
        kind = _KIND_OF_TYPE[action["wraps"][0] if wrapped else action["type"]]
    choices = sorted(str(c) for c in action["choices"] or () if c is not None)
    optional = " with an optional value" if action["nargs"] == "?" else ""
    return f"{kind.value}{optional}" + (f" {choices}" if choices else "")


def test_the_operators_table_reads_every_flag_as_the_recorded_parser(contract: Path) -> None:
    """Each flag of the operator's table, read against the recorded release: the same kind of
    value, the same choices (generated per release from the wheels) and every spelling of the
    real parser (aliases, --no- forms) resolving to it."""
    release = _release(contract)
    actions = {o: a for a in _recorded(contract)["actions"] for o in a["options"]}
    differences = {}
    for flag in FLAGS_TABLE.values():
        action = actions[flag.name]
        ours = flag.kind.value + (
            f" {sorted(vllm_flags.choices(flag, release))}"
            if flag.kind in (Kind.CHOICE, Kind.LIST) and vllm_flags.choices(flag, release)
            else ""
        )
        if ours != _reads(action):
            differences[flag.name] = f"{ours}, not {_reads(action)}"
        for spelled in action["options"]:
            found = vllm_flags.lookup(spelled, release)
            if found is None or found[0] is not flag:
                differences[spelled] = f"unknown, not a spelling of {flag.name}"
    assert differences == ALLOWED_TABLE_DIFFERENCES


def test_the_operators_parser_answers_the_recorded_cases_as_vllm_did(contract: Path) -> None:
    """The argument lists the real parser was given (hack/record-vllm-contract.py PARSER_CASES):
    the operator accepts what vLLM accepted and refuses what it refused."""
    release = _release(contract)
    differences = {}
    for case in _recorded(contract)["cases"]:
        try:
            vllm_flags.parse_args(case["args"], release=release)
            refused = False
        except vllm_flags.FlagError:
            refused = True
        if refused != (case["error"] is not None):
            verdict = "refused, vLLM accepts" if refused else "accepted, vLLM refuses"
            differences[tuple(case["args"])] = verdict
    assert differences == ALLOWED_CASE_DIFFERENCES
