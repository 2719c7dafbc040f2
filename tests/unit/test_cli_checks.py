"""``plan -f`` and ``render -f`` refuse a file kube-apiserver would refuse: exit 2, each bad field
named with what to change. The CRD's CEL rules are read offline (cli/checks.py); the same cases
run against kube-apiserver in tests/integration/admission/test_cel_rules.py."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from nemotron_operator.api.errors import SpecError, parse_deployment
from nemotron_operator.cli import checks, main
from nemotron_operator.crd import build_crd
from tests.cel_cases import CASES, Case

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
COMMANDS = ("plan", "render")


def _example(name: str = "super-vl-bf16-h200.yaml") -> dict[str, Any]:
    obj: dict[str, Any] = yaml.safe_load((EXAMPLES / name).read_text())
    return obj


def _rules(node: Any) -> list[dict[str, str]]:
    found: list[dict[str, str]] = []
    if isinstance(node, dict):
        found += node.get(checks.RULES, [])
        for value in node.values():
            found += _rules(value)
    elif isinstance(node, list):
        for value in node:
            found += _rules(value)
    return found


RULES = _rules(build_crd())


def _run(
    command: str, obj: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str]:
    path = tmp_path / "deployment.yaml"
    path.write_text(yaml.safe_dump(obj))
    code = main([command, "-f", str(path)])
    return code, capsys.readouterr().err


def test_every_crd_rule_is_read_offline_or_is_a_transition_rule() -> None:
    texts = {r["rule"] for r in RULES}
    assert texts - set(checks.READINGS) == set(checks.TRANSITION_RULES)
    assert set(checks.READINGS) <= texts  # no reading of a rule the CRD no longer has


@pytest.mark.parametrize("case", CASES, ids=[c.field + ":" + c.message[:30] for c in CASES])
def test_the_good_passes_the_offline_rules(case: Case) -> None:
    good = _example()
    case.passing(good)
    checks.parse(good)


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("case", CASES, ids=[c.field + ":" + c.message[:30] for c in CASES])
def test_the_bad_is_refused_with_the_crds_field_and_message(
    case: Case, command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = _example()
    case.failing(bad)
    code, err = _run(command, bad, tmp_path, capsys)
    (message,) = [r["message"] for r in RULES if case.rule_fragment in r["rule"]]
    shown = f"Invalid value: {case.shown}: " if case.shown else ""
    assert code == 2, err
    assert f"\n  {case.field}: {shown}{message}\n" in err
    assert case.message in message


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(
    ("change", "line"),
    [
        (
            {"replicas": "two"},
            "spec.replicas: Invalid value: 'two': Input should be a valid integer, unable to "
            "parse string as an integer",
        ),
        (
            {"replicas": 65},
            "spec.replicas: Invalid value: 65: Input should be less than or equal to 64",
        ),
        (
            {"engine": {"maxModelLen": 262144, "maxModelLenn": 5}},
            "spec.engine.maxModelLenn: unknown field (check the spelling; fields are camelCase)",
        ),
        (
            {"engine": {"maxModelLen": 262144, "kvCacheDtype": "fp4"}},
            "spec.engine.kvCacheDtype: Invalid value: 'fp4': Input should be 'auto', 'bfloat16', "
            "'fp8', 'fp8_e4m3' or 'fp8_e5m2'",
        ),
        (
            # The weight sources exclude each other: a CEL rule only, checked offline too.
            {"model": {"id": "nvidia/NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-BF16",
                       "source": {"huggingFace": {}, "pvc": {"claimName": "weights"}}}},
            "spec.model.source: exactly one of spec.model.source.huggingFace, "
            "spec.model.source.pvc or spec.model.source.objectStore must be set",
        ),
    ],
    ids=["wrong-type", "out-of-range", "unknown-field", "enum", "weight-sources"],
)  # fmt: skip
def test_a_bad_file_is_exit_2_naming_the_field(
    command: str,
    change: dict[str, Any],
    line: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    obj = _example("minimal.yaml")
    obj["spec"].update(change)
    code, err = _run(command, obj, tmp_path, capsys)
    assert code == 2, err
    assert err.startswith("nemotron-operator: ")
    assert "is invalid:" in err or "invalid NemotronDeployment:" in err
    assert f"\n  {line}\n" in err


def test_schema_errors_come_first_and_stop_the_rules(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # As in kube-apiserver: with a wrong type the CEL rules are not run.
    obj = _example()
    obj["spec"]["replicas"] = "two"
    obj["spec"]["capacity"]["parallelism"]["tensor"] = 6
    code, err = _run("plan", obj, tmp_path, capsys)
    assert code == 2
    assert "spec.replicas:" in err
    assert "tensor" not in err


def test_every_broken_rule_is_listed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    obj = _example()
    obj["spec"]["engine"]["gpuMemoryUtilization"] = 1
    obj["spec"]["autoscaling"].update(minReplicas=5, maxReplicas=4)
    code, err = _run("render", obj, tmp_path, capsys)
    assert code == 2
    assert "\n  spec.engine.gpuMemoryUtilization: Invalid value: 1: gpuMemoryUtilization" in err
    assert "\n  spec.autoscaling.minReplicas: autoscaling.minReplicas must not exceed" in err


def test_the_metadata_name_is_a_dns_subdomain(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    obj = _example("minimal.yaml")
    obj["metadata"]["name"] = "Not_A_Name"
    code, err = _run("render", obj, tmp_path, capsys)
    assert code == 2
    assert "\n  metadata.name: Invalid value: 'Not_A_Name': a lowercase RFC 1123 subdomain" in err


def test_nulls_are_pruned_and_defaulted_like_kube_apiserver() -> None:
    obj = _example("minimal.yaml")
    obj["spec"]["replicas"] = None  # not nullable: pruned, then defaulted
    obj["spec"]["engine"]["maxNumSeqs"] = None  # nullable: kept as null (unset)
    spec = checks.parse(copy.deepcopy(obj)).spec
    assert spec.replicas == 1
    assert spec.engine.max_num_seqs is None
    with pytest.raises(SpecError, match=r"spec\.replicas"):  # what the models alone say
        parse_deployment(obj)


def test_a_status_in_the_file_is_dropped_unchecked() -> None:
    obj = _example("minimal.yaml")
    obj["status"] = {"phase": "NotAPhase"}  # kube-apiserver drops it on create, unchecked
    assert checks.parse(obj).status is None
    with pytest.raises(SpecError, match=r"status\.phase"):  # what the models alone say
        parse_deployment(obj)


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.yaml")))
def test_every_example_passes_the_offline_checks(name: str) -> None:
    obj = _example(name)
    assert checks.parse(obj).metadata.name == obj["metadata"]["name"]
