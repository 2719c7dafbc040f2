"""The model catalog: Nemotron hybrid Mamba-2 checkpoints, keyed by their Hugging Face ids.

Every dimension comes from the released config.json as quoted in docs/model-facts.md
(§1.1 Super, §1.2 Super VL, §1.3 siblings; grades [P] primary, [S] several repositories). The
parameter counts are not typed in: catalog.params counts them from these dimensions, and the tests
check the totals against NVIDIA's published figures (120.6 B for Super, model-facts.md §1.1).
"""

from __future__ import annotations

from nemotron_operator.api.model import Precision
from nemotron_operator.catalog.models import ModelEntry, parts_from_config
from nemotron_operator.catalog.params import Dims, VisionTower
from nemotron_operator.catalog.ultra import (
    ULTRA_CONTEXT,
    ULTRA_DIMS,
    ULTRA_MTP_LAYERS,
    ULTRA_PATTERN,
    ULTRA_SOURCES,
    ULTRA_TRAINED_CONTEXT,
    ULTRA_UNVERIFIED,
)

VOCAB = 131072  # every Nemotron-H / Nemotron 3 config (model-facts.md §1.3 "All")
CONV_KERNEL = 4  # idem

# Nemotron 3 Super 120B-A12B; model-facts.md §1.1 ([S] SLIME config + 3 repos; [P] NMT paper).
SUPER_DIMS = Dims(
    hidden_size=4096,
    num_attention_heads=32,
    num_key_value_heads=2,
    head_dim=128,
    mamba_num_heads=128,
    mamba_head_dim=64,
    ssm_state_size=128,
    mamba_n_groups=8,
    conv_kernel=CONV_KERNEL,
    n_routed_experts=512,
    num_experts_per_tok=22,
    n_shared_experts=1,
    vocab_size=VOCAB,
    moe_intermediate_size=2688,
    moe_shared_expert_intermediate_size=5376,
    moe_latent_size=1024,
)
SUPER_PATTERN = (
    "MEMEMEM*EMEMEMEM*EMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEM*EMEMEMEME"
)
SUPER_CONTEXT = 262144  # max_position_embeddings [S]
SUPER_TRAINED_CONTEXT = 1048576  # NMT Spark guide serves 1M with VLLM_ALLOW_LONG_MAX_MODEL_LEN [P]

# Nemotron 3.5 Super VL's vision tower: C-RADIOv4-H ViT-H/16 + pixel-shuffle MLP projector;
# model-facts.md §1.2 ([B] HF repackage card, ollama GGUF metadata; [S] SLIME preprocessor).
RADIO_H = VisionTower(
    name="C-RADIOv4-H (ViT-H/16)",
    blocks=32,
    width=1280,
    ffn=5120,
    patch_size=16,
    pixel_shuffle=2,
    projector_hidden=20480,
    min_tokens_per_image=256,
    max_tokens_per_image=3328,
    max_patches_per_image=13312,
    tokens_per_video_tubelet=256,
)

# Nemotron 3 Nano 30B-A3B and 3.5 Lightning; model-facts.md §1.3 ([P] Megatron-Bridge provider).
NANO3_DIMS = Dims(
    hidden_size=2688,
    num_attention_heads=32,
    num_key_value_heads=2,
    head_dim=128,
    mamba_num_heads=64,
    mamba_head_dim=64,
    ssm_state_size=128,
    mamba_n_groups=8,
    conv_kernel=CONV_KERNEL,
    n_routed_experts=128,
    num_experts_per_tok=6,
    n_shared_experts=1,
    vocab_size=VOCAB,
    moe_intermediate_size=1856,
    moe_shared_expert_intermediate_size=3712,
)
NANO3_PATTERN = "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME"


def _dense_dims(
    *, hidden: int, heads: int, mamba_heads: int, mamba_head_dim: int, state: int, ffn: int
) -> Dims:
    # Nemotron-H and Nano v2: 8 KV heads, head_dim 128, 8 Mamba groups (model-facts.md §1.3 [P]).
    return Dims(
        hidden_size=hidden,
        num_attention_heads=heads,
        num_key_value_heads=8,
        head_dim=128,
        mamba_num_heads=mamba_heads,
        mamba_head_dim=mamba_head_dim,
        ssm_state_size=state,
        mamba_n_groups=8,
        conv_kernel=CONV_KERNEL,
        n_routed_experts=0,
        num_experts_per_tok=0,
        n_shared_experts=0,
        vocab_size=VOCAB,
        intermediate_size=ffn,
    )


# Megatron-Bridge NemotronH providers [P] (hybrid_override_pattern, dims).
H8B_DIMS = _dense_dims(
    hidden=4096, heads=32, mamba_heads=128, mamba_head_dim=64, state=128, ffn=21504
)
H8B_PATTERN = "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-"
H47B_DIMS = _dense_dims(
    hidden=8192, heads=64, mamba_heads=256, mamba_head_dim=64, state=256, ffn=30720
)
H47B_PATTERN = (
    "M-M-M-M-M-M-M-M-M*-M-M-M-M-M-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-M-M---MM---M-M*-"
    "M-M-M-M-M-"
)
H56B_DIMS = _dense_dims(
    hidden=8192, heads=64, mamba_heads=256, mamba_head_dim=64, state=256, ffn=32768
)
H56B_PATTERN = (
    "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-"
    "M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-"
)
NANO9B_DIMS = _dense_dims(
    hidden=4480, heads=40, mamba_heads=128, mamba_head_dim=80, state=128, ffn=15680
)
NANO9B_PATTERN = "M-M-M-MM-M-M-M*-M-M-M*-M-M-M-M*-M-M-M-M*-M-MM-M-M-M-M-M-"

TEXT_ARCH = "NemotronHForCausalLM"  # vLLM model_executor/models/registry.py [P]
VL_ARCH = "NemotronH_Omni_Reasoning_V3"  # → nano_nemotron_vl.NemotronH_Nano_VL_V2 [P]
# Nemotron 3 / 3.5 reasoning models: vLLM's built-in nemotron_v3 reasoning parser and NVIDIA's
# qwen3_coder tool-call parser (model-facts.md §4 [P]). Base checkpoints do neither.
REASONING_V3 = "nemotron_v3"
TOOLS_QWEN3_CODER = "qwen3_coder"
# vLLM registers NemotronHForCausalLM and ships its config class, so text checkpoints need no
# remote code; the VL checkpoints' config and image processor are the checkpoint's own code.
TEXT_REMOTE_CODE_SOURCE = "vLLM registry.py + transformers_utils/configs (NemotronHConfig)"
VL_REMOTE_CODE_SOURCE = "VL config/processor ship as checkpoint code (auto_map)"


def _entry(
    hf_id: str,
    family: str,
    variant: str,
    precision: Precision,
    *,
    dims: Dims,
    pattern: str,
    context: int,
    trained_context: int | None = None,
    mtp_layers: int = 0,
    vision: VisionTower | None = None,
    reasoning: bool = False,
    sources: tuple[str, ...] = (),
    notes: tuple[str, ...] = (),
    unverified: tuple[str, ...] = (),
    mtp_experts_quantized: bool = False,
) -> ModelEntry:
    mtp_pattern = "*E" if mtp_layers else ""
    return ModelEntry(
        hf_id=hf_id,
        family=family,
        variant=variant,
        precision=precision,
        architecture=VL_ARCH if vision else TEXT_ARCH,
        dims=dims,
        layer_pattern=pattern,
        max_position_embeddings=context,
        trained_context=trained_context or context,
        mtp_layers=mtp_layers,
        mtp_pattern=mtp_pattern,
        vision=vision is not None,
        vision_tower=vision,
        trust_remote_code=vision is not None,
        default_reasoning_parser=REASONING_V3 if reasoning else None,
        default_tool_call_parser=TOOLS_QWEN3_CODER if reasoning else None,
        parts=parts_from_config(dims, pattern, mtp_layers, mtp_pattern, vision),
        sources=(*sources, VL_REMOTE_CODE_SOURCE if vision else TEXT_REMOTE_CODE_SOURCE),
        notes=notes,
        unverified=unverified,
        mtp_experts_quantized=mtp_experts_quantized,
    )


_SUPER_SRC = ("model-facts.md §1.1 (SLIME config [S], NMT architecture.md [P])",)
_VL_SRC = (*_SUPER_SRC, "model-facts.md §1.2 (NeMo AutoModel docs [B], SLIME [S])")
_NANO_SRC = ("model-facts.md §1.3 (Megatron-Bridge Nemotron3NanoProvider [P])",)
_LIGHTNING_SRC = (
    "model-facts.md §1.3 (released config test fixture [S]; ids: vllm-project/recipes [S])",
)
_H_SRC = ("model-facts.md §1.3 (Megatron-Bridge NemotronH providers [P])",)
_UNVERIFIED_ID = (
    "Hugging Face id follows NVIDIA's naming; no public source names it (model-facts.md §1.2)"
)
# The deployment guide this product grew from serves this id; public sources name only -BF16.
_VL_BASE_UNVERIFIED = (
    "Hugging Face id from the seed deployment guide; public sources name only the -BF16 (post-"
    "trained) VL checkpoint, so the Base variant is assumed to share its architecture",
)
_MTP_NVFP4_UNVERIFIED = (
    "MTP routed experts counted NVFP4: inferred from the released checkpoint sizes "
    "(model-facts.md §3.1), not read from hf_quant_config.json"
)
_VL_CONTEXT_UNVERIFIED = (
    "VL max_position_embeddings assumed equal to Super's 262144 (llm_config field not quoted)"
)


def _super(precision: Precision, variant: str = "Instruct") -> ModelEntry:
    base = "-Base" if variant == "Base" else ""
    return _entry(
        f"nvidia/NVIDIA-Nemotron-3-Super-120B-A12B{base}-{precision}",
        "Nemotron 3 Super 120B-A12B",
        variant,
        precision,
        dims=SUPER_DIMS,
        pattern=SUPER_PATTERN,
        context=SUPER_CONTEXT,
        trained_context=SUPER_TRAINED_CONTEXT,
        mtp_layers=1,  # num_nextn_predict_layers 1, mtp_hybrid_override_pattern "*E" [S]
        reasoning=variant == "Instruct",
        sources=_SUPER_SRC,
        mtp_experts_quantized=precision == "NVFP4",
        unverified=(_MTP_NVFP4_UNVERIFIED,) if precision == "NVFP4" else (),
    )


def _super_vl(precision: Precision, variant: str = "Instruct") -> ModelEntry:
    base = "-Base" if variant == "Base" else ""
    unverified: tuple[str, ...] = (_VL_CONTEXT_UNVERIFIED,)
    if precision != "BF16":
        unverified += (_UNVERIFIED_ID,)
    if variant == "Base":
        unverified += _VL_BASE_UNVERIFIED
    return _entry(
        f"nvidia/NVIDIA-Nemotron-3.5-Super-VL-120B-A12B{base}-{precision}",
        "Nemotron 3.5 Super VL 120B-A12B",
        variant,
        precision,
        dims=SUPER_DIMS,
        pattern=SUPER_PATTERN,
        context=SUPER_CONTEXT,  # llm_config identical to §1.1 [S]; the VL value is unverified
        trained_context=SUPER_TRAINED_CONTEXT,
        mtp_layers=1,
        vision=RADIO_H,
        reasoning=variant == "Instruct",
        sources=_VL_SRC,
        unverified=unverified,
        mtp_experts_quantized=precision == "NVFP4",
    )


def _ultra(precision: Precision, variant: str = "Instruct") -> ModelEntry:
    base = "-Base" if variant == "Base" else ""
    return _entry(
        f"nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B{base}-{precision}",
        "Nemotron 3 Ultra 550B-A55B",
        variant,
        precision,
        dims=ULTRA_DIMS,
        pattern=ULTRA_PATTERN,
        context=ULTRA_CONTEXT,
        trained_context=ULTRA_TRAINED_CONTEXT,
        mtp_layers=ULTRA_MTP_LAYERS,
        reasoning=variant == "Instruct",
        sources=ULTRA_SOURCES,
        unverified=ULTRA_UNVERIFIED,
    )


def _nano3(precision: Precision, variant: str = "Instruct") -> ModelEntry:
    base = "-Base" if variant == "Base" else ""
    return _entry(
        f"nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B{base}-{precision}",
        "Nemotron 3 Nano 30B-A3B",
        variant,
        precision,
        dims=NANO3_DIMS,
        pattern=NANO3_PATTERN,
        context=262144,  # [P] Megatron-Bridge provider / [S] fixtures
        reasoning=variant == "Instruct",
        sources=_NANO_SRC,
    )


def _lightning(precision: Precision) -> ModelEntry:
    return _entry(
        f"nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-{precision}",
        "Nemotron 3.5 Lightning 30B-A3B",
        "Instruct",
        precision,
        dims=NANO3_DIMS,
        pattern=NANO3_PATTERN,
        context=1048576,  # max_position_embeddings of the released config [S]
        mtp_layers=1,  # mtp pattern "attention,moe" [S]
        reasoning=True,
        sources=_LIGHTNING_SRC,
        mtp_experts_quantized=precision == "NVFP4",
        unverified=(_MTP_NVFP4_UNVERIFIED,) if precision == "NVFP4" else (),
    )


def _nemotron_h(size: str, dims: Dims, pattern: str, variant: str, context: int) -> ModelEntry:
    suffix = "Base-8K" if variant == "Base" else "Reasoning-128K"
    return _entry(
        f"nvidia/Nemotron-H-{size}-{suffix}",
        f"Nemotron-H {size}",
        variant,
        "BF16",
        dims=dims,
        pattern=pattern,
        context=context,
        sources=_H_SRC,
        notes=(
            "no built-in vLLM reasoning parser is known for Nemotron-H; set "
            "spec.engine.reasoningParser or a plugin",
        )
        if variant != "Base"
        else (),
    )


def _nano9b(variant: str) -> ModelEntry:
    suffix = "-Base" if variant == "Base" else ""
    return _entry(
        f"nvidia/NVIDIA-Nemotron-Nano-9B-v2{suffix}",
        "Nemotron Nano 9B v2",
        variant,
        "BF16",
        dims=NANO9B_DIMS,
        pattern=NANO9B_PATTERN,
        context=131072,  # seq_length / max_position_embeddings [P] Megatron-Bridge, [S] configs
        sources=_H_SRC,
        notes=(
            "NVIDIA's model card parses reasoning and tool calls with plugin files; set "
            "spec.engine.reasoningParserPlugin",
        )
        if variant != "Base"
        else (),
    )


MODELS: tuple[ModelEntry, ...] = (
    _super_vl("BF16"),
    _super_vl("BF16", variant="Base"),
    _super_vl("FP8"),
    _super_vl("NVFP4"),
    _super("BF16"),
    _super("FP8"),
    _super("NVFP4"),
    _super("BF16", variant="Base"),
    _nano3("BF16"),
    _nano3("FP8"),
    _nano3("BF16", variant="Base"),
    _lightning("NVFP4"),
    _lightning("BF16"),
    _ultra("BF16"),
    _ultra("NVFP4"),
    _ultra("BF16", variant="Base"),
    _nemotron_h("8B", H8B_DIMS, H8B_PATTERN, "Base", 8192),
    _nemotron_h("8B", H8B_DIMS, H8B_PATTERN, "Reasoning", 131072),
    _nemotron_h("47B", H47B_DIMS, H47B_PATTERN, "Base", 8192),
    _nemotron_h("47B", H47B_DIMS, H47B_PATTERN, "Reasoning", 131072),
    _nemotron_h("56B", H56B_DIMS, H56B_PATTERN, "Base", 8192),
    _nano9b("Instruct"),
    _nano9b("Base"),
)

_BY_ID = {m.hf_id.lower(): m for m in MODELS}


def lookup_model(hf_id: str) -> ModelEntry | None:
    """A catalog entry by Hugging Face id (case-insensitive, as the Hub resolves ids)."""
    return _BY_ID.get(hf_id.strip().lower())


def sibling(model: ModelEntry, precision: Precision) -> ModelEntry | None:
    """The same family and variant in another precision, when the catalog has it."""
    for candidate in MODELS:
        if (
            candidate.family == model.family
            and candidate.variant == model.variant
            and candidate.precision == precision
        ):
            return candidate
    return None
