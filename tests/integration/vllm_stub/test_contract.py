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

from nemotron_operator.catalog.vllm_flags import FLAGS as FLAGS_TABLE
from nemotron_operator.catalog.vllm_flags import REMOVED
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
