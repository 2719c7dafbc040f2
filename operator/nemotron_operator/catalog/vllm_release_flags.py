"""What each supported vLLM release accepts: its ``vllm serve`` flags (with their short aliases),
its environment variables and its speculative-config keys — generated from the release's own
wheel by ``hack/gen-vllm-releases.py`` into ``vllm_release_data/vllm-0.3X.json`` (never typed;
``hack/verify-vllm-releases.sh`` regenerates them and fails on any difference).

The flag table (``catalog.vllm_flag_table``) says how the operator reads a flag's value; this
module says whether the deployment's release has it at all. Pure: reads package data only.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from importlib import resources

from nemotron_operator.catalog.vllm_releases import NEWEST, PROFILES, EngineProfile

DATA_PACKAGE = "nemotron_operator.catalog.vllm_release_data"


@dataclass(frozen=True)
class ReleaseSurface:
    """One release's command line, environment and speculative config, as generated."""

    release: str
    flags: frozenset[str]  # canonical long names
    aliases: dict[str, str]  # every other spelling → its canonical name
    choices: dict[str, tuple[str, ...]]  # a Literal-typed flag → the values its parser takes
    environment_variables: frozenset[str]
    speculative_config_keys: frozenset[str]
    default_block_size: int
    mamba_cache_modes: tuple[str, ...]
    extensible_kv_cache: bool
    margin_floor_bytes: int | None
    margin_fraction: float | None

    def has_flag(self, name: str) -> bool:
        return name in self.flags or name in self.aliases


@functools.cache
def surface(profile: EngineProfile) -> ReleaseSurface:
    """The generated surface of ``profile``'s release."""
    text = (
        resources.files(DATA_PACKAGE)
        .joinpath(f"vllm-{profile.name}.json")
        .read_text(encoding="utf-8")
    )
    data = json.loads(text)
    flags: dict[str, list[str]] = data["flags"]
    extensible = data["extensibleKvCache"]
    return ReleaseSurface(
        release=data["release"],
        flags=frozenset(flags),
        aliases={alias: name for name, aliases in flags.items() for alias in aliases},
        choices={
            **{name: tuple(values) for name, values in data["flagChoices"].items()},
            "--mamba-cache-mode": tuple(data["mambaCacheModes"]),
        },
        environment_variables=frozenset(data["environmentVariables"]),
        speculative_config_keys=frozenset(data["speculativeConfigKeys"]),
        default_block_size=int(data["defaultBlockSize"]),
        mamba_cache_modes=tuple(data["mambaCacheModes"]),
        extensible_kv_cache=extensible is not None,
        margin_floor_bytes=None if extensible is None else extensible["cudaMarginFloorBytes"],
        margin_fraction=None if extensible is None else extensible["marginFraction"],
    )


def all_surfaces() -> tuple[ReleaseSurface, ...]:
    return tuple(surface(p) for p in PROFILES)


def newest_surface() -> ReleaseSurface:
    """The surface the flag table is read against when no deployment names a release."""
    return surface(NEWEST)
