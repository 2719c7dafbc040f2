"""The checkpoints' tokenizer: byte-level BPE trained on a generated corpus, ChatML's turn tokens
and the tokens vLLM's nemotron_v3 reasoning parser and qwen3_coder tool parser look for."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

IM_START, IM_END = "<|im_start|>", "<|im_end|>"
THINK, END_THINK = "<think>", "</think>"
TOOL_CALL, END_TOOL_CALL = "<tool_call>", "</tool_call>"
SPECIAL = ["<unk>", "<s>", "</s>", IM_START, IM_END]
# Added tokens that stay in the text (the parsers read them there).
MARKUP = [THINK, END_THINK, TOOL_CALL, END_TOOL_CALL, "<tool_response>", "</tool_response>"]
# The scripted reply, one added token per piece: a thought, an answer, then a get_weather call
# for Paris (vLLM's qwen3_coder parser drops the call from the content when the request has no
# tools, so the answer is what a plain chat gets).
THOUGHT = "The user wants the weather, so I call the tool."
ANSWER = "Checking the weather in Paris."
TOOL_BODY = "\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n"
SCRIPT_PIECES = [THOUGHT, ANSWER, TOOL_BODY]

# ChatML with tools and the enable_thinking switch (on unless the request turns it off), in the
# shape of Nemotron 3's template: thinking off opens the reply with an empty <think></think>.
CHAT_TEMPLATE = (
    "{%- if tools %}<|im_start|>system\n# Tools\n{%- for tool in tools %}\n{{ tool | tojson }}"
    "{%- endfor %}\nCall a tool as <tool_call>\n<function=NAME>\n<parameter=ARG>\nVALUE\n"
    "</parameter>\n</function>\n</tool_call><|im_end|>\n{%- endif %}"
    "{%- for message in messages %}<|im_start|>{{ message.role }}\n"
    "{%- if message.content is string %}{{ message.content }}{%- endif %}<|im_end|>\n"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n"
    "{%- if enable_thinking is defined and not enable_thinking %}<think></think>"
    "{%- else %}<think>{%- endif %}{%- endif %}"
)

_WORDS = [
    *("the", "a", "model", "serves", "tokens", "weather", "city", "cache", "block", "plan"),
    *("engine", "reply", "call", "tool", "think", "ready", "ok", "status", "json", "true"),
    *("false", "number", "answer", "sum", "two", "three", "five", "is", "of", "and", "to"),
    *("in", "on", "for", "with", "request", "pod", "node", "cluster", "paris", "london"),
    *("rome", "madrid", "sunny", "rain", "cold", "warm"),
]


def corpus(seed: int, lines: int = 2000) -> list[str]:
    rng = random.Random(seed)  # noqa: S311 (text to train on, not a secret)
    out = [json.dumps({"status": "ready", "ok": True}), "What is 2 + 3? Answer with 5."]
    out.extend(
        " ".join(rng.choice(_WORDS) for _ in range(rng.randint(3, 12))) + "." for _ in range(lines)
    )
    return out


def train(directory: Path, vocab_size: int, seed: int) -> dict[str, int]:
    """Write tokenizer.json and tokenizer_config.json; the ids of the added tokens."""
    from tokenizers import (  # noqa: PLC0415 (the engine's environment only)
        Tokenizer,
        decoders,
        models,
        pre_tokenizers,
        trainers,
    )

    tokenizer = Tokenizer(models.BPE(unk_token=SPECIAL[0]))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    added = len(MARKUP) + len(SCRIPT_PIECES)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size - added,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(corpus(seed), trainer)
    tokenizer.add_tokens(MARKUP + SCRIPT_PIECES)
    tokenizer.save(str(directory / "tokenizer.json"))
    ids = {token: tokenizer.token_to_id(token) for token in SPECIAL + MARKUP + SCRIPT_PIECES}
    config: dict[str, Any] = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": "<s>",
        "eos_token": IM_END,
        "unk_token": "<unk>",
        "pad_token": "</s>",
        "model_max_length": 1 << 20,
        "chat_template": CHAT_TEMPLATE,
        "clean_up_tokenization_spaces": False,
    }
    (directory / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n")
    return ids
