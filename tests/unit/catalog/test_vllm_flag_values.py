"""Values of `vllm serve` flags are checked as the deployment's release would check them: the
choices of Literal-typed flags are generated per release from the wheels (vllm_release_data's
flagChoices), so a value one release refuses is refused before a pod crash-loops on it, naming
the field, the flag, the value and what that release accepts; a value it takes passes."""

from __future__ import annotations

import re

import pytest

from nemotron_operator.catalog import vllm_flags
from nemotron_operator.catalog.vllm_release_flags import surface
from nemotron_operator.catalog.vllm_releases import PROFILES, EngineProfile
from nemotron_operator.render import RenderError
from tests.unit.render.fakes import make_plan, render

BY_NAME = {p.name: p for p in PROFILES}


def refusal(profile: EngineProfile, *extra: str) -> list[tuple[str, str]]:
    spec = {"engine": {"image": f"vllm/vllm-openai:v{profile.release}", "extraArgs": list(extra)}}
    try:
        render(spec, plan=make_plan(engine_version=profile.name))
    except RenderError as exc:
        return [(e.path, e.message) for e in exc.errors]
    return []


@pytest.mark.parametrize(
    ("flag", "value", "accepted_by"),
    [
        # int8 is in no release's CacheDType (0.31-0.34); the octave_* types are new in 0.33.
        ("--kv-cache-dtype", "int8", ()),
        ("--kv-cache-dtype", "octave_k3v3", ("0.33", "0.34")),
        ("--kv-cache-dtype", "ultraquant_4bit", ("0.32", "0.33", "0.34")),
        ("--kv-cache-dtype", "fp8", ("0.31", "0.32", "0.33", "0.34")),
        ("--mamba-cache-mode", "all", ("0.31",)),
        ("--spec-method", "mtp", ("0.31", "0.32", "0.33", "0.34")),
        ("--spec-method", "bogus", ()),
    ],
)
def test_choices_follow_the_release(flag: str, value: str, accepted_by: tuple[str, ...]) -> None:
    for profile in PROFILES:
        release = surface(profile)
        if profile.name in accepted_by:
            (use,) = vllm_flags.parse_args([flag, value], release=release)
            assert use.value == value
        else:
            with pytest.raises(vllm_flags.FlagError) as caught:
                vllm_flags.parse_args([flag, value], release=release)
            message = str(caught.value)
            assert f"vLLM {profile.release}'s {flag} takes one of " in message
            assert message.endswith(f"got {value!r}")
            assert ", ".join(release.choices[flag]) in message


@pytest.mark.parametrize(
    ("flag", "good", "bad"),
    [
        ("--all2all-backend", "naive", "deepep"),
        ("--chat-template-content-format", "openai", "json"),
        ("--mm-encoder-tp-mode", "data", "tensor"),
        ("--moe-backend", "triton", "tritonn"),
    ],
)
def test_extra_args_refuse_a_value_outside_the_releases_choices(
    flag: str, good: str, bad: str
) -> None:
    for profile in PROFILES:
        assert refusal(profile, flag, good) == []
        choices = ", ".join(surface(profile).choices[flag])
        assert refusal(profile, "--enforce-eager", flag, bad) == [
            (
                "spec.engine.extraArgs[1]",
                f"vLLM {profile.release}'s {flag} takes one of {choices}, got {bad!r}; "
                "remove or correct it",
            )
        ]


def test_the_all2all_passthrough_backend_is_removed_where_add_cli_args_removes_it() -> None:
    assert all("passthrough" not in surface(p).choices["--all2all-backend"] for p in PROFILES)


def test_aliases_and_abbreviations_of_a_release() -> None:
    v032 = BY_NAME["0.32"]
    # -dpa is vLLM's alias of --data-parallel-address: read as that flag, then refused as such.
    assert refusal(v032, "-dpa", "10.0.0.1") == [
        (
            "spec.engine.extraArgs[0]",
            "--data-parallel-address is not allowed: each replica is its own vLLM server; use "
            "spec.replicas",
        )
    ]
    ((path, message),) = refusal(v032, "--device-memory-utilization", "0.8")
    assert (path, message) == (
        "spec.engine.extraArgs[0]",
        "--gpu-memory-utilization duplicates spec.engine.gpuMemoryUtilization: set that field "
        "instead",
    )
    ((path, message),) = refusal(v032, "--enforce-eag")
    assert path == "spec.engine.extraArgs[0]"
    assert re.search("--enforce-eag is an abbreviation vLLM would read as --enforce-eager; "
                     "spell the full flag", message)  # fmt: skip
    # An ambiguous prefix is simply unknown (argparse refuses it too).
    ((_, message),) = refusal(v032, "--enable-log", "x")
    assert "has no flag --enable-log" in message


def test_moe_backend_is_read_as_vllm_reads_it_and_capture_sizes_are_integers() -> None:
    # vLLM lower-cases --moe-backend and turns "-" into "_" before checking the choice.
    for profile in PROFILES:
        assert refusal(profile, "--moe-backend", "Batched-Triton") == []
    assert refusal(BY_NAME["0.32"], "--cudagraph-capture-sizes", "8", "16") == []
    ((path, message),) = refusal(BY_NAME["0.32"], "--cudagraph-capture-sizes", "8", "x16")
    assert (path, message) == (
        "spec.engine.extraArgs[2]",
        "vLLM 0.32.0's --cudagraph-capture-sizes takes an integer, got 'x16'; remove or correct it",
    )
    ((path, message),) = refusal(BY_NAME["0.32"], "--collect-detailed-traces", "model", "gpu")
    assert path == "spec.engine.extraArgs[2]"
    assert message.startswith("vLLM 0.32.0's --collect-detailed-traces takes one of all, model, ")
