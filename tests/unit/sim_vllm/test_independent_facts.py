"""The stand-in vLLM learns each model from its config.json, not from the operator's catalog
(issue 26), so PlanAccurate compares two accounts fed from two sources: a wrong catalog fact now
shows up as a plan vLLM does not meet."""

from __future__ import annotations

import ast
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from nemotron_operator.api import NemotronDeployment, Plan
from nemotron_operator.catalog import lookup_model, model_data
from nemotron_operator.catalog.models import parts_from_config
from nemotron_operator.observe.plan_check import compare, observed_cache
from nemotron_operator.observe.samples import CacheConfigInfo
from nemotron_operator.render import render_all
from nemotron_operator.sizing import plan_deployment
from nemotron_operator.status import Readiness, StatusInputs, compute_status
from nemotron_sim.vllm import hf_config
from nemotron_sim.vllm.args import parse_serve_argv
from nemotron_sim.vllm.kv_cache import allocate, info_labels

ROOT = Path(__file__).resolve().parents[3]
STAND_IN = ROOT / "operator" / "nemotron_sim" / "vllm"
SHIPPED = sorted(
    str(p.parent.relative_to(hf_config.HUB)) for p in hf_config.HUB.glob("*/*/config.json")
)
NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"


def stand_in_check(deployment: NemotronDeployment) -> tuple[Plan, bool, str, float]:
    """Plan and render with the operator, start the stand-in on the rendered command line, and
    compare what it allocates with the plan as the operator's scraper does."""
    result = plan_deployment(deployment.spec)
    objects = render_all(deployment, result)
    sts = next(o for o in objects if o["kind"] == "StatefulSet")
    container = sts["spec"]["template"]["spec"]["containers"][0]
    config = parse_serve_argv([*container["command"], *container["args"]])
    allocation = allocate(
        config.model,
        config.options,
        max_model_len=config.max_model_len,
        max_num_seqs=config.max_num_seqs if "--max-num-seqs" in config.options else None,
        spec_tokens=config.num_speculative_tokens,
        gpu_product=result.plan.gpu_product,
    )
    labels = info_labels(allocation, config.options)
    observed = observed_cache("pod-0", CacheConfigInfo(labels), result.plan)
    assert observed is not None
    checked = compare(result.plan, [observed])
    assert checked is not None
    blocks = checked.deviation("kvCacheBlocks")
    return result.plan, checked.accurate, checked.message, blocks


def deployment_of(hf_id: str, **engine: object) -> NemotronDeployment:
    return NemotronDeployment.model_validate(
        {
            "apiVersion": "serving.nemotron.io/v1alpha1",
            "kind": "NemotronDeployment",
            "metadata": {"name": "m", "namespace": "ai"},
            "spec": {"model": {"id": hf_id}, "engine": {"maxModelLen": 8192, **engine}},
        }
    )


def test_the_stand_in_never_reads_the_catalogs_model_table() -> None:
    for path in STAND_IN.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        names |= {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
        modules = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert not names & {"lookup_model", "MODELS", "sibling"}, path.name
        assert not modules & {"nemotron_operator.catalog.model_data"}, path.name
        assert not {m for m in modules if m and m.startswith("nemotron_operator.catalog.ultra")}


def test_shipped_configs_are_found_by_id_and_by_the_served_path() -> None:
    assert NANO in SHIPPED
    assert hf_config.config_path(NANO) == hf_config.HUB / NANO / "config.json"
    assert hf_config.config_path(f"/models/{NANO}") == hf_config.HUB / NANO / "config.json"
    assert hf_config.config_path("/models/unknown-org/unknown-model") is None


def test_a_config_json_in_the_model_directory_wins(tmp_path: Path) -> None:
    shipped = (hf_config.HUB / NANO / "config.json").read_text(encoding="utf-8")
    local = tmp_path / "nvidia" / "custom"
    local.mkdir(parents=True)
    (local / "config.json").write_text(
        shipped.replace('"num_key_value_heads": 2', '"num_key_value_heads": 4')
    )
    model = hf_config.load_model(str(local))
    assert model is not None
    assert model.num_key_value_heads == 4


def test_a_vl_config_nests_the_language_model_and_describes_the_tower() -> None:
    model = hf_config.load_model("nvidia/NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-BF16")
    assert model is not None
    assert model.vision
    assert model.vision_tower is not None
    assert (model.vision_tower.max_tokens_per_image, model.vision_tower.pixel_shuffle) == (3328, 2)
    assert model.num_hidden_layers == 88
    assert model.mtp_attention_layers == 1


def test_quantization_comes_from_quantization_config() -> None:
    precisions = {
        hf_id: model.precision
        for hf_id in SHIPPED
        if (model := hf_config.load_model(hf_id)) is not None
    }
    assert precisions["nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8"] == "FP8"
    assert precisions["nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4"] == "NVFP4"  # mixed
    assert precisions[NANO] == "BF16"
    ultra = hf_config.load_model("nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-NVFP4")
    super_nvfp4 = hf_config.load_model("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4")
    assert ultra is not None
    assert super_nvfp4 is not None
    assert not ultra.mtp_experts_quantized  # its exclude_modules keep the MTP head BF16
    assert super_nvfp4.mtp_experts_quantized


@pytest.mark.parametrize("hf_id", SHIPPED)
def test_with_a_correct_catalog_the_stand_in_meets_the_plan(hf_id: str) -> None:
    plan, accurate, message, blocks = stand_in_check(deployment_of(hf_id))
    assert accurate, message
    assert blocks == 0.0, message  # two sources, same facts: the same blocks
    assert plan.model_id == hf_id


@pytest.mark.parametrize(
    ("field", "wrong"),
    [("num_key_value_heads", 1), ("mamba_head_dim", 32), ("ssm_state_size", 64)],
)
def test_a_catalog_error_makes_plan_accurate_fail(
    monkeypatch: pytest.MonkeyPatch, field: str, wrong: int
) -> None:
    right = lookup_model(NANO)
    assert right is not None
    dims = replace(right.dims, **{field: wrong})
    parts = parts_from_config(dims, right.layer_pattern, right.mtp_layers, right.mtp_pattern, None)
    monkeypatch.setitem(model_data._BY_ID, NANO.lower(), replace(right, dims=dims, parts=parts))
    deployment = NemotronDeployment.model_validate(
        yaml.safe_load((ROOT / "examples" / "nano-bf16.yaml").read_text(encoding="utf-8"))
    )
    plan, accurate, message, _ = stand_in_check(deployment)
    assert not accurate  # some figure (blocks, tokens or concurrency) fell short by over 5 %
    assert "vLLM got materially less KV cache than planned" in message
    # What the operator then reports (controller/pods/scraper.py maps the comparison this way).
    status = compute_status(
        StatusInputs(
            generation=1,
            replicas=1,
            selector="app=x",
            endpoint="http://x:8000/v1",
            plan=plan,
            readiness=Readiness(1, None),
            plan_accurate=("False", "LessThanPlanned", message),
        ),
        None,
        now="2026-01-01T00:00:00Z",
    )
    found = {c.type: c for c in status.conditions}["PlanAccurate"]
    assert (found.status, found.reason) == ("False", "LessThanPlanned")
