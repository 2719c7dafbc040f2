"""Nemotron 3 Ultra 550B-A55B: dimensions, each with its source (docs/model-facts.md §1.4).

NVIDIA's tech report (Table 1, quoted in NVIDIA-NeMo/Nemotron
``skills/nemotron-ultra/paper/architecture.md`` [P]) gives every width; it draws the layer pattern
only as a figure. The pattern string is the ``--hybrid-override-pattern`` of several independent
Megatron launch scripts for this model [S], and its attention indices are those a third-party test
asserts for the released config.json [S]; its counts (48 Mamba, 48 MoE, 12 attention) match a
deployment note that quotes the released config [S]. The parameter count from these dimensions,
549.3 B without the MTP head, reproduces NVIDIA's 550 B [P], and the BF16 and NVFP4 byte counts
reproduce the released checkpoints (1121 GB and 352 GB [S]; "~1.1 TB", "~330 GiB" [P]) — the
tests in tests/unit/catalog/test_ultra.py hold them there.
"""

from __future__ import annotations

from nemotron_operator.catalog.params import Dims

ULTRA_DIMS = Dims(
    hidden_size=8192,  # Table 1 "Model Dimension" [P]
    num_attention_heads=64,  # Table 1 "Q-Heads" [P]
    num_key_value_heads=2,  # Table 1 "KV-Heads" [P]
    head_dim=128,  # Table 1 [P]
    mamba_num_heads=256,  # Table 1 "Mamba Heads" [P]
    mamba_head_dim=64,  # Table 1 [P]
    ssm_state_size=128,  # Table 1 "Mamba State Dimension" [P]
    mamba_n_groups=8,  # Table 1 "Mamba Groups" [P]
    conv_kernel=4,  # released config quoted by a deployment note [S]; every Nemotron-H config
    n_routed_experts=512,  # Table 1 "Total Experts per Layer" [P]
    num_experts_per_tok=22,  # Table 1 "Top-k" [P]
    n_shared_experts=1,  # released config quoted by two repositories [S]
    vocab_size=131072,  # released config [S]; Megatron scripts --vocab-size 131072 [S]
    moe_intermediate_size=5120,  # Table 1 "Expert Hidden Dimension" [P]
    moe_shared_expert_intermediate_size=10240,  # Table 1 [P]
    moe_latent_size=2048,  # Table 1 "MoE Latent Size" [P]
)
ULTRA_ATTENTION_LAYERS = (7, 14, 23, 32, 39, 48, 57, 64, 73, 82, 89, 98)  # [S]
ULTRA_PATTERN = (
    "MEMEMEM*EMEMEM*EMEMEMEM*EMEMEMEM*EMEMEM*EMEMEMEM*EMEMEMEM*EMEMEM*EMEMEMEM*EMEMEMEM*"
    "EMEMEM*EMEMEMEM*EMEMEMEME"
)  # 108 layers, Table 1 [P]; the string [S]
ULTRA_CONTEXT = 262144  # max_position_embeddings [S]; vLLM recipe context_length 262144 [S]
ULTRA_TRAINED_CONTEXT = 1048576  # NVIDIA model card "up to 1M (1,048,576) tokens" [P]
# num_nextn_predict_layers 1, MTP block "attention, moe" [S]; the report's "two shared-weight MTP
# heads" are this one block run twice, as for Super [P].
ULTRA_MTP_LAYERS = 1

ULTRA_SOURCES = (
    "model-facts.md §1.4 (NVIDIA Ultra tech report Table 1 [P]; released config quoted by "
    "several repositories [S])",
)
ULTRA_UNVERIFIED = (
    "Ultra layer pattern string and conv_kernel/vocab are from repositories quoting the released "
    "config.json [S], not read from the Hub",
)
