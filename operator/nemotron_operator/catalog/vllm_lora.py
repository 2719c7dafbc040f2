"""vLLM's rules for the LoRA flags and adapters, as the pinned vLLM applies them after parsing.

The flag table (``catalog.vllm_flag_table``) says the flags exist and how they take values; these
are the checks vLLM makes on the values. Sources (read for this module; the lines are
long-standing and present in the v0.31 line):

- ``vllm/config/lora.py`` ``LoRAConfig``: ``max_lora_rank`` is a ``MaxLoRARanks`` literal (1, 8,
  16, 32, 64, 128, 256, 320, 512; default 16); ``max_loras`` ≥ 1 (default 1);
  ``_validate_lora_config``: ``max_cpu_loras`` defaults to ``max_loras`` and "must be >= than
  max_loras".
- ``vllm/entrypoints/openai/cli_args.py`` ``LoRAParserAction``: each ``--lora-modules`` value is
  ``name=path`` or a JSON object with ``name`` and ``path`` (and optional ``base_model_name``);
  anything else is "Invalid JSON format for --lora-modules".
- ``vllm/lora/worker_manager.py`` ``_load_adapter``: an adapter whose rank exceeds
  ``max_lora_rank`` fails to load ("LoRA rank {r} is greater than max_lora_rank {m}").
- ``vllm/envs.py`` ``VLLM_ALLOW_RUNTIME_LORA_UPDATING``: the load/unload endpoints exist only when
  it is ``1`` or ``true`` (case-insensitive).

Pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

MAX_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
DEFAULT_MAX_LORA_RANK = 16
DEFAULT_MAX_LORAS = 1
RUNTIME_UPDATES_ENV = "VLLM_ALLOW_RUNTIME_LORA_UPDATING"


class LoraConfigError(ValueError):
    """vLLM refuses the LoRA settings; the message reads like vLLM's."""


@dataclass(frozen=True)
class LoraModule:
    """One ``--lora-modules`` entry."""

    name: str
    path: str
    base_model_name: str | None = None


@dataclass(frozen=True)
class LoraLimits:
    enabled: bool
    max_loras: int
    max_lora_rank: int
    max_cpu_loras: int
    modules: tuple[LoraModule, ...]


def lora_limits(options: Mapping[str, object]) -> LoraLimits:
    """The LoRA settings of parsed options (canonical flag name → value), checked as vLLM checks
    them."""
    enabled = bool(options.get("--enable-lora", False))
    max_loras = int(str(options.get("--max-loras", DEFAULT_MAX_LORAS)))
    rank = int(str(options.get("--max-lora-rank", DEFAULT_MAX_LORA_RANK)))
    if rank not in MAX_LORA_RANKS:
        choices = ", ".join(str(r) for r in MAX_LORA_RANKS)
        raise LoraConfigError(
            f"argument --max-lora-rank: invalid choice: {rank} (choose from {choices})"
        )
    if max_loras < 1:
        raise LoraConfigError(
            f"max_loras: Input should be greater than or equal to 1 (got {max_loras})"
        )
    cpu_value = options.get("--max-cpu-loras")
    max_cpu = max_loras if cpu_value is None else int(str(cpu_value))
    if max_cpu < max_loras:
        raise LoraConfigError(f"max_cpu_loras ({max_cpu}) must be >= max_loras ({max_loras})")
    raw = options.get("--lora-modules") or ()
    modules = tuple(parse_lora_module(str(v)) for v in raw) if isinstance(raw, Sequence) else ()
    return LoraLimits(enabled, max_loras, rank, max_cpu, modules)


def parse_lora_module(value: str) -> LoraModule:
    """``name=path`` or ``{"name": ..., "path": ..., "base_model_name": ...}``."""
    if value.lstrip().startswith("{"):
        try:
            data = json.loads(value)
        except ValueError:
            data = None
        if (
            not isinstance(data, dict)
            or not isinstance(data.get("name"), str)
            or not isinstance(data.get("path"), str)
        ):
            raise LoraConfigError(f"Invalid JSON format for --lora-modules: {value}")
        base = data.get("base_model_name")
        return LoraModule(data["name"], data["path"], base if isinstance(base, str) else None)
    name, sep, path = value.partition("=")
    if not sep or not name or not path:
        raise LoraConfigError(f"Invalid format for --lora-modules: {value} (expected name=path)")
    return LoraModule(name, path)


def check_adapter_rank(name: str, rank: int, max_lora_rank: int) -> None:
    if rank > max_lora_rank:
        raise LoraConfigError(
            f"LoRA rank {rank} is greater than max_lora_rank {max_lora_rank} (adapter {name})"
        )


def runtime_updates_allowed(env: Mapping[str, str]) -> bool:
    return env.get(RUNTIME_UPDATES_ENV, "0").strip().lower() in ("1", "true")
