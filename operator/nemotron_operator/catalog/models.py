"""``ModelEntry``: one checkpoint's architecture, parameter table, precision and serving defaults.

Catalog entries (catalog.model_data) count their parameters from config.json dimensions; a spec's
explicit ``architecture`` (a model outside the catalog) becomes an entry through
``model_from_architecture`` and is planned by exactly the same code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from nemotron_operator.api.model import Precision
from nemotron_operator.catalog import params
from nemotron_operator.catalog.params import Dims, Part, VisionTower
from nemotron_operator.catalog.precision import BF16_HALF_BITS, half_bits

if TYPE_CHECKING:
    from nemotron_operator.api.model import ArchitectureSpec

# Parts that are not layers of the hybrid pattern.
EMBEDDING = "embedding"
LM_HEAD = "lm_head"
FINAL_NORM = "final_norm"
MTP = "mtp"
VISION = "vision"
# Parts every quantization recipe keeps in BF16 (catalog.precision).
BF16_PARTS = frozenset({MTP, VISION})


@dataclass(frozen=True)
class ParameterSplit:
    """Parameters split as the memory model shards them (``spec.model.architecture.parameters``)."""

    routed_experts: int
    other: int
    mtp: int
    vision: int

    @property
    def total(self) -> int:
        return self.routed_experts + self.other + self.mtp + self.vision


@dataclass(frozen=True)
class ModelEntry:
    """One checkpoint, keyed by its Hugging Face id."""

    hf_id: str
    family: str  # e.g. "Nemotron 3 Super 120B-A12B"
    variant: str  # "Instruct" (post-trained) or "Base"
    precision: Precision
    architecture: str  # vLLM architecture name (config.json "architectures")
    dims: Dims
    layer_pattern: str
    max_position_embeddings: int
    trained_context: int
    mtp_layers: int
    mtp_pattern: str
    vision: bool  # a vision-language checkpoint: multimodal limits apply
    vision_tower: VisionTower | None  # its shape, when known
    trust_remote_code: bool
    default_reasoning_parser: str | None
    default_tool_call_parser: str | None
    parts: tuple[tuple[str, Part], ...] = field(repr=False)
    sources: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    in_catalog: bool = True
    # Catalog facts no primary or several-repository source confirms; ``plan`` prints them.
    unverified: tuple[str, ...] = ()
    # The MTP head's routed experts follow the checkpoint's recipe instead of staying BF16: what
    # the released Super and Lightning NVFP4 sizes imply (model-facts.md §3.1 [D]); Ultra's
    # Table 12 keeps the whole MTP head BF16 [P].
    mtp_experts_quantized: bool = False

    # The architecture fields, readable directly on the entry.
    @property
    def hidden_size(self) -> int:
        return self.dims.hidden_size

    @property
    def num_attention_heads(self) -> int:
        return self.dims.num_attention_heads

    @property
    def num_key_value_heads(self) -> int:
        return self.dims.num_key_value_heads

    @property
    def head_dim(self) -> int:
        return self.dims.head_dim

    @property
    def mamba_num_heads(self) -> int:
        return self.dims.mamba_num_heads

    @property
    def mamba_head_dim(self) -> int:
        return self.dims.mamba_head_dim

    @property
    def ssm_state_size(self) -> int:
        return self.dims.ssm_state_size

    @property
    def mamba_n_groups(self) -> int:
        return self.dims.mamba_n_groups

    @property
    def conv_kernel(self) -> int:
        return self.dims.conv_kernel

    @property
    def n_routed_experts(self) -> int:
        return self.dims.n_routed_experts

    @property
    def num_experts_per_tok(self) -> int:
        return self.dims.num_experts_per_tok

    @property
    def n_shared_experts(self) -> int:
        return self.dims.n_shared_experts

    @property
    def vocab_size(self) -> int:
        return self.dims.vocab_size

    @property
    def is_moe(self) -> bool:
        return "E" in self.layer_pattern

    @property
    def num_hidden_layers(self) -> int:
        return len(self.layer_pattern)

    def layer_count(self, kind: str) -> int:
        return self.layer_pattern.count(kind)

    @property
    def mtp_attention_layers(self) -> int:
        return self.mtp_layers * self.mtp_pattern.count("*")

    def part(self, name: str) -> Part:
        for part_name, part in self.parts:
            if part_name == name:
                return part
        return ()

    def parameter_split(self) -> ParameterSplit:
        routed = other = 0
        for kind in params.LAYER_KINDS:
            layer = self.part(kind)
            n = self.layer_count(kind)
            routed += n * params.count(layer, params.ROUTED_EXPERTS)
            other += n * (params.total(layer) - params.count(layer, params.ROUTED_EXPERTS))
        for name in (EMBEDDING, LM_HEAD, FINAL_NORM):
            other += params.total(self.part(name))
        return ParameterSplit(
            routed_experts=routed,
            other=other,
            mtp=params.total(self.part(MTP)),
            vision=params.total(self.part(VISION)),
        )

    def half_bits(self, part_name: str, category: str) -> int:
        """Half-bits per parameter of one category of one part in this checkpoint."""
        if part_name in BF16_PARTS:
            quantized = (
                part_name == MTP
                and self.mtp_experts_quantized
                and category == params.ROUTED_EXPERTS
            )
            if not quantized:
                return BF16_HALF_BITS
        return half_bits(self.precision, category)

    def part_bytes(self, name: str) -> int:
        total_half_bits = sum(n * self.half_bits(name, c) for c, n in self.part(name))
        return -(-total_half_bits // 16)

    def weights_bytes(self) -> int:
        """Total checkpoint bytes (main model, MTP head, vision tower): sizes the weight cache."""
        total = sum(self.layer_count(k) * self.part_bytes(k) for k in params.LAYER_KINDS)
        for name in (EMBEDDING, LM_HEAD, FINAL_NORM, MTP, VISION):
            total += self.part_bytes(name)
        return total


def parts_from_config(
    dims: Dims, layer_pattern: str, mtp_layers: int, mtp_pattern: str, vision: VisionTower | None
) -> tuple[tuple[str, Part], ...]:
    """The parameter table of a catalog model, counted from its config dimensions."""
    parts: list[tuple[str, Part]] = [
        (kind, params.layer(dims, kind)) for kind in params.LAYER_KINDS if kind in layer_pattern
    ]
    embedding = dims.vocab_size * dims.hidden_size  # untied: the LM head has its own matrix
    parts.append((EMBEDDING, ((params.EMBEDDINGS, embedding),)))
    parts.append((LM_HEAD, ((params.EMBEDDINGS, embedding),)))
    parts.append((FINAL_NORM, ((params.NORMS, dims.hidden_size),)))
    parts.append((MTP, params.mtp_head(dims, mtp_pattern, mtp_layers)))
    if vision is not None:
        parts.append((VISION, ((params.VISION, vision.parameters(dims.hidden_size)),)))
    return tuple(parts)


def model_from_architecture(hf_id: str, arch: ArchitectureSpec) -> ModelEntry:
    """A model outside the catalog, from ``spec.model.architecture``.

    Mamba, attention and embedding parameters are counted from the dimensions; the given routed
    expert count is spread over the MoE layers; what ``parameters.other`` leaves unexplained
    (MLPs, shared experts, latent projections) is spread over the MoE and MLP layers, TP-sharded.
    Raises ValueError (naming the ``spec.model.architecture`` field) when the counts contradict
    the dimensions.
    """
    dims = Dims(
        hidden_size=arch.hidden_size,
        num_attention_heads=arch.num_attention_heads,
        num_key_value_heads=arch.num_key_value_heads,
        head_dim=arch.head_dim,
        mamba_num_heads=arch.mamba_num_heads,
        mamba_head_dim=arch.mamba_head_dim,
        ssm_state_size=arch.ssm_state_size,
        mamba_n_groups=arch.mamba_n_groups,
        conv_kernel=arch.conv_kernel,
        n_routed_experts=arch.n_routed_experts,
        num_experts_per_tok=arch.num_experts_per_tok,
        n_shared_experts=arch.n_shared_experts,
        vocab_size=arch.vocab_size,
        moe_intermediate_size=arch.moe_intermediate_size,
        moe_shared_expert_intermediate_size=arch.moe_shared_expert_intermediate_size,
        moe_latent_size=arch.moe_latent_size,
        intermediate_size=arch.intermediate_size,
    )
    pattern = arch.layer_pattern
    if "M" in pattern and (dims.mamba_num_heads == 0 or dims.mamba_head_dim == 0):
        raise ValueError(
            "spec.model.architecture: the layer pattern has Mamba layers (M) but mambaNumHeads "
            "or mambaHeadDim is 0; set them from config.json"
        )
    if "E" in pattern and dims.n_routed_experts == 0:
        raise ValueError(
            "spec.model.architecture.nRoutedExperts: the layer pattern has MoE layers (E) but "
            "nRoutedExperts is 0; set it from config.json"
        )
    counts = arch.parameters
    mamba = params.mamba_layer(dims) if "M" in pattern else ()
    attention = params.attention_layer(dims) if "*" in pattern else ()
    embedding = dims.vocab_size * dims.hidden_size
    explained = pattern.count("M") * params.total(mamba)
    explained += pattern.count("*") * params.total(attention)
    explained += 2 * embedding + dims.hidden_size
    remainder = counts.other - explained
    if remainder < 0:
        raise ValueError(
            f"spec.model.architecture.parameters.other: {counts.other} is smaller than the "
            f"{explained} parameters the Mamba, attention and embedding dimensions imply; check "
            "the counts (other excludes routed experts, the MTP head and the vision tower)"
        )
    present = [k for k in params.LAYER_KINDS if k in pattern]
    ffn_layers = [k for k in "E-" if k in pattern] or present
    ffn_layer_count = sum(pattern.count(k) for k in ffn_layers)
    routed_per_layer = counts.routed_experts // max(1, pattern.count("E"))
    parts: list[tuple[str, Part]] = []
    for kind in params.LAYER_KINDS:
        if kind not in pattern:
            continue
        items: list[tuple[str, int]] = {"M": list(mamba), "*": list(attention)}.get(kind, [])
        if kind == "E":
            items.append((params.ROUTED_EXPERTS, routed_per_layer))
        if kind in ffn_layers:
            items.append((params.FFN_OTHER, remainder // ffn_layer_count))
        parts.append((kind, params.merge(items)))
    parts.append((EMBEDDING, ((params.EMBEDDINGS, embedding),)))
    parts.append((LM_HEAD, ((params.EMBEDDINGS, embedding),)))
    parts.append((FINAL_NORM, ((params.NORMS, dims.hidden_size),)))
    if counts.mtp:
        parts.append((MTP, ((params.MTP_PROJ, counts.mtp),)))
    if counts.vision:
        parts.append((VISION, ((params.VISION, counts.vision),)))
    trained = max(arch.trained_context or 0, arch.max_position_embeddings)
    return ModelEntry(
        hf_id=hf_id,
        family="explicit architecture",
        variant="Custom",
        precision=arch.precision,
        architecture="NemotronHForCausalLM",
        dims=dims,
        layer_pattern=pattern,
        max_position_embeddings=arch.max_position_embeddings,
        trained_context=trained,
        mtp_layers=arch.mtp_layers,
        mtp_pattern=("*E" if "E" in pattern else "*-") if arch.mtp_layers else "",
        vision=arch.vision,
        vision_tower=None,
        trust_remote_code=arch.trust_remote_code,
        default_reasoning_parser=None,
        default_tool_call_parser=None,
        parts=tuple(parts),
        sources=("spec.model.architecture",),
        in_catalog=False,
    )
