"""The generated per-release surface (vllm_release_data, from each release's wheel): the engine
profiles' facts come from it, every flag, variable and speculative-config key the operator renders
exists in every supported release, and a flag a release lacks is refused naming the release.

The data is committed; hack/verify-vllm-releases.sh regenerates it from the wheels and fails on
any difference (it needs the wheels, so it is not a unit test)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from nemotron_operator.catalog import vllm_flags
from nemotron_operator.catalog.vllm_flag_table import FLAGS
from nemotron_operator.catalog.vllm_release_flags import all_surfaces, surface
from nemotron_operator.catalog.vllm_releases import PROFILES, EngineProfile
from nemotron_operator.render import RenderError
from nemotron_operator.sizing import reserve
from tests.unit.render.fakes import make_plan, render, vllm

RELEASES = [pytest.param(p, id=p.name) for p in PROFILES]


@pytest.mark.parametrize("profile", RELEASES)
def test_each_profile_is_what_its_release_says(profile: EngineProfile) -> None:
    generated = surface(profile)
    assert generated.release == profile.release
    assert generated.default_block_size == profile.default_block_size
    assert generated.extensible_kv_cache == profile.extensible_kv_cache
    if profile.extensible_kv_cache:
        assert generated.margin_floor_bytes == reserve.KV_CACHE_MARGIN_FLOOR_BYTES
        assert generated.margin_fraction == reserve.KV_CACHE_MARGIN_FRACTION
    # --mamba-cache-mode all is gone from 0.32 (the planner assumes align or none).
    assert ("all" in generated.mamba_cache_modes) == (profile.minor < (0, 32))
    assert {"align", "none"} <= set(generated.mamba_cache_modes)


@pytest.mark.parametrize("profile", RELEASES)
def test_every_flag_of_the_operators_table_exists_in_every_release(
    profile: EngineProfile,
) -> None:
    generated = surface(profile)
    assert sorted(name for name in FLAGS if name not in generated.flags) == []
    for flag in FLAGS.values():
        for alias in flag.aliases:
            assert generated.aliases.get(alias) == flag.name, (flag.name, alias)


SPECS: list[dict[str, Any]] = [
    {},
    {"engine": {"kvCacheMemory": "Planned", "gpuMemoryUtilization": 0.85}},
    {
        "engine": {
            "speculativeDecoding": {"method": "mtp", "numSpeculativeTokens": 3},
            "enablePrefixCaching": False,
            "maxNumSeqs": 64,
            "maxNumBatchedTokens": 8192,
        }
    },
]


@pytest.mark.parametrize("profile", RELEASES)
@pytest.mark.parametrize("spec", SPECS)
def test_rendered_commands_are_accepted_by_each_release(
    profile: EngineProfile, spec: dict[str, Any]
) -> None:
    generated = surface(profile)
    engine = {**spec.get("engine", {}), "image": f"vllm/vllm-openai:v{profile.release}"}
    plan = make_plan(engine_version=profile.name, max_model_len=1_048_576)
    container = vllm(render({**spec, "engine": engine}, plan=plan))
    _, uses = vllm_flags.parse_serve_command(
        ["vllm", "serve", *container["args"]], release=generated
    )
    assert uses
    for env in container["env"]:
        if env["name"].startswith("VLLM_"):
            assert env["name"] in generated.environment_variables, env["name"]
    speculative = [u for u in uses if u.flag.name == "--speculative-config"]
    for use in speculative:
        assert set(json.loads(str(use.value))) <= generated.speculative_config_keys


def test_a_flag_only_a_newer_release_has_is_refused_on_the_older_naming_it() -> None:
    # --enable-extensible-kv-cache is new in 0.34; --kv-cache-memory-bytes is in all.
    old, new = (surface(p) for p in (PROFILES[0], PROFILES[-1]))
    assert "--enable-extensible-kv-cache" in new.flags
    assert "--enable-extensible-kv-cache" not in old.flags
    with pytest.raises(vllm_flags.FlagError, match=re.escape("vLLM 0.31.0 has no flag")):
        vllm_flags.parse_args(["--enable-extensible-kv-cache"], release=old)
    with pytest.raises(
        vllm_flags.FlagError, match=re.escape("exists in vLLM 0.34.0, but the operator")
    ):
        vllm_flags.parse_args(["--enable-extensible-kv-cache"], release=new)


def test_extra_args_are_checked_against_the_deployments_release() -> None:
    spec = {"engine": {"image": "vllm/vllm-openai:v0.31.0", "extraArgs": ["--grpc-port", "9"]}}
    with pytest.raises(RenderError) as caught:
        render(spec, plan=make_plan(engine_version="0.31"))
    assert [(e.path, e.message) for e in caught.value.errors] == [
        (
            "spec.engine.extraArgs[0]",
            "vLLM 0.31.0 has no flag --grpc-port; remove or correct it",
        )
    ]


def test_the_0_34_surface_lost_what_the_issue_says() -> None:
    v031, v034 = (surface(p) for p in (PROFILES[0], PROFILES[-1]))
    gone = v031.speculative_config_keys - v034.speculative_config_keys
    assert gone == {"disable_padded_drafter_batch", "use_heterogeneous_vocab"}
    assert "VLLM_USE_V2_MODEL_RUNNER" in v031.environment_variables
    assert "VLLM_USE_V2_MODEL_RUNNER" not in v034.environment_variables
    assert all("VLLM_FLASHINFER_MOE_BACKEND" not in s.environment_variables for s in all_surfaces())
