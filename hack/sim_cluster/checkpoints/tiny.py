"""Write one tiny dense Nemotron-H checkpoint (see the package's docstring)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from sim_cluster.checkpoints import tokenizer as tok

Kind = Literal["scripted", "constant", "random"]
KINDS: tuple[Kind, ...] = ("scripted", "constant", "random")
_BIAS_DIM = -1  # every embedding has a component here: what the constant winner reads


@dataclass(frozen=True)
class Shape:
    """The model's dimensions (MoE is not served by vLLM's CPU build: dense only)."""

    layer_pattern: str = "M-M*M-"  # Mamba-2, MLP, attention (hybrid_override_pattern)
    hidden_size: int = 256
    vocab_size: int = 1024
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    head_dim: int = 64
    intermediate_size: int = 512
    mamba_num_heads: int = 8
    mamba_head_dim: int = 32
    ssm_state_size: int = 16
    mamba_n_groups: int = 1
    conv_kernel: int = 4
    max_position_embeddings: int = 8192


def hf_config(shape: Shape, eos: int, bos: int, pad: int, mtp: bool) -> dict[str, Any]:
    """config.json: transformers' nemotron_h fields (the pattern strings vLLM reads included)."""
    config: dict[str, Any] = {
        "architectures": ["NemotronHForCausalLM"],
        "model_type": "nemotron_h",
        "hybrid_override_pattern": shape.layer_pattern,
        "num_hidden_layers": len(shape.layer_pattern),
        "vocab_size": shape.vocab_size,
        "hidden_size": shape.hidden_size,
        "num_attention_heads": shape.num_attention_heads,
        "num_key_value_heads": shape.num_key_value_heads,
        "head_dim": shape.head_dim,
        "intermediate_size": shape.intermediate_size,
        "mlp_hidden_act": "relu2",
        "mamba_num_heads": shape.mamba_num_heads,
        "mamba_head_dim": shape.mamba_head_dim,
        "ssm_state_size": shape.ssm_state_size,
        "n_groups": shape.mamba_n_groups,
        "conv_kernel": shape.conv_kernel,
        "expand": shape.mamba_num_heads * shape.mamba_head_dim // shape.hidden_size,
        "chunk_size": 128,
        "use_conv_bias": True,
        "mamba_proj_bias": False,
        "mamba_hidden_act": "silu",
        "time_step_limit": [0.0, 1e9],
        "attention_bias": False,
        "mlp_bias": False,
        "use_bias": False,
        "layer_norm_epsilon": 1e-5,
        "residual_in_fp32": False,
        "max_position_embeddings": shape.max_position_embeddings,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "bos_token_id": bos,
        "eos_token_id": eos,
        "pad_token_id": pad,
        "n_routed_experts": 0,
        "num_nextn_predict_layers": 1 if mtp else 0,
    }
    if mtp:
        config["mtp_hybrid_override_pattern"] = "*"  # one attention layer (MoE: not on CPU)
    return config


def architecture_spec(shape: Shape, mtp: bool, parameters: int) -> dict[str, Any]:
    """The NemotronDeployment's spec.model.architecture for this checkpoint."""
    return {
        "layerPattern": shape.layer_pattern,
        "hiddenSize": shape.hidden_size,
        "numAttentionHeads": shape.num_attention_heads,
        "numKeyValueHeads": shape.num_key_value_heads,
        "headDim": shape.head_dim,
        "mambaNumHeads": shape.mamba_num_heads,
        "mambaHeadDim": shape.mamba_head_dim,
        "ssmStateSize": shape.ssm_state_size,
        "mambaNGroups": shape.mamba_n_groups,
        "convKernel": shape.conv_kernel,
        "intermediateSize": shape.intermediate_size,
        "vocabSize": shape.vocab_size,
        "maxPositionEmbeddings": shape.max_position_embeddings,
        "mtpLayers": 1 if mtp else 0,
        "parameters": {"routedExperts": 0, "other": parameters},
        "precision": "BF16",
    }


def write(
    directory: Path, kind: Kind = "scripted", *, mtp: bool = False, seed: int = 0,
    shape: Shape = Shape(),
) -> dict[str, Any]:  # fmt: skip
    """Write the checkpoint into ``directory``; its spec.model.architecture."""
    import torch  # noqa: PLC0415 (the engine's environment only)
    from safetensors.torch import save_file  # noqa: PLC0415

    if kind not in KINDS:
        raise ValueError(f"kind: {kind!r} is not one of {', '.join(KINDS)}")
    directory.mkdir(parents=True, exist_ok=True)
    ids = tok.train(directory, shape.vocab_size, seed)
    generator = torch.Generator().manual_seed(seed)
    tensors = _weights(shape, kind, ids, generator, mtp)
    tensors = {name: t.to(torch.bfloat16).contiguous() for name, t in sorted(tensors.items())}
    save_file(tensors, str(directory / "model.safetensors"), metadata={"format": "pt"})
    eos, bos, pad = ids[tok.IM_END], ids["<s>"], ids["</s>"]
    config = hf_config(shape, eos, bos, pad, mtp)
    (directory / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    generation = {"bos_token_id": bos, "eos_token_id": [eos], "pad_token_id": pad}
    (directory / "generation_config.json").write_text(json.dumps(generation, indent=2) + "\n")
    main = sum(t.numel() for name, t in tensors.items() if not name.startswith("mtp."))
    return architecture_spec(shape, mtp, main)


def _script(ids: dict[str, int]) -> list[int]:
    """The reply chain: each token's successor is the next one (the prompt ends in <think>, or
    in </think> when thinking is off, so both enter it)."""
    words = [tok.THINK, tok.THOUGHT, tok.END_THINK, tok.ANSWER, tok.TOOL_CALL, tok.TOOL_BODY,
             tok.END_TOOL_CALL, tok.IM_END]  # fmt: skip
    return [ids[w] for w in words]


def _weights(
    shape: Shape, kind: Kind, ids: dict[str, int], generator: Any, mtp: bool
) -> dict[str, Any]:
    """Random weights by transformers' names; for the scripted and constant kinds every mixer's
    output projection is zero, so the last hidden state is the token's embedding and the
    LM head alone decides the next token (a lookup table the MTP layer reproduces exactly)."""
    import torch  # noqa: PLC0415 (the engine's environment only)

    h, v = shape.hidden_size, shape.vocab_size

    def rand(*size: int, scale: float = 0.02) -> Any:
        return torch.randn(*size, generator=generator) * scale

    inner = shape.mamba_num_heads * shape.mamba_head_dim
    conv = inner + 2 * shape.mamba_n_groups * shape.ssm_state_size
    in_proj = inner + conv + shape.mamba_num_heads
    q, kv = shape.num_attention_heads * shape.head_dim, shape.num_key_value_heads * shape.head_dim
    t: dict[str, Any] = {}
    for i, char in enumerate(shape.layer_pattern):
        p = f"model.layers.{i}."
        t[p + "norm.weight"] = torch.ones(h)
        if char == "M":
            t[p + "mixer.dt_bias"] = torch.zeros(shape.mamba_num_heads)
            t[p + "mixer.A_log"] = torch.log(torch.arange(1, shape.mamba_num_heads + 1).float())
            t[p + "mixer.D"] = torch.ones(shape.mamba_num_heads)
            t[p + "mixer.conv1d.weight"] = rand(conv, 1, shape.conv_kernel, scale=0.2)
            t[p + "mixer.conv1d.bias"] = torch.zeros(conv)
            t[p + "mixer.in_proj.weight"] = rand(in_proj, h)
            t[p + "mixer.norm.weight"] = torch.ones(inner)
            t[p + "mixer.out_proj.weight"] = rand(h, inner)
        elif char == "*":
            t.update(_attention(p, h, q, kv, rand))
        elif char == "-":
            t[p + "mixer.up_proj.weight"] = rand(shape.intermediate_size, h)
            t[p + "mixer.down_proj.weight"] = rand(h, shape.intermediate_size)
        else:
            raise ValueError(f"layer pattern: {char!r} is not served on CPU (M, *, - only)")
    t["model.norm_f.weight"] = torch.ones(h)
    t["model.embeddings.weight"] = rand(v, h, scale=1.0)
    t["lm_head.weight"] = rand(v, h)
    if mtp:
        p = "mtp.layers.0."
        t[p + "enorm.weight"] = torch.ones(h)
        t[p + "hnorm.weight"] = torch.ones(h)
        t[p + "eh_proj.weight"] = torch.cat([torch.eye(h), torch.zeros(h, h)], dim=1)
        t[p + "norm.weight"] = torch.ones(h)
        t.update(_attention(p, h, q, kv, rand))
        t[p + "final_layernorm.weight"] = torch.ones(h)
    return t if kind == "random" else _lookup_table(t, shape, kind, ids, generator)


def _lookup_table(
    t: dict[str, Any], shape: Shape, kind: Kind, ids: dict[str, int], generator: Any
) -> dict[str, Any]:
    import torch  # noqa: PLC0415 (the engine's environment only)

    h, v = shape.hidden_size, shape.vocab_size
    for name, value in list(t.items()):  # the mixers add nothing to the residual stream
        if name.endswith(("out_proj.weight", "o_proj.weight", "down_proj.weight")):
            t[name] = torch.zeros_like(value)
    embeddings = torch.zeros(v, h)
    embeddings[:, _BIAS_DIM] = 1.0
    # distinct but inert tokens
    embeddings[:, : h // 2] = torch.randn(v, h // 2, generator=generator) * 0.05
    head = torch.zeros(v, h)
    if kind == "constant":
        head[ids[tok.THOUGHT], _BIAS_DIM] = 1.0  # one token always wins
    else:
        chain = _script(ids)
        for position, token in enumerate(chain[:-1]):
            dim = h // 2 + position  # a private direction per script token
            embeddings[token] = 0.0
            embeddings[token, dim] = 1.0
            embeddings[token, _BIAS_DIM] = 0.1
            head[chain[position + 1], dim] = 1.0
    t["model.embeddings.weight"] = embeddings
    t["lm_head.weight"] = head
    return t


def _attention(prefix: str, h: int, q: int, kv: int, rand: Any) -> dict[str, Any]:
    return {
        prefix + "mixer.q_proj.weight": rand(q, h),
        prefix + "mixer.k_proj.weight": rand(kv, h),
        prefix + "mixer.v_proj.weight": rand(kv, h),
        prefix + "mixer.o_proj.weight": rand(h, q),
    }
