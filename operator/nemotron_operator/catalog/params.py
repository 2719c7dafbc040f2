"""Parameter counts from config.json dimensions, split the way vLLM shards them.

A model is a table of *parts* (one layer of each kind of the hybrid pattern, the embedding, the LM
head, the MTP head, the vision tower), each a tuple of ``(category, parameters)``. The category
decides the precision (catalog.precision) and how a tensor-parallel rank holds it (sizing.weights).

Shapes follow vLLM's ``model_executor/models/nemotron_h.py`` and the Nemotron-H papers: Mamba-2
in_proj = hidden × (2·d_inner + 2·n_groups·d_state + n_heads), a non-gated ReLU² MLP (two
matrices), no attention biases, MoE experts running in the latent dimension when one is set
(model-facts.md §1.1: "experts run 1024→2688→1024; latent proj 4096↔1024").
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

# Categories. Sharding and precision are looked up by these names.
ROUTED_EXPERTS = "routed_experts"  # EP (or TP inside each expert) over the replica's ranks
SHARED_EXPERTS = "shared_experts"  # TP-sharded
MOE_LATENT = "moe_latent"  # latent down/up projections, replicated on every rank
ROUTER = "router"  # replicated; FP32 in the quantized checkpoints
MAMBA_PROJ = "mamba_proj"  # in_proj/out_proj GEMMs, TP-sharded
MAMBA_OTHER = "mamba_other"  # conv1d, A, D, dt bias, gated norm, TP-sharded
ATTENTION_QO = "attention_qo"  # q and o projections, TP-sharded by heads
ATTENTION_KV = "attention_kv"  # k and v projections: replicated when TP exceeds the KV heads
DENSE_MLP = "dense_mlp"  # the '-' layers' MLP, TP-sharded
FFN_OTHER = "ffn_other"  # what an explicit architecture's counts leave unexplained, TP-sharded
EMBEDDINGS = "embeddings"  # input embedding and LM head, vocab-parallel
MTP_PROJ = "mtp_proj"  # the MTP head's input projection, TP-sharded
NORMS = "norms"  # layer norms, replicated
VISION = "vision"  # vision tower and projector, replicated on the first pipeline stage

Category = str
Part = tuple[tuple[Category, int], ...]

LAYER_KINDS = "ME*-"  # Mamba-2, MoE, attention, dense MLP (hybrid_override_pattern)


@dataclass(frozen=True)
class Dims:
    """The config.json fields the parameter count and the cache geometry need."""

    hidden_size: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    mamba_num_heads: int
    mamba_head_dim: int
    ssm_state_size: int
    mamba_n_groups: int
    conv_kernel: int
    n_routed_experts: int
    num_experts_per_tok: int
    n_shared_experts: int
    vocab_size: int
    moe_intermediate_size: int | None = None
    moe_shared_expert_intermediate_size: int | None = None
    moe_latent_size: int | None = None
    intermediate_size: int | None = None  # dense MLP ('-' layers)

    @property
    def mamba_d_inner(self) -> int:
        return self.mamba_num_heads * self.mamba_head_dim

    @property
    def mamba_conv_dim(self) -> int:
        return self.mamba_d_inner + 2 * self.mamba_n_groups * self.ssm_state_size


@dataclass(frozen=True)
class VisionTower:
    """A ViT plus MLP projector, counted from its shape (model-facts.md §1.2)."""

    name: str
    blocks: int
    width: int
    ffn: int
    patch_size: int
    pixel_shuffle: int  # tokens merged per side (2: 2×2 patches → 1 LLM token)
    projector_hidden: int
    min_tokens_per_image: int
    max_tokens_per_image: int
    max_patches_per_image: int
    tokens_per_video_tubelet: int

    def parameters(self, llm_hidden: int) -> int:
        # Per block: qkv and proj with biases, two MLP matrices with biases, two LayerNorms.
        attention = 3 * self.width * self.width + 3 * self.width + self.width * self.width
        attention += self.width
        mlp = 2 * self.width * self.ffn + self.ffn + self.width
        norms = 4 * self.width
        tower = self.blocks * (attention + mlp + norms)
        tower += 3 * self.patch_size * self.patch_size * self.width  # patch embedding
        projector_in = self.width * self.pixel_shuffle * self.pixel_shuffle
        projector = projector_in  # RMSNorm
        projector += projector_in * self.projector_hidden + self.projector_hidden * llm_hidden
        return tower + projector


def mamba_layer(d: Dims) -> Part:
    in_proj = d.hidden_size * (2 * d.mamba_d_inner + 2 * d.mamba_n_groups * d.ssm_state_size)
    in_proj += d.hidden_size * d.mamba_num_heads
    out_proj = d.mamba_d_inner * d.hidden_size
    conv = d.mamba_conv_dim * d.conv_kernel + d.mamba_conv_dim
    scalars = 3 * d.mamba_num_heads + d.mamba_d_inner  # A_log, D, dt_bias, gated norm
    return ((MAMBA_PROJ, in_proj + out_proj), (MAMBA_OTHER, conv + scalars), (NORMS, d.hidden_size))


def attention_layer(d: Dims) -> Part:
    q_o = 2 * d.hidden_size * d.num_attention_heads * d.head_dim
    k_v = 2 * d.hidden_size * d.num_key_value_heads * d.head_dim
    return ((ATTENTION_QO, q_o), (ATTENTION_KV, k_v), (NORMS, d.hidden_size))


def moe_layer(d: Dims) -> Part:
    if d.moe_intermediate_size is None:
        raise ValueError("moe_intermediate_size is needed to count an MoE layer")
    expert_dim = d.moe_latent_size or d.hidden_size
    routed = d.n_routed_experts * 2 * expert_dim * d.moe_intermediate_size
    shared = d.n_shared_experts * 2 * d.hidden_size * (d.moe_shared_expert_intermediate_size or 0)
    router = d.hidden_size * d.n_routed_experts + d.n_routed_experts  # + e_score_correction_bias
    latent = 2 * d.hidden_size * d.moe_latent_size if d.moe_latent_size else 0
    return (
        (ROUTED_EXPERTS, routed),
        (SHARED_EXPERTS, shared),
        (ROUTER, router),
        (MOE_LATENT, latent),
        (NORMS, d.hidden_size),
    )


def mlp_layer(d: Dims) -> Part:
    if d.intermediate_size is None:
        raise ValueError("intermediate_size is needed to count a dense MLP layer")
    return ((DENSE_MLP, 2 * d.hidden_size * d.intermediate_size), (NORMS, d.hidden_size))


def layer(d: Dims, kind: str) -> Part:
    builders = {"M": mamba_layer, "*": attention_layer, "E": moe_layer, "-": mlp_layer}
    return builders[kind](d)


def mtp_head(d: Dims, pattern: str, depth: int) -> Part:
    """The MTP head: ``depth`` blocks of ``pattern`` layers plus the projection that joins the
    token embedding and the hidden state (2h → h) and its three norms. It shares the embedding and
    LM head with the main model (Super: 120.67 B + 2.94 B = 123.61 B, model-facts.md §3)."""
    if depth == 0:
        return ()
    block: list[tuple[Category, int]] = []
    for kind in pattern:
        block.extend(layer(d, kind))
    block.append((MTP_PROJ, 2 * d.hidden_size * d.hidden_size))
    block.append((NORMS, 3 * d.hidden_size))
    return merge(block * depth)


def merge(items: Iterable[tuple[Category, int]]) -> Part:
    """Sum counts by category, keeping first-seen order; zero entries are dropped."""
    totals: dict[Category, int] = {}
    for category, count in items:
        totals[category] = totals.get(category, 0) + count
    return tuple((c, n) for c, n in totals.items() if n)


def total(part: Part) -> int:
    return sum(n for _, n in part)


def count(part: Part, category: Category) -> int:
    return sum(n for c, n in part if c == category)
