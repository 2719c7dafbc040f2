"""Bytes per parameter of each checkpoint precision, category by category.

Recipes (model-facts.md §3, from NVIDIA-NeMo ``skills/nemotron-super3/paper/quantization.md`` [P]):

- BF16: every tensor 2 bytes.
- FP8: routed experts, shared experts and the Mamba GEMMs in FP8 (1 byte; per-tensor scales are
  negligible); embeddings, attention projections, latent projections and the LM head stay BF16;
  the router FP32.
- NVFP4: NVIDIA's released recipe (Nemotron 3 Ultra tech report Table 12 [P], the same operator
  choices as the Super recipe's search space, model-facts.md §3): routed experts as NVFP4 — E2M1
  packed two per byte plus one FP8 scale per 16 values, 4.5 bits per parameter (vLLM
  ``modelopt.py`` [P]); shared experts and the Mamba mixer linears FP8 per-tensor; attention,
  latent projections, embeddings, LM head and Mamba conv1d BF16; the router FP32. Checked
  against released checkpoints (model-facts.md §3.1): Lightning 20.74 GiB vs 20.1 GiB (+3 %),
  Ultra 328.6 GiB vs 352 GB = 327.8 GiB, Super 73.7 GiB vs 69.5 GiB (+6 %: how Super's MTP head
  is stored is not published; see docs/sizing.md).
- The MTP head and the vision tower stay BF16 in every quantized checkpoint (``mtp_ignored``,
  ``keep_mtp_spec_in_bf16``; no ``vision_model.*`` in ``quantized_layers``; Table 12 "MTP layers
  BF16") [S][P].
"""

from __future__ import annotations

from nemotron_operator.api.model import Precision
from nemotron_operator.catalog.params import (
    DENSE_MLP,
    FFN_OTHER,
    MAMBA_PROJ,
    ROUTED_EXPERTS,
    ROUTER,
    SHARED_EXPERTS,
    Category,
    Part,
)

# Half-bits per parameter, so NVFP4's 4.5 bits stays an integer.
BF16_HALF_BITS = 32
FP8_HALF_BITS = 16
NVFP4_HALF_BITS = 9
FP32_HALF_BITS = 64

RECIPES: dict[Precision, dict[Category, int]] = {
    "BF16": {},
    "FP8": {
        ROUTED_EXPERTS: FP8_HALF_BITS,
        SHARED_EXPERTS: FP8_HALF_BITS,
        MAMBA_PROJ: FP8_HALF_BITS,
        DENSE_MLP: FP8_HALF_BITS,
        FFN_OTHER: FP8_HALF_BITS,
        ROUTER: FP32_HALF_BITS,
    },
    "NVFP4": {
        ROUTED_EXPERTS: NVFP4_HALF_BITS,
        SHARED_EXPERTS: FP8_HALF_BITS,
        MAMBA_PROJ: FP8_HALF_BITS,
        ROUTER: FP32_HALF_BITS,
    },
}

PRECISION_BITS_LABEL: dict[Precision, str] = {
    "BF16": "all BF16",
    "FP8": "experts and Mamba GEMMs FP8, attention/embeddings BF16, router FP32",
    "NVFP4": "routed experts NVFP4 (4.5 bits), shared experts and Mamba GEMMs FP8, rest BF16",
}


def half_bits(precision: Precision, category: Category) -> int:
    return RECIPES[precision].get(category, BF16_HALF_BITS)


def part_bytes(part: Part, precision: Precision, *, keep_bf16: bool = False) -> int:
    """Bytes of one part; ``keep_bf16`` for the parts every recipe leaves in BF16 (MTP, vision)."""
    total_half_bits = 0
    for category, count in part:
        bits = BF16_HALF_BITS if keep_bf16 else half_bits(precision, category)
        total_half_bits += count * bits
    return -(-total_half_bits // 16)
