"""``nemotron-operator models`` and ``gpus``."""

from __future__ import annotations

import json

import pytest
import yaml

from nemotron_operator.catalog import GPUS, MODELS
from nemotron_operator.cli import main

Capture = pytest.CaptureFixture[str]


def test_models_table_lists_every_id(capsys: Capture) -> None:
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    for model in MODELS:
        assert model.hf_id in out
    assert "231.8 GiB" in out  # Super VL BF16


def test_models_json_carries_the_parameter_split(capsys: Capture) -> None:
    assert main(["models", "-o", "json"]) == 0
    records = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in records] == [m.hf_id for m in MODELS]
    super_vl = records[0]
    assert super_vl["vision"] is True
    assert super_vl["parameters"]["routedExperts"] > super_vl["parameters"]["other"]
    assert super_vl["weightsBytes"] == MODELS[0].weights_bytes()


def test_gpus_table_and_yaml(capsys: Capture) -> None:
    assert main(["gpus"]) == 0
    out = capsys.readouterr().out
    for gpu in GPUS:
        assert gpu.name in out
    assert "143771 MiB" in out
    assert main(["gpus", "-o", "yaml"]) == 0
    records = yaml.safe_load(capsys.readouterr().out)
    by_name = {r["name"]: r for r in records}
    assert by_name["NVIDIA-H200"]["memoryBytes"] == 143771 * 1024**2
    assert by_name["NVIDIA-GB10"]["memoryReported"] is False
