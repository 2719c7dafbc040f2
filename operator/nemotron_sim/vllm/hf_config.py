"""The stand-in's model facts: a checkpoint's ``config.json``, read as vLLM reads it.

vLLM learns a model's architecture from the checkpoint's config.json, never from a table of its
own; so does the stand-in. It looks for ``<model>/config.json`` (the operator serves
``/models/<org>/<name>``), then in ``hub/<org>/<name>/config.json`` beside this file: config.json-
shaped files written from the public configs as docs/model-facts.md §1 quotes them (the field
names of ``NemotronHConfig``; the VL checkpoints nest the language model in ``llm_config``). The
operator's catalog is never consulted, so a wrong catalog fact makes the operator's plan disagree
with what the stand-in allocates, and PlanAccurate says so (tests/unit/sim_vllm/
test_independent_facts.py). What is shared is method, not fact: the parameter counting rules
(``catalog.params``) and the precision recipe per parameter category (``catalog.precision``).
"""

from __future__ import annotations

import fnmatch
import json
from pathlib import Path
from typing import Any, Literal

from nemotron_operator.catalog.models import ModelEntry, parts_from_config
from nemotron_operator.catalog.params import Dims, VisionTower

Precision = Literal["BF16", "FP8", "NVFP4"]  # the simulated cluster may not import the API
HUB = Path(__file__).resolve().parent / "hub"
# A routed expert of the MTP head, as a checkpoint names its weights.
MTP_EXPERT_WEIGHT = "mtp.layers.0.mixer.experts.0.up_proj"


def config_path(model: str) -> Path | None:
    """Where ``vllm serve MODEL``'s config.json is: in the model directory, else in the hub."""
    local = Path(model) / "config.json"
    if local.is_file():
        return local
    tail = "/".join(model.rstrip("/").split("/")[-2:])
    shipped = HUB / tail / "config.json"
    return shipped if tail and shipped.is_file() else None


def load_model(model: str) -> ModelEntry | None:
    """The model ``vllm serve MODEL`` would load, or None when no config.json is found."""
    path = config_path(model)
    if path is None:
        return None
    config = json.loads(path.read_text(encoding="utf-8"))
    return model_from_config("/".join(model.rstrip("/").split("/")[-2:]), config)


def _precision(quantization: dict[str, Any] | None) -> Precision:
    if not quantization:
        return "BF16"
    algo = str(quantization.get("quant_algo", ""))
    if algo == "MIXED_PRECISION":
        layers = quantization.get("quantized_layers") or {}
        algos = {str(v.get("quant_algo")) for v in layers.values()}
        algo = "NVFP4" if "NVFP4" in algos else "FP8"
    if algo not in ("FP8", "NVFP4"):
        raise ValueError(f"config.json quantization_config.quant_algo {algo!r} is not FP8 or NVFP4")
    precision: Precision = "FP8" if algo == "FP8" else "NVFP4"
    return precision


def _vision(config: dict[str, Any]) -> VisionTower | None:
    vision = config.get("vision_config")
    if vision is None:
        return None
    shuffle = round(1 / float(config["downsample_ratio"]))
    per_token = shuffle * shuffle
    return VisionTower(
        name=str(vision.get("model_type", "vision")),
        blocks=int(vision["num_hidden_layers"]),
        width=int(vision["hidden_size"]),
        ffn=int(vision["intermediate_size"]),
        patch_size=int(vision["patch_size"]),
        pixel_shuffle=shuffle,
        projector_hidden=int(config["projector_hidden_size"]),
        min_tokens_per_image=int(config["min_num_patches"]) // per_token,
        max_tokens_per_image=int(config["max_num_patches"]) // per_token,
        max_patches_per_image=int(config["max_num_patches"]),
        tokens_per_video_tubelet=int(config["video_target_num_patches"]) // per_token,
    )


def model_from_config(hf_id: str, config: dict[str, Any]) -> ModelEntry:
    """A ModelEntry built from config.json fields alone."""
    llm: dict[str, Any] = config.get("llm_config") or config
    pattern = str(llm["hybrid_override_pattern"])
    if len(pattern) != int(llm["num_hidden_layers"]):
        raise ValueError(f"{hf_id}: hybrid_override_pattern has {len(pattern)} layers, not "
                         f"num_hidden_layers {llm['num_hidden_layers']}")  # fmt: skip
    dims = Dims(
        hidden_size=int(llm["hidden_size"]),
        num_attention_heads=int(llm["num_attention_heads"]),
        num_key_value_heads=int(llm["num_key_value_heads"]),
        head_dim=int(llm["head_dim"]),
        mamba_num_heads=int(llm["mamba_num_heads"]),
        mamba_head_dim=int(llm["mamba_head_dim"]),
        ssm_state_size=int(llm["ssm_state_size"]),
        mamba_n_groups=int(llm["n_groups"]),
        conv_kernel=int(llm["conv_kernel"]),
        n_routed_experts=int(llm.get("n_routed_experts") or 0),
        num_experts_per_tok=int(llm.get("num_experts_per_tok") or 0),
        n_shared_experts=int(llm.get("n_shared_experts") or 0),
        vocab_size=int(llm["vocab_size"]),
        moe_intermediate_size=llm.get("moe_intermediate_size"),
        moe_shared_expert_intermediate_size=llm.get("moe_shared_expert_intermediate_size"),
        moe_latent_size=llm.get("moe_latent_size"),
        intermediate_size=llm.get("intermediate_size"),
    )
    mtp_layers = int(llm.get("num_nextn_predict_layers") or 0)
    mtp_pattern = str(llm.get("mtp_hybrid_override_pattern") or "") if mtp_layers else ""
    vision = _vision(config)
    quantization = config.get("quantization_config") or llm.get("quantization_config")
    excluded = (quantization or {}).get("exclude_modules") or []
    mtp_experts_quantized = quantization is not None and not any(
        fnmatch.fnmatch(MTP_EXPERT_WEIGHT, pattern) for pattern in excluded
    )
    return ModelEntry(
        hf_id=hf_id,
        family=hf_id,
        variant="",
        precision=_precision(quantization),
        architecture=str((config.get("architectures") or ["?"])[0]),
        dims=dims,
        layer_pattern=pattern,
        max_position_embeddings=int(llm["max_position_embeddings"]),
        trained_context=int(llm["max_position_embeddings"]),
        mtp_layers=mtp_layers,
        mtp_pattern=mtp_pattern,
        vision=vision is not None,
        vision_tower=vision,
        trust_remote_code=vision is not None,
        default_reasoning_parser=None,
        default_tool_call_parser=None,
        parts=parts_from_config(dims, pattern, mtp_layers, mtp_pattern, vision),
        in_catalog=False,
        mtp_experts_quantized=mtp_experts_quantized,
    )
