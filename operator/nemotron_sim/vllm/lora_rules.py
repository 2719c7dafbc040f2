"""vLLM's rules for the LoRA flags and adapters, as the stand-in applies them after parsing, from
its own data (``data/lora.json``, which names the vLLM source of each rule; the rank choices and
the defaults are the recorded parser's, in ``data/serve-flags.json``). Pure."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nemotron_sim.vllm.flag_data import flags, load_json


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


@functools.cache
def facts() -> dict[str, Any]:
    return load_json("data/lora.json")


def lora_limits(options: Mapping[str, object]) -> LoraLimits:
    """The LoRA settings of parsed options (canonical flag name → value), checked as vLLM checks
    them after its parser (which already refused a rank outside ``--max-lora-rank``'s choices)."""
    table = flags()
    enabled = bool(options.get("--enable-lora", False))
    max_loras = int(str(options.get("--max-loras", table["--max-loras"].default)))
    rank = int(str(options.get("--max-lora-rank", table["--max-lora-rank"].default)))
    if max_loras < facts()["minMaxLoras"]:
        raise LoraConfigError(
            f"max_loras: Input should be greater than or equal to {facts()['minMaxLoras']}"
        )
    cpu_value = options.get("--max-cpu-loras")
    max_cpu = max_loras if cpu_value is None else int(str(cpu_value))
    if max_cpu < max_loras:
        raise LoraConfigError(f"max_cpu_loras ({max_cpu}) must be >= max_loras ({max_loras})")
    raw = options.get("--lora-modules") or ()
    modules = tuple(parse_lora_module(str(v)) for v in raw) if isinstance(raw, Sequence) else ()
    return LoraLimits(enabled, max_loras, rank, max_cpu, tuple(m for m in modules if m))


def parse_lora_module(value: str) -> LoraModule | None:
    """vLLM's ``LoRAParserAction``: ``name=path`` when there is an ``=`` and no comma, else a JSON
    object with ``name`` and ``path`` (and optional ``base_model_name``); empty values skipped."""
    if value in ("", "None"):
        return None
    if "=" in value and "," not in value:
        name, path = value.split("=", 1)
        return LoraModule(name, path)
    try:
        data = json.loads(value)
    except ValueError:
        raise LoraConfigError(f"Invalid JSON format for --lora-modules: {value}") from None
    keys = {"name", "path", "base_model_name"}
    if not isinstance(data, dict) or not {"name", "path"} <= set(data) or set(data) - keys:
        raise LoraConfigError(f"Invalid fields for --lora-modules: {value}")
    base = data.get("base_model_name")
    return LoraModule(str(data["name"]), str(data["path"]), None if base is None else str(base))


def check_adapter_rank(rank: int, max_lora_rank: int) -> None:
    """``PEFTHelper.validate_legal``: an adapter of a higher rank does not load."""
    if rank > max_lora_rank:
        raise LoraConfigError(f"LoRA rank {rank} is greater than max_lora_rank {max_lora_rank}.")


def runtime_updates_allowed(env: Mapping[str, str]) -> bool:
    """Whether the load/unload endpoints exist (``VLLM_ALLOW_RUNTIME_LORA_UPDATING``)."""
    value = env.get(facts()["runtimeUpdatesEnv"], "0").strip().lower()
    return value in facts()["runtimeUpdatesTrue"]
