"""The model catalog: ids, layer patterns, and parameter counts reproduced from the dimensions."""

from __future__ import annotations

import pytest

from nemotron_operator.api import ParameterCounts
from nemotron_operator.catalog import MODELS, lookup_model, model_from_architecture, sibling
from tests.unit.sizing.helpers import super_as_architecture

GIB = 1024**3
SUPER_VL_BF16 = "nvidia/NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-BF16"
SUPER_BF16 = "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16"


def test_ids_are_unique_and_look_like_hugging_face_repos() -> None:
    ids = [m.hf_id for m in MODELS]
    assert len(ids) == len(set(ids))
    assert all(i.startswith("nvidia/") and i.count("/") == 1 for i in ids)


@pytest.mark.parametrize(
    "hf_id",
    [
        "nvidia/NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-BF16",
        "nvidia/NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-FP8",
        "nvidia/NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-NVFP4",
        "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16",
        "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8",
        "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4",
        "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
        "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-FP8",
        "nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4",
        "nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-BF16",
        "nvidia/NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-Base-BF16",
        "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16",
        "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-Base-BF16",
        "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-NVFP4",
        "nvidia/Nemotron-H-8B-Base-8K",
        "nvidia/Nemotron-H-47B-Base-8K",
        "nvidia/Nemotron-H-56B-Base-8K",
        "nvidia/NVIDIA-Nemotron-Nano-9B-v2",
    ],
)
def test_the_issue_s_models_are_in_the_catalog(hf_id: str) -> None:
    entry = lookup_model(hf_id)
    assert entry is not None
    assert entry.hf_id == hf_id
    assert lookup_model(hf_id.upper()) is entry  # the Hub resolves ids case-insensitively


def test_unknown_id_is_none() -> None:
    assert lookup_model("nvidia/not-a-model") is None


@pytest.mark.parametrize(
    ("hf_id", "layers", "counts"),
    [
        # model-facts.md §1.1 and §1.3: M / E / * / - counts
        (SUPER_BF16, 88, (40, 40, 8, 0)),
        ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", 52, (23, 23, 6, 0)),
        ("nvidia/Nemotron-H-8B-Base-8K", 52, (24, 0, 4, 24)),
        ("nvidia/Nemotron-H-47B-Base-8K", 98, (45, 0, 5, 48)),
        ("nvidia/Nemotron-H-56B-Base-8K", 118, (54, 0, 10, 54)),
        ("nvidia/NVIDIA-Nemotron-Nano-9B-v2", 56, (27, 0, 4, 25)),
    ],
)
def test_layer_patterns_match_the_configs(
    hf_id: str, layers: int, counts: tuple[int, int, int, int]
) -> None:
    entry = lookup_model(hf_id)
    assert entry is not None
    assert entry.num_hidden_layers == layers
    assert tuple(entry.layer_count(k) for k in "ME*-") == counts


def test_super_attention_layers_sit_where_the_facts_say() -> None:
    entry = lookup_model(SUPER_BF16)
    assert entry is not None
    positions = [i for i, k in enumerate(entry.layer_pattern) if k == "*"]
    assert positions == [7, 16, 25, 36, 47, 58, 69, 78]


def test_super_parameter_split_reproduces_the_published_counts() -> None:
    # NVIDIA: 120.6 B total [P]; our facts: routed 112.74 B, non-expert 7.93 B, MTP 2.94 B [D].
    split = lookup_model(SUPER_BF16).parameter_split()  # type: ignore[union-attr]
    assert split.routed_experts + split.other == pytest.approx(120.6e9, rel=0.002)
    assert split.routed_experts == pytest.approx(112.74e9, rel=0.001)
    assert split.other == pytest.approx(7.93e9, rel=0.005)
    assert split.mtp == pytest.approx(2.94e9, rel=0.005)
    assert split.total == pytest.approx(123.61e9, rel=0.001)  # GGUF metadata "123.61B" [B]


def test_super_vl_bf16_checkpoint_is_the_seed_s_231_8_gib() -> None:
    # The seed's "231.8 GB" is GiB: BF16 text + MTP + a 0.82 B vision tower (model-facts.md §3).
    entry = lookup_model(SUPER_VL_BF16)
    assert entry is not None
    assert entry.parameter_split().vision == pytest.approx(0.82e9, rel=0.01)
    assert round(entry.weights_bytes() / GIB, 1) == 231.8


@pytest.mark.parametrize(
    ("hf_id", "gib", "rel"),
    [
        (SUPER_BF16, 230.2, 0.002),  # 247.2 GB [D]
        ("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8", 119.5, 0.005),  # ≈128 GB [D]
        # NVIDIA's NVFP4 recipe (Ultra tech report Table 12 [P]) with the MTP head's routed experts
        # in NVFP4 gives 69.97 GiB; the released checkpoint is 69.5 GiB [B] (model-facts.md §3.1).
        ("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4", 69.5, 0.01),
    ],
)
def test_checkpoint_sizes_by_precision(hf_id: str, gib: float, rel: float) -> None:
    entry = lookup_model(hf_id)
    assert entry is not None
    assert entry.weights_bytes() / GIB == pytest.approx(gib, rel=rel)


@pytest.mark.parametrize(
    ("hf_id", "published_gib", "over"),
    [
        # "20.1 GB across 70 files", measured on a DGX Spark [B] (model-facts.md §3.1)
        ("nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4", 20.1e9 / GIB, 0.02),
        ("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4", 69.5, 0.01),  # kubis.ai [B]
        ("nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-NVFP4", 352e9 / GIB, 0.005),  # 352 GB [S]
    ],
)
def test_nvfp4_recipe_is_a_tight_upper_bound_of_released_checkpoints(
    hf_id: str, published_gib: float, over: float
) -> None:
    # The recipe (routed experts NVFP4, shared experts and Mamba GEMMs FP8, the rest BF16; the MTP
    # head's experts NVFP4 for Super and Lightning, BF16 for Ultra) must never undercount a
    # released checkpoint, and overcounts by at most ``over``.
    entry = lookup_model(hf_id)
    assert entry is not None
    assert published_gib * 0.995 <= entry.weights_bytes() / GIB <= published_gib * (1 + over)


@pytest.mark.parametrize(
    ("hf_id", "billions"),
    [
        ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", 31.6),  # NVIDIA: 31.6 B total
        ("nvidia/Nemotron-H-8B-Base-8K", 8.1),
        ("nvidia/Nemotron-H-56B-Base-8K", 56.3),
        ("nvidia/NVIDIA-Nemotron-Nano-9B-v2", 8.9),
    ],
)
def test_sibling_parameter_counts(hf_id: str, billions: float) -> None:
    entry = lookup_model(hf_id)
    assert entry is not None
    assert entry.parameter_split().total / 1e9 == pytest.approx(billions, rel=0.01)


def test_serving_defaults() -> None:
    vl = lookup_model(SUPER_VL_BF16)
    base = lookup_model("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-Base-BF16")
    assert vl is not None
    assert base is not None
    assert vl.vision
    assert vl.trust_remote_code
    assert vl.default_reasoning_parser == "nemotron_v3"
    assert vl.default_tool_call_parser == "qwen3_coder"
    assert (vl.max_position_embeddings, vl.trained_context) == (262144, 1048576)
    assert vl.mtp_layers == 1
    assert vl.mtp_attention_layers == 1
    assert not base.vision
    assert base.default_reasoning_parser is None


def test_sibling_finds_other_precisions_of_the_same_checkpoint() -> None:
    entry = lookup_model(SUPER_BF16)
    assert entry is not None
    fp8 = sibling(entry, "FP8")
    assert fp8 is not None
    assert fp8.hf_id.endswith("-FP8")
    assert fp8.variant == entry.variant
    assert sibling(lookup_model("nvidia/Nemotron-H-8B-Base-8K"), "NVFP4") is None  # type: ignore[arg-type]


def test_explicit_architecture_of_a_catalog_model_weighs_the_same() -> None:
    entry = lookup_model(SUPER_BF16)
    assert entry is not None
    explicit = model_from_architecture("example/super-copy", super_as_architecture())
    assert not explicit.in_catalog
    assert explicit.weights_bytes() == pytest.approx(entry.weights_bytes(), rel=1e-4)
    assert explicit.parameter_split().total == pytest.approx(
        entry.parameter_split().total, rel=1e-6
    )


def test_explicit_architecture_with_too_few_parameters_names_the_field() -> None:
    arch = super_as_architecture(
        parameters=ParameterCounts(routed_experts=112_000_000_000, other=1_000_000)
    )
    with pytest.raises(ValueError, match=r"spec\.model\.architecture\.parameters\.other"):
        model_from_architecture("example/broken", arch)
