"""The vLLM releases the operator plans for: one engine profile per minor release, 0.31 to 0.34,
and which one a deployment runs (``spec.engine.image``'s tag, or ``spec.engine.version``).

A profile holds what moves the plan's arithmetic between releases; each value names the source
file of that release it was read from (the wheels on PyPI, ``vllm-0.3X.0``; docs/sizing.md §12
and docs/compatibility.md list the differences). Patch releases map to their minor's profile.
Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

Version = tuple[int, int, int]

VERSION_FIELD = "spec.engine.version"
IMAGE_FIELD = "spec.engine.image"


@dataclass(frozen=True)
class EngineProfile:
    """What one vLLM minor release does differently in the plan's arithmetic."""

    minor: tuple[int, int]
    release: str  # the release whose source the profile was read from
    built: str  # the build date of its wheel (the METADATA file's timestamp)
    # ``config/cache.py`` ``CacheConfig.DEFAULT_BLOCK_SIZE``: the block size before hybrid
    # alignment, and a floor of the alignment (``platforms/interface.py``
    # ``_align_hybrid_block_size``: ``max(kernel block, cache_config.block_size)``).
    default_block_size: int
    # ``config/vllm.py`` ``_resolve_extensible_kv_cache``: on by default on CUDA, the pool is
    # committed after warm-up and CUDA-graph capture from measured memory
    # (``v1/worker/extensible_kv_cache.py``), and ``--gpu-memory-utilization`` defaults to unset
    # (1.0 with the extensible cache).
    extensible_kv_cache: bool
    # The operator's default ``--gpu-memory-utilization`` for this release; None: not passed
    # (vLLM's own default applies).
    default_gpu_memory_utilization: float | None

    @property
    def name(self) -> str:
        return f"{self.minor[0]}.{self.minor[1]}"


PROFILES: tuple[EngineProfile, ...] = (
    EngineProfile((0, 31), "0.31.0", "2026-10-03", 16, False, 0.90),
    EngineProfile((0, 32), "0.32.0", "2026-10-17", 16, False, 0.90),
    EngineProfile((0, 33), "0.33.0", "2026-11-01", 16, False, 0.90),
    EngineProfile((0, 34), "0.34.0", "2026-11-16", 64, True, None),
)
OLDEST = PROFILES[0]
NEWEST = PROFILES[-1]
DEFAULT_PROFILE = NEWEST


def profile_named(name: str) -> EngineProfile | None:
    """The profile of ``0.33`` (a status.plan.engineVersion), or None."""
    return next((p for p in PROFILES if p.name == name), None)


def parse_version(text: str) -> Version | None:
    """``v0.31.0``, ``0.31.0``, ``0.31`` or ``0.31.0-cu130`` → (0, 31, 0); None otherwise."""
    found = re.fullmatch(r"v?(\d+)\.(\d+)(?:\.(\d+))?(?:[-+.].*)?", text)
    if found is None:
        return None
    return int(found[1]), int(found[2]), int(found[3] or 0)


def image_tag_version(image: str) -> Version | None:
    """The version an image's tag names; None for a digest, ``latest`` or a custom build."""
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    tag = last.rsplit(":", 1)[1] if ":" in last else ""
    return parse_version(tag)


class EngineVersionError(ValueError):
    """The deployment's vLLM cannot be planned; ``field`` is what to change."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(message)


@dataclass(frozen=True)
class EngineRelease:
    """The vLLM a deployment runs and the profile it is planned with."""

    profile: EngineProfile
    version: Version | None  # None: neither the tag nor spec.engine.version names one
    note: str | None = None  # when the profile is not the version's own

    @property
    def label(self) -> str:
        return "unknown" if self.version is None else ".".join(map(str, self.version))


def _text(version: Version) -> str:
    return ".".join(map(str, version))


def resolve_release(image: str, version: str | None) -> EngineRelease:
    """The profile for ``image`` and ``spec.engine.version``; raises EngineVersionError for a
    release older than the oldest profile, an unreadable version, or a version that contradicts
    the image's tag."""
    tagged = image_tag_version(image)
    given: Version | None = None
    if version is not None:
        given = parse_version(version)
        if given is None:
            raise EngineVersionError(
                VERSION_FIELD,
                f"{version!r} is not a vLLM version; write it as 0.34.0 (or 0.34)",
            )
        if tagged is not None and tagged[:2] != given[:2]:
            raise EngineVersionError(
                VERSION_FIELD,
                f"{_text(given)} contradicts the image tag of {image} ({_text(tagged)}); remove "
                f"{VERSION_FIELD} (the tag names the version) or fix it",
            )
    found = given or tagged
    if found is None:
        return EngineRelease(
            DEFAULT_PROFILE,
            None,
            f"the tag of {image} is not a vLLM version: planned for vLLM {DEFAULT_PROFILE.name}; "
            f"set {VERSION_FIELD} to the version the image runs",
        )
    field = VERSION_FIELD if given is not None else IMAGE_FIELD
    if found[:2] < OLDEST.minor:
        raise EngineVersionError(
            field,
            f"vLLM {_text(found)} is older than the oldest release the operator plans for "
            f"({OLDEST.release}); use an image of vLLM {OLDEST.name} to {NEWEST.name} in {field}",
        )
    for profile in PROFILES:
        if profile.minor == found[:2]:
            return EngineRelease(profile, found)
    return EngineRelease(
        NEWEST,
        found,
        f"vLLM {_text(found)} is newer than the newest release the operator knows "
        f"({NEWEST.release}): planned with the {NEWEST.name} profile; check its numbers against "
        "the engine's start-up log",
    )
