"""Tiny dense Nemotron-H checkpoints the real CPU vLLM can serve (docs/simulated-cluster.md,
"The real engine"): a ``config.json`` of transformers' ``nemotron_h`` model type, safetensors
weights and a byte-level BPE tokenizer trained here with a ChatML template and the ``<think>``
and ``<tool_call>`` tokens, all deterministic from a seed; a few MB, written in about a second.

Kinds (``tiny.Kind``): ``scripted`` is built so that, at temperature 0, every reply is one
fixed script (a short thought, an answer, then a ``get_weather`` tool call in the qwen3_coder
format): the operator's behavioural check passes on it with vLLM's own parsers; ``constant``
answers one token forever (a speculative draft is always accepted); ``random`` is plain random
weights. With ``mtp=True`` the
checkpoint has one multi-token-prediction layer (``mtp.*`` tensors) that predicts exactly what
the model will say next.

Writing needs torch, safetensors, tokenizers and transformers: the engine's environment
(``hack/build-vllm-cpu.sh``) has them; the operator's does not, so the imports are inside.
"""
