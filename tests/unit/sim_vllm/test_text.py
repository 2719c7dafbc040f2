"""The tokenizer and text stand-ins are deterministic and agree with each other."""

from __future__ import annotations

import pytest

from nemotron_sim.vllm.text import count_tokens, plan_output


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("", 0),
        ("   ", 0),
        ("hi", 1),
        ("word", 1),
        ("words", 2),  # a started fifth character costs a token
        ("Hello, world!", 6),  # Hell|o , worl|d !
        ("GPU-8x", 3),  # GPU - 8x
    ],
)
def test_token_count_is_about_four_characters_per_token(text: str, tokens: int) -> None:
    assert count_tokens(text) == tokens


def test_output_is_deterministic_per_prompt_and_choice() -> None:
    def plan(seed: str, index: int = 0) -> tuple[str, ...]:
        return plan_output(
            seed, index=index, max_tokens=100, with_reasoning=False, ignore_eos=False
        ).content

    assert plan("hello") == plan("hello")
    assert plan("hello") != plan("goodbye")
    assert plan("hello", 0) != plan("hello", 1)


def test_generated_text_costs_one_token_per_piece() -> None:
    out = plan_output("x", index=0, max_tokens=1000, with_reasoning=True, ignore_eos=False)
    assert out.reasoning
    assert out.content
    assert count_tokens("".join(out.content)) == len(out.content)
    assert count_tokens("".join(out.reasoning)) == len(out.reasoning)
    assert out.finish_reason == "stop"


def test_max_tokens_cuts_reasoning_first_and_reports_length() -> None:
    out = plan_output("x", index=0, max_tokens=3, with_reasoning=True, ignore_eos=False)
    assert (len(out.reasoning), len(out.content), out.finish_reason) == (3, 0, "length")


def test_ignore_eos_generates_exactly_max_tokens() -> None:
    out = plan_output("x", index=0, max_tokens=500, with_reasoning=False, ignore_eos=True)
    assert (out.num_tokens, out.finish_reason) == (500, "length")
