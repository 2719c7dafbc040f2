"""Tokenizer and text-generation stand-ins: deterministic, cheap, and documented.

Nothing here resembles a real model. The stand-in only has to give clients plausible shapes
(token counts in `usage`, streamed pieces, reasoning before content) that are reproducible from
the request, so tests can assert exact numbers.

Tokenizer stand-in: every run of letters/digits costs one token per started 4 characters, and
every other non-space character (punctuation, symbols) costs one token; whitespace is free.
Roughly "~4 characters per token", the rule of thumb for English with BPE tokenizers.
"""

from __future__ import annotations

import hashlib
import math
import random
import re
from dataclasses import dataclass

CHARS_PER_TOKEN = 4
# A chat template wraps every message in role markers; a flat cost per message stands in for it.
CHAT_TOKENS_PER_MESSAGE = 4
# ...and the template appends the assistant's opening marker once.
CHAT_TOKENS_FOR_REPLY_PRIMER = 3
# What one image or video costs in the prompt; vLLM's real cost depends on resolution.
TOKENS_PER_IMAGE = 256
TOKENS_PER_VIDEO = 1024

_WORD_OR_SYMBOL = re.compile(r"\w+|[^\w\s]")

# Every word is at most CHARS_PER_TOKEN long, so each generated piece " word" is one token by the
# stand-in tokenizer above, and usage counts agree with the text.
_VOCABULARY = (
    "the", "a", "of", "to", "and", "in", "is", "it", "on", "that", "for", "this", "with", "as",
    "be", "at", "by", "we", "can", "data", "node", "pod", "gpu", "fast", "load", "plan", "run",
    "sim", "mock", "test", "yes", "no", "more", "less", "best", "good", "kind", "cool", "warm",
    "long", "fine", "ok", "all", "each", "some", "few", "many", "one", "two", "four", "nine",
    "ten", "time", "step", "path", "line", "core", "file", "disk", "rack",
)  # fmt: skip
_REASONING_VOCABULARY = (
    "hmm", "so", "if", "then", "thus", "note", "step", "see", "wait", "plan", "sure", "need",
    "next",
)  # fmt: skip

# Lengths the stand-in "model" picks on its own when max_tokens does not stop it first.
_NATURAL_CONTENT_TOKENS = (12, 48)
_NATURAL_REASONING_TOKENS = (6, 24)


def count_tokens(text: str) -> int:
    """Tokens of `text` by the stand-in tokenizer (see the module docstring)."""
    return sum(
        math.ceil(len(piece) / CHARS_PER_TOKEN) if piece[0].isalnum() or piece[0] == "_" else 1
        for piece in _WORD_OR_SYMBOL.findall(text)
    )


@dataclass(frozen=True)
class PlannedOutput:
    """What one choice will say: reasoning pieces, then content pieces (one token each)."""

    reasoning: tuple[str, ...]
    content: tuple[str, ...]
    finish_reason: str  # "stop" (the model ended) or "length" (max_tokens ended it)

    @property
    def num_tokens(self) -> int:
        return len(self.reasoning) + len(self.content)


def plan_output(
    seed_text: str,
    *,
    index: int,
    max_tokens: int,
    with_reasoning: bool,
    ignore_eos: bool,
    answer: tuple[str, ...] | None = None,
) -> PlannedOutput:
    """Deterministic output for a prompt: the same request always gets the same text.

    `index` separates the choices of one request (`n` > 1). The budget `max_tokens` is spent on
    reasoning first, as a reasoning model's would be; `ignore_eos` makes the output exactly
    `max_tokens` long, as vLLM's `ignore_eos` does for benchmarks. `answer` (one-token pieces)
    replaces the filler content: a tool call or a JSON answer the request asked for.
    """
    digest = hashlib.sha256(f"{index}\x00{seed_text}".encode()).digest()
    rng = random.Random(digest)  # noqa: S311 - deterministic filler text, not security
    reasoning_len = rng.randint(*_NATURAL_REASONING_TOKENS) if with_reasoning else 0
    content_len = rng.randint(*_NATURAL_CONTENT_TOKENS) if answer is None else len(answer)
    if ignore_eos and answer is None:
        content_len = max(0, max_tokens - reasoning_len)
    reasoning_len = min(reasoning_len, max_tokens)
    finish_reason = "length" if ignore_eos or reasoning_len + content_len > max_tokens else "stop"
    content_len = min(content_len, max_tokens - reasoning_len)
    reasoning = _pieces(rng, _REASONING_VOCABULARY, reasoning_len)
    content = _pieces(rng, _VOCABULARY, content_len) if answer is None else answer[:content_len]
    return PlannedOutput(reasoning=reasoning, content=content, finish_reason=finish_reason)


def _pieces(rng: random.Random, vocabulary: tuple[str, ...], length: int) -> tuple[str, ...]:
    words = [rng.choice(vocabulary) for _ in range(length)]
    if words:
        words[0] = words[0].capitalize()
    return tuple(word if i == 0 else f" {word}" for i, word in enumerate(words))
