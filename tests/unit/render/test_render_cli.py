"""`nemotron-operator render`: objects on stdout, exit 2 naming the field on bad input, exit 1 with
the reason when nothing fits."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from nemotron_operator.cli import main
from tests.unit.render.fakes import SUPER_VL

GOLDEN_INPUTS = Path(__file__).resolve().parents[2] / "golden" / "inputs"


def write(tmp_path: Path, spec: dict[str, Any], name: str = "d.yaml") -> str:
    body = {
        "apiVersion": "serving.nemotron.io/v1alpha1",
        "kind": "NemotronDeployment",
        "metadata": {"name": "cli", "namespace": "ai"},
        "spec": spec,
    }
    path = tmp_path / name
    path.write_text(yaml.safe_dump(body), encoding="utf-8")
    return str(path)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["render", *args])
    out, err = capsys.readouterr()
    return code, out, err


MINIMAL = {"model": {"id": SUPER_VL}, "engine": {"maxModelLen": 262_144}}


def test_yaml_output_has_the_plan_header_and_every_object(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "-f", write(tmp_path, MINIMAL))
    assert (code, err) == (0, "")
    assert out.startswith("# NemotronDeployment ai/cli: " + SUPER_VL)
    assert "# Max concurrency at maxModelLen:" in out
    kinds = [d["kind"] for d in yaml.safe_load_all(out) if d]
    assert kinds == ["Service", "Service", "StatefulSet"]  # one pod: no PodDisruptionBudget


def test_json_output_is_a_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "-f", write(tmp_path, MINIMAL), "-o", "json")
    assert code == 0
    listing = json.loads(out)
    assert listing["kind"] == "List"
    _, yaml_out, _ = run(capsys, "-f", write(tmp_path, MINIMAL))
    assert listing["items"] == [d for d in yaml.safe_load_all(yaml_out) if d]


def test_stdin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = Path(write(tmp_path, MINIMAL)).read_text(encoding="utf-8")
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    code, out, _ = run(capsys, "-f", "-")
    assert code == 0
    assert "kind: StatefulSet" in out


def test_gpu_inventory_decides_the_gpu(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nodes = str(GOLDEN_INPUTS / "nodes-h200.yaml")
    code, out, _ = run(capsys, "-f", write(tmp_path, MINIMAL), "--gpu-inventory", nodes)
    assert code == 0
    assert "nvidia.com/gpu.product: NVIDIA-H200" in out


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        (
            MINIMAL | {"engine": {"extraArgs": ["--tool-server", "demo"]}},
            "spec.engine.extraArgs[0]",
        ),
        (MINIMAL | {"engine": {"maxModelLen": "long"}}, "spec.engine.maxModelLen"),
        (MINIMAL | {"replica": 2}, "spec.replica"),
        (
            MINIMAL
            | {"engine": {"reasoningParserPlugin": {"configMapName": "p", "parserName": "x"}}},
            "spec.engine.reasoningParserPlugin.fileName",
        ),
    ],
)
def test_bad_input_exits_2_naming_the_field(
    spec: dict[str, Any], field: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "-f", write(tmp_path, spec))
    assert code == 2
    assert out == ""
    assert err.startswith('nemotron-operator: NemotronDeployment "cli" is invalid:')
    assert f"\n  {field}: " in err


def test_infeasible_exits_1_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = MINIMAL | {"capacity": {"gpu": {"products": ["NVIDIA-L40S"], "count": 1}}}
    code, out, err = run(capsys, "-f", write(tmp_path, spec))
    assert code == 1
    assert out == ""
    assert "cannot be planned (" in err
    assert "NVIDIA-L40S" in err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("a: [", "while parsing"),
        ("", "holds 0 objects"),
        ("kind: A\n---\nkind: B\n", "holds 2 objects"),
    ],
)
def test_unreadable_input_exits_2(
    content: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(content, encoding="utf-8")
    code, _, err = run(capsys, "-f", str(path))
    assert code == 2
    assert message in err


def test_missing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "-f", str(tmp_path / "absent.yaml"))
    assert code == 2
    assert "absent.yaml" in err
