"""The table of vLLM flags parses arguments the way vLLM's parser does, and refuses what it
refuses."""

from __future__ import annotations

import pytest

from nemotron_operator.catalog import vllm_flags
from nemotron_operator.catalog.vllm_flags import (
    DENIED,
    FLAGS,
    OWNED_BY_FIELD,
    FlagError,
    Kind,
    canonical,
    parse_args,
    parse_serve_command,
)
from nemotron_operator.catalog.vllm_release_flags import all_surfaces


@pytest.mark.parametrize(
    ("spelled", "expected"),
    [
        ("--tensor-parallel-size", "--tensor-parallel-size"),
        ("-tp", "--tensor-parallel-size"),
        ("--max_model_len", "--max-model-len"),
        ("--mamba_ssm_cache_dtype=float32", "--mamba-ssm-cache-dtype"),
        ("--no-enable-prefix-caching", "--enable-prefix-caching"),
        ("--speculative-config.method", "--speculative-config"),
        ("-ep", "--enable-expert-parallel"),
        ("--swap-space", None),
        ("--no-max-model-len", None),  # only booleans have a --no- form
        ("--max-model-len.x", None),  # only JSON flags take dotted keys
        ("--tensor", None),  # no abbreviations
    ],
)
def test_spellings_resolve_like_vllm(spelled: str, expected: str | None) -> None:
    assert canonical(spelled) == expected


def test_every_flag_the_design_names_is_in_the_table() -> None:
    design = [
        "--served-model-name",
        "--tensor-parallel-size",
        "--pipeline-parallel-size",
        "--enable-expert-parallel",
        "--max-model-len",
        "--gpu-memory-utilization",
        "--max-num-seqs",
        "--speculative-config",
        "--reasoning-parser",
        "--reasoning-parser-plugin",
        "--tool-call-parser",
        "--enable-auto-tool-choice",
        "--limit-mm-per-prompt",
        "--kv-cache-dtype",
        "--mamba-ssm-cache-dtype",
        "--default-chat-template-kwargs",
        "--trust-remote-code",
        "--nnodes",
        "--node-rank",
        "--master-addr",
        "--master-port",
        "--headless",
        "--enable-prefix-caching",
    ]
    assert [f for f in design if f not in FLAGS] == []


def test_denied_and_owned_flags_are_real_flags() -> None:
    # A typo in either list would silently let the flag through.
    assert [f for f in DENIED if f not in FLAGS] == []
    assert [f for f in OWNED_BY_FIELD if f not in FLAGS] == []
    assert all(path.startswith("spec.") for path in OWNED_BY_FIELD.values())


def test_values_in_both_spellings_and_switches() -> None:
    uses = parse_args(
        [
            "--max-num-seqs=64",
            "--block-size",
            "32",
            "--enforce-eager",
            "--no-enable-chunked-prefill",
            "--speculative-config",
            '{"method":"mtp","num_speculative_tokens":3}',
            "--served-model-name",
            "a",
            "b",
            "--max-model-len",
            "-1",
        ]
    )
    got = [(u.flag.name, u.value, u.negated, u.index) for u in uses]
    assert got == [
        ("--max-num-seqs", "64", False, 0),
        ("--block-size", "32", False, 1),
        ("--enforce-eager", None, False, 3),
        ("--enable-chunked-prefill", None, True, 4),
        ("--speculative-config", '{"method":"mtp","num_speculative_tokens":3}', False, 5),
        ("--served-model-name", ("a", "b"), False, 7),
        ("--max-model-len", "-1", False, 10),
    ]


def test_dotted_json_key() -> None:
    (use,) = parse_args(["--speculative-config.method", "mtp"])
    assert (use.flag.name, use.sub_key, use.value) == ("--speculative-config", "method", "mtp")


@pytest.mark.parametrize(
    ("args", "index", "message"),
    [
        (["--swap-space", "4"], 0, "does not exist in vLLM 0.31 to 0.34"),
        (["--max-num-seqs", "64", "--bogus"], 2, "has no flag --bogus"),
        (["--max-num-seqs", "many"], 0, "--max-num-seqs takes an integer, got 'many'"),
        (["--gpu-memory-utilization", "high"], 0, "takes a number"),
        (["--mamba-ssm-cache-dtype", "fp8"], 0, "one of auto, float32, float16, bfloat16"),
        (["--limit-mm-per-prompt", "{image:8}"], 0, "takes valid JSON"),
        (["--max-model-len", "lots"], 0, "suffixes k/m/g/t ×1000, K/M/G/T ×1024"),
        (["--max-num-batched-tokens", "auto"], 0, "no auto"),
        (["--kv-cache-memory-bytes", "1.5G"], 0, "got '1.5G'"),  # no decimals with G
        (["--no-disable-log-stats"], 0, "has no flag --no-disable-log-stats"),  # store_true
        (["--disable-log-stats=1"], 0, "takes no value"),
        (["--middleware", "a", "b"], 2, "one value per occurrence: repeat --middleware"),
        (["--max-model", "4"], 0, "abbreviation vLLM would read as --max-model-len; spell the"),
        (["--enforce-eager=true"], 0, "takes no value"),
        (["--max-num-seqs"], 0, "needs a value"),
        (["--served-model-name", "--enforce-eager"], 0, "needs at least one value"),
        (["64"], 0, "every argument must start with --"),
    ],
)
def test_refusals_name_the_argument(args: list[str], index: int, message: str) -> None:
    with pytest.raises(FlagError, match=message) as info:
        parse_args(args)
    assert info.value.index == index


def test_serve_command_indices_are_positions_in_argv() -> None:
    model, uses = parse_serve_command(["vllm", "serve", "/models/x", "-tp", "8", "--headless"])
    assert model == "/models/x"
    assert [(u.flag.name, u.index) for u in uses] == [
        ("--tensor-parallel-size", 3),
        ("--headless", 5),
    ]
    with pytest.raises(FlagError) as info:
        parse_serve_command(["vllm", "serve", "/m", "--nope"])
    assert info.value.index == 3
    with pytest.raises(FlagError, match="expected: vllm serve MODEL"):
        parse_serve_command(["python", "-m", "vllm"])


def test_kinds_are_consistent() -> None:
    for flag in FLAGS.values():
        assert flag.name.startswith("--")
        generated = [s.choices.get(flag.name) for s in all_surfaces()]
        if flag.kind is Kind.CHOICE:  # its own choices or the release's, in every release
            assert bool(flag.choices) or all(generated), flag.name
        else:
            assert not flag.choices, flag.name
        if flag.kind not in (Kind.CHOICE, Kind.LIST):
            assert not any(generated), flag.name
        assert flag.source in ("E", "F"), flag.name
    assert vllm_flags.VLLM_VERSION == "v0.34.0"


def test_dotted_sub_keys_keep_their_underscores() -> None:
    from nemotron_operator.catalog.vllm_flags import lookup

    found = lookup("--speculative_config.num_speculative_tokens")
    assert found is not None
    flag, negated, sub_key = found
    assert (flag.name, negated, sub_key) == (
        "--speculative-config",
        False,
        "num_speculative_tokens",
    )
