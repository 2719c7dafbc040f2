"""``--block-size`` in spec.engine.extraArgs: vLLM starts its hybrid block alignment from it
(``user_specified_block_size``), so the plan must too — vLLM's CPU build otherwise forces 128.

The figures are what vLLM 0.32.0's CPU build reported for examples/tiny-nemotron-h-cpu.yaml's
checkpoint (one attention layer, one MTP attention layer, three Mamba-2 layers, one draft token,
maxModelLen 2048) in ``vllm:cache_config_info`` (tests/contract/vllm-0.32.0-cpu/metrics.txt):
block_size 128, num_gpu_blocks 1024 and kv_cache_max_concurrency 51.2 — 20 blocks per
full-length request (16 attention blocks + 2 Mamba groups × 2 slots)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from nemotron_operator.api import NemotronDeployment
from nemotron_operator.sizing import PlanningError, plan_deployment
from nemotron_operator.sizing.settings import user_block_size

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "tiny-nemotron-h-cpu.yaml"


def tiny(extra_args: list[str]) -> Any:
    document = yaml.safe_load(EXAMPLE.read_text())
    document["spec"]["engine"]["extraArgs"] = extra_args
    return NemotronDeployment.model_validate(document)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--block-size", "128"], 128),
        (["--enforce-eager", "--block-size=256"], 256),
        (["--enforce-eager"], None),
        (["--block-size"], None),
        (["--block-size", "x"], None),
    ],
)
def test_the_user_block_size_is_read_from_the_extra_args(
    args: list[str], expected: int | None
) -> None:
    assert user_block_size(args) == expected


def test_a_user_block_size_plans_the_blocks_vllm_cpu_allocated() -> None:
    plan = plan_deployment(tiny(["--enforce-eager", "--block-size", "128"]).spec).plan
    assert plan.block_size_tokens == 128
    assert plan.blocks_per_sequence == 20
    assert plan.max_concurrency == pytest.approx(plan.kv_cache_blocks / 20, abs=0.01)


def test_without_it_the_release_default_alignment_stays() -> None:
    plan = plan_deployment(tiny(["--enforce-eager"]).spec).plan
    assert plan.block_size_tokens != 128


def test_fewer_batched_tokens_than_sequences_is_refused_naming_the_field() -> None:
    """vLLM 0.32.0 refused it at start: ``max_num_batched_tokens (2048) must be greater than or
    equal to max_num_seqs (4096)``; the plan refuses it first, naming the field."""
    document = yaml.safe_load(EXAMPLE.read_text())
    document["spec"]["engine"].update(maxNumSeqs=4096, maxNumBatchedTokens=2048)
    with pytest.raises(PlanningError) as refused:
        plan_deployment(NemotronDeployment.model_validate(document).spec)
    assert refused.value.field == "spec.engine.maxNumBatchedTokens"
    assert "raise maxNumBatchedTokens to at least 4096" in str(refused.value)
    document["spec"]["engine"].update(maxNumSeqs=2048)
    assert plan_deployment(NemotronDeployment.model_validate(document).spec).plan
