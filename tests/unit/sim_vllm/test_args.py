"""The stand-in vLLM reads the rendered `vllm serve` command line and refuses what vLLM refuses."""

from __future__ import annotations

import json

import pytest

from nemotron_sim.vllm import StubVllmArgumentError, parse_serve_argv
from nemotron_sim.vllm.args import DEFAULT_MAX_MODEL_LEN, StubVllmStartError

MODEL = "nvidia/NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-BF16"


def serve(*flags: str) -> list[str]:
    return ["vllm", "serve", MODEL, *flags]


def refusal(*flags: str) -> str:
    with pytest.raises(StubVllmArgumentError) as caught:
        parse_serve_argv(serve(*flags))
    message = str(caught.value)
    assert message.startswith("usage: vllm serve"), message
    return message.splitlines()[-1]


def test_a_command_like_the_operator_renders_is_accepted() -> None:
    config = parse_serve_argv(
        serve(
            "--served-model-name", "super-vl",
            "--tensor-parallel-size", "4",
            "--pipeline-parallel-size", "1",
            "--enable-expert-parallel",
            "--max-model-len", "262144",
            "--gpu-memory-utilization", "0.9",
            "--max-num-seqs", "16",
            "--speculative-config", '{"method":"mtp","num_speculative_tokens":3}',
            "--reasoning-parser", "nemotron_v3",
            "--limit-mm-per-prompt", '{"image":8,"video":2}',
            "--mamba-ssm-cache-dtype", "float32",
            "--kv-cache-dtype", "fp8",
            "--trust-remote-code",
            "--port", "8000",
        )
    )  # fmt: skip
    assert config.model == MODEL
    assert config.served_model_names == ("super-vl",)
    assert config.max_model_len == 262144
    assert config.max_num_seqs == 16
    assert (config.speculative_method, config.num_speculative_tokens) == ("mtp", 3)
    assert config.reasoning_parser == "nemotron_v3"
    assert dict(config.mm_limits) == {"image": 8, "video": 2}
    assert config.port == 8000
    assert not config.is_worker


def test_unknown_flag_is_refused_like_argparse() -> None:
    assert "unrecognized arguments: --not-a-vllm-flag" in refusal("--not-a-vllm-flag", "1")


def test_a_flag_vllm_removed_is_refused_as_vllm_refuses_it() -> None:
    """The operator explains why --swap-space is gone (its flag table's reason); vLLM 0.32's
    parser just lists what it did not recognise, the value with it, and so does the stand-in."""
    assert refusal("--swap-space", "16") == (
        "vllm serve: error: unrecognized arguments: --swap-space 16"
    )


def test_every_unrecognized_argument_is_listed_at_once() -> None:
    message = refusal("--bogus", "--max-num-seqs", "3", "--also-bogus", "x")
    assert message.endswith("unrecognized arguments: --bogus --also-bogus x")


def test_a_unique_prefix_stands_for_the_option_as_in_argparse() -> None:
    assert parse_serve_argv(serve("--max-model", "4")).max_model_len == 4
    assert "ambiguous option: --max could match" in refusal("--max", "4")


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        # vLLM 0.32.0's own words (its parser, run on these arguments, said each of them)
        (("--kv-cache-dtype", "fp7"), "argument --kv-cache-dtype: invalid choice: 'fp7' (choose"),
        (("--mamba-ssm-cache-dtype", "int4"), "invalid choice: 'int4'"),
        (
            ("--speculative-config", "{method: mtp"),
            "argument --speculative-config/-sc: Value {method: mtp cannot be converted to",
        ),
        (("--limit-mm-per-prompt", "image=8"), "Value image=8 cannot be converted to"),
        (("-tp", "four"), "argument --tensor-parallel-size/-tp: invalid int value: 'four'"),
        (("--max-num-seqs",), "argument --max-num-seqs: expected one argument"),
        (("--served-model-name",), "argument --served-model-name: expected at least one argument"),
        (("--max-lora-rank", "24"), "invalid choice: 24 (choose from 1, 8, 16, 32, 64, 128, 256,"),
        (("--max-model-len", "12q"), "invalid human_readable_int_or_auto value: '12q'"),
        (("--max-num-batched-tokens", "auto"), "invalid human_readable_int value: 'auto'"),
        (
            ("--gpu-memory-utilization", "x"),
            "argument --gpu-memory-utilization/--device-memory-utilization: invalid float value",
        ),
        (
            ("--enforce-eager=true",),
            "argument --enforce-eager/--no-enforce-eager: ignored explicit argument 'true'",
        ),
        (("--headless=1",), "argument --headless: ignored explicit argument '1'"),
    ],
)
def test_bad_values_are_refused(flags: tuple[str, ...], expected: str) -> None:
    assert expected in refusal(*flags)


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (("--speculative-config", "[1, 2]"), "expected a JSON object"),
        (("--speculative-config", '{"method": "mtp", "num_speculative_tokens": 0}'), "positive"),
        (("--speculative-config", '{"num_speculative_tokens": 2}'), "'method' is required"),
        (("--limit-mm-per-prompt", '{"image": -1}'), "expected modality limits"),
        (("--limit-mm-per-prompt", "[8]"), "expected modality limits"),
        (("--max-num-seqs", "0"), "must be at least 1"),
        (("--nnodes", "2", "--node-rank", "2"), "is not a rank of --nnodes 2"),
    ],
)
def test_values_vllm_rejects_after_parsing_are_refused(
    flags: tuple[str, ...], expected: str
) -> None:
    assert expected in refusal(*flags)


def start_failure(*flags: str) -> str:
    """vLLM parsed the command line and then refused to start (no usage line)."""
    with pytest.raises(StubVllmStartError) as caught:
        parse_serve_argv(serve(*flags))
    return str(caught.value)


def test_checkpoint_parser_names_need_the_plugin_file() -> None:
    message = start_failure("--reasoning-parser", "super_v3")
    assert message.startswith("invalid reasoning parser: super_v3 (chose from { cohere_command3,")
    config = parse_serve_argv(
        serve("--reasoning-parser-plugin", "/parsers/super_v3.py", "--reasoning-parser", "super_v3")
    )
    assert config.reasoning_parser == "super_v3"


def test_parsers_built_into_the_release_are_accepted() -> None:
    """vLLM 0.32.0 has 38 reasoning parsers built in; the stand-in once knew 18 (gemma4 not)."""
    assert parse_serve_argv(serve("--reasoning-parser", "gemma4")).reasoning_parser == "gemma4"
    auto = ("--enable-auto-tool-choice", "--tool-call-parser")
    assert parse_serve_argv(serve(*auto, "qwen3_coder")).options["--tool-call-parser"] == (
        "qwen3_coder"
    )
    assert "invalid tool call parser: nope" in start_failure(*auto, "nope")
    assert parse_serve_argv(serve("--tool-call-parser", "nope"))  # no auto choice: not checked
    plugin = ("--tool-parser-plugin", "/parsers/p.py")
    assert parse_serve_argv(serve(*plugin, *auto, "mine")).options["--tool-call-parser"] == "mine"


def test_served_model_name_defaults_to_the_model_and_takes_several() -> None:
    assert parse_serve_argv(serve()).served_model_names == (MODEL,)
    config = parse_serve_argv(serve("--served-model-name", "a", "b", "--max-num-seqs", "2"))
    assert config.served_model_names == ("a", "b")
    assert config.served_model_name == "a"


def test_vllm_spellings_are_understood() -> None:
    config = parse_serve_argv(
        serve(
            "--mamba_ssm_cache_dtype=float32",
            "--max-model-len=128k",
            "--speculative-config.method",
            "mtp",
            "--speculative-config.num_speculative_tokens",
            "2",
        )
    )
    assert config.max_model_len == 128_000
    assert (config.speculative_method, config.num_speculative_tokens) == ("mtp", 2)
    assert parse_serve_argv(serve("--max-model-len", "1K")).max_model_len == 1024
    assert parse_serve_argv(serve("--max-model-len", "auto")).max_model_len == (
        DEFAULT_MAX_MODEL_LEN
    )
    assert parse_serve_argv(serve("--spec-method", "mtp")).num_speculative_tokens == 1


def test_last_occurrence_wins_as_with_argparse() -> None:
    config = parse_serve_argv(serve("--max-num-seqs", "4", "--max-num-seqs", "9"))
    assert config.max_num_seqs == 9


@pytest.mark.parametrize(
    "argv",
    [
        ["/usr/local/bin/vllm", "serve", MODEL, "--max-num-seqs", "3"],
        ["sh", "-c", f"exec vllm serve {MODEL} --max-num-seqs 3"],
        ["/bin/bash", "-c", f"vllm serve {MODEL} --limit-mm-per-prompt '{json.dumps({})}'"],
    ],
)
def test_container_command_forms_reach_the_same_parser(argv: list[str]) -> None:
    assert parse_serve_argv(argv).model == MODEL


def test_anything_but_vllm_serve_is_refused() -> None:
    with pytest.raises(StubVllmArgumentError, match="only `vllm serve MODEL"):
        parse_serve_argv(["python3", "-m", "vllm.entrypoints.openai.api_server"])
    with pytest.raises(StubVllmArgumentError, match="only `vllm serve MODEL"):
        parse_serve_argv(["vllm", "serve", "--max-num-seqs", "3"])


@pytest.mark.parametrize(
    ("flags", "worker"),
    [
        ((), False),
        (("--nnodes", "2", "--node-rank", "0", "--master-addr", "leader"), False),
        (("--nnodes", "2", "--node-rank", "1", "--master-addr", "leader", "--headless"), True),
        (("--nnodes", "3", "-r", "2"), True),
        (("--headless",), True),
    ],
)
def test_worker_ranks_are_recognised(flags: tuple[str, ...], worker: bool) -> None:
    assert parse_serve_argv(serve(*flags)).is_worker is worker


def test_what_vllm_0_32s_parser_accepted_is_accepted() -> None:
    """Each of these was run through the real parser (vLLM 0.32.0, CPU build) and accepted."""
    config = parse_serve_argv(
        serve(
            "--max-model-len", "1.5k",
            "--max-cpu-loras", "None",
            "--hf-overrides", "abc",
            "--middleware", "a.b", "--middleware", "c.d",
            "--max_num_seqs=3",
            "--hf-token",
        )
    )  # fmt: skip
    assert config.max_model_len == 1500
    assert config.max_num_seqs == 3
    assert config.options["--max-cpu-loras"] is None
    assert config.options["--hf-overrides"] == "abc"
    assert config.options["--middleware"] == ["a.b", "c.d"]
    assert config.options["--hf-token"] is True
    assert parse_serve_argv(serve("--max-model-len", "-1")).max_model_len == DEFAULT_MAX_MODEL_LEN
    assert "Decimals are not allowed" in refusal("--max-model-len", "1.5K")
