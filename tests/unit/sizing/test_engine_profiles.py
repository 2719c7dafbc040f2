"""One engine profile per vLLM release, 0.31 to 0.34: which one a deployment gets, and what each
changes in the plan (block size, the pool). The block sizes the issue derived from each release's
code (vLLM 0.34 ``DEFAULT_BLOCK_SIZE`` 64 and ``_align_hybrid_block_size``) are checked here; the
per-release reference numbers of the recipe cases are test_release_reference.py's.
"""

from __future__ import annotations

import math

import pytest

from nemotron_operator.api import NemotronDeploymentSpec
from nemotron_operator.catalog.gpus import GIB
from nemotron_operator.catalog.vllm_releases import (
    NEWEST,
    PROFILES,
    EngineVersionError,
    resolve_release,
)
from nemotron_operator.sizing import PlanningError, plan_deployment
from nemotron_operator.sizing.reserve import (
    CUDA_CONTEXT_BYTES,
    KV_CACHE_MARGIN_FLOOR_BYTES,
    TRANSIENT,
)

from .helpers import NANO_BF16, SUPER_VL_BF16, layout_memory

H200 = "NVIDIA-H200"
B200 = "NVIDIA-B200"


def image(version: str) -> str:
    return f"vllm/vllm-openai:v{version}"


@pytest.mark.parametrize(
    ("image_ref", "version", "profile"),
    [
        ("vllm/vllm-openai:v0.31.0", None, "0.31"),
        ("vllm/vllm-openai:v0.32.0", None, "0.32"),
        ("vllm/vllm-openai:v0.33.1", None, "0.33"),  # a patch release: its minor's profile
        ("vllm/vllm-openai:0.34.0-cu130", None, "0.34"),
        ("registry.example:5000/vllm@sha256:abc", "0.33.0", "0.33"),
        ("registry.example/vllm:custom-build", "0.32", "0.32"),
        ("vllm/vllm-openai:v0.33.0", "v0.33.2", "0.33"),  # agrees with the tag
    ],
)
def test_the_release_comes_from_the_tag_or_the_version_field(
    image_ref: str, version: str | None, profile: str
) -> None:
    release = resolve_release(image_ref, version)
    assert release.profile.name == profile
    assert release.note is None


@pytest.mark.parametrize(
    ("image_ref", "version", "field", "words"),
    [
        ("vllm/vllm-openai:v0.30.2", None, "spec.engine.image", "older than the oldest"),
        ("vllm/vllm-openai@sha256:abc", "0.19.0", "spec.engine.version", "0.31.0"),
        ("vllm/vllm-openai:v0.34.0", "0.33.0", "spec.engine.version", "contradicts the image"),
        ("vllm/vllm-openai@sha256:abc", "next", "spec.engine.version", "not a vLLM version"),
    ],
)
def test_a_release_that_cannot_be_planned_is_refused_naming_the_field(
    image_ref: str, version: str | None, field: str, words: str
) -> None:
    with pytest.raises(EngineVersionError) as caught:
        resolve_release(image_ref, version)
    assert caught.value.field == field
    assert words in str(caught.value)


def test_the_planner_refuses_an_old_release_with_the_field() -> None:
    spec = NemotronDeploymentSpec.model_validate(
        {"model": {"id": NANO_BF16}, "engine": {"image": image("0.28.0")}}
    )
    with pytest.raises(PlanningError) as caught:
        plan_deployment(spec)
    assert caught.value.reason == "UnsupportedEngineVersion"
    assert caught.value.field == "spec.engine.image"
    assert "vLLM 0.28.0 is older" in caught.value.message


@pytest.mark.parametrize(
    ("image_ref", "words"),
    [
        ("vllm/vllm-openai:v0.36.1", "vLLM 0.36.1 is newer than the newest"),
        ("vllm/vllm-openai:latest", "is not a vLLM version: planned for vLLM 0.34"),
    ],
)
def test_a_newer_or_unknown_release_is_planned_with_the_newest_profile_and_says_so(
    image_ref: str, words: str
) -> None:
    spec = NemotronDeploymentSpec.model_validate(
        {"model": {"id": NANO_BF16}, "engine": {"image": image_ref}}
    )
    plan = plan_deployment(spec).plan
    assert plan.engine_version == NEWEST.name
    assert any(words in note for note in plan.notes)


@pytest.mark.parametrize(
    ("hf_id", "tp", "draft", "before", "after"),
    [
        # The figures (derived from 0.31's and 0.34's _align_hybrid_block_size).
        (SUPER_VL_BF16, 4, 0, 2080, 2112),
        (SUPER_VL_BF16, 8, 0, 1040, 1088),
        (NANO_BF16, 1, 0, 2096, 2112),
        (NANO_BF16, 8, 0, 528, 576),
        # and with MTP (the conv state grows by the draft tokens)
        (SUPER_VL_BF16, 4, 1, 2096, 2112),
        (SUPER_VL_BF16, 2, 1, 4176, 4224),
    ],
)
def test_hybrid_blocks_are_multiples_of_64_from_0_34(
    hf_id: str, tp: int, draft: int, before: int, after: int
) -> None:
    for profile in PROFILES:
        memory = layout_memory(hf_id, tp, draft_tokens=draft, image=image(profile.release))
        expected = after if profile.minor >= (0, 34) else before
        assert memory.block_size == expected, profile.name
        # The Mamba page is padded to exactly one attention page.
        assert memory.page_bytes == memory.block_size * memory.attention_page_per_token


def test_the_0_34_pool_is_the_extensible_caches_measure() -> None:
    memory = layout_memory(SUPER_VL_BF16, 4, gpu_name=H200, draft_tokens=1, image=image("0.34.0"))
    stage = memory.binding
    reserve = dict(stage.reserve)
    transient = sum(b for name, b in stage.reserve if name in TRANSIENT)
    resident = stage.reserve_bytes - transient - reserve["kvCacheMargin"]
    margin = max(KV_CACHE_MARGIN_FLOOR_BYTES, int(transient * 0.75))
    gpu = memory.gpu.memory_bytes
    # min(requested − non-KV, free after the context − non-KV − margin) − transient peak, with
    # requested = all of the GPU (gpu_memory_utilization unset → 1.0)
    non_kv = stage.weights_bytes + resident
    expected = min(gpu - non_kv, gpu - CUDA_CONTEXT_BYTES - non_kv - margin) - transient
    assert stage.usable_bytes == gpu
    assert stage.kv_pool_bytes == expected
    assert reserve["kvCacheMargin"] == CUDA_CONTEXT_BYTES + margin


def test_an_explicit_utilization_caps_the_0_34_pool_like_vllm() -> None:
    capped = layout_memory(
        SUPER_VL_BF16, 4, gpu_name=H200, image=image("0.34.0"), gpu_memory_utilization=0.9
    )
    stage = capped.binding
    # 0.9 × memory is below the device bound: the requested budget binds, no margin is taken.
    assert dict(stage.reserve)["kvCacheMargin"] == 0
    assert stage.usable_bytes == math.ceil(capped.gpu.memory_bytes * 0.9)
    assert stage.kv_pool_bytes == stage.usable_bytes - stage.weights_bytes - stage.reserve_bytes
    full = layout_memory(SUPER_VL_BF16, 4, gpu_name=H200, image=image("0.34.0"))
    assert full.binding.kv_pool_bytes - stage.kv_pool_bytes > 8 * GIB  # vLLM warns about this


@pytest.mark.parametrize("release", ["0.31.0", "0.32.0", "0.33.0"])
def test_up_to_0_33_the_pool_is_utilization_times_memory_less_non_kv(release: str) -> None:
    memory = layout_memory(SUPER_VL_BF16, 4, gpu_name=H200, image=image(release))
    stage = memory.binding
    assert "kvCacheMargin" not in dict(stage.reserve)
    assert stage.usable_bytes == math.ceil(memory.gpu.memory_bytes * 0.90)
    assert stage.kv_pool_bytes == stage.usable_bytes - stage.weights_bytes - stage.reserve_bytes


@pytest.mark.parametrize("gpu", [H200, B200])
def test_the_plan_records_its_profile_and_0_31_keeps_todays_numbers(gpu: str) -> None:
    plans = {}
    for profile in PROFILES:
        spec = NemotronDeploymentSpec.model_validate(
            {
                "model": {"id": SUPER_VL_BF16},
                "engine": {"image": image(profile.release)},
                "capacity": {"gpu": {"products": [gpu]}},
            }
        )
        plans[profile.name] = plan_deployment(spec).plan
        assert plans[profile.name].engine_version == profile.name
    # 0.32 and 0.33 change nothing the plan computes; only 0.31 keeps the Mamba-align fix.
    for same in ("0.32", "0.33"):
        exclude = {"engine_version", "notes"}
        assert plans[same].model_dump(exclude=exclude) == plans["0.31"].model_dump(exclude=exclude)
        fix = [n for n in plans["0.31"].notes if "mtp-prefix-caching-mamba-align" in n]
        assert len(fix) == 1
        assert [n for n in plans["0.31"].notes if n not in fix] == plans[same].notes
    assert plans["0.34"].block_size_tokens % 64 == 0
    assert plans["0.34"].per_gpu.kv_pool_bytes > plans["0.31"].per_gpu.kv_pool_bytes


def test_a_planned_pool_keeps_the_plan_and_only_changes_who_enforces_it() -> None:
    for release in ("0.31.0", "0.34.0"):
        measured = layout_memory(SUPER_VL_BF16, 4, gpu_name=H200, image=image(release))
        planned = layout_memory(
            SUPER_VL_BF16, 4, gpu_name=H200, image=image(release), kv_cache_memory="Planned"
        )
        assert planned.binding.kv_pool_bytes == measured.binding.kv_pool_bytes
        assert planned.num_blocks == measured.num_blocks
