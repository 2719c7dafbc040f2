"""The stand-in vLLM's LoRA adapters: the flags checked with vLLM's rules, the loaded set, the
runtime load/unload endpoints' behaviour and the ``vllm:lora_requests_info`` labels.

What vLLM does, and the stand-in copies (``vllm/entrypoints/openai/serving_models.py``
``OpenAIServingModels.load_lora_adapter`` / ``unload_lora_adapter``, ``vllm/envs.py``):

- ``POST /v1/load_lora_adapter`` and ``/v1/unload_lora_adapter`` exist only when
  ``VLLM_ALLOW_RUNTIME_LORA_UPDATING`` is true; without ``--enable-lora`` loading fails.
- load: both ``lora_name`` and ``lora_path`` are required (400); a name already loaded is 400
  "The lora adapter '{name}' has already been loaded."; success answers 200 with the text
  "Success: LoRA adapter '{name}' added successfully.".
- unload: an unknown name is 404 "The lora adapter '{name}' cannot be found."; success answers
  "Success: LoRA adapter '{name}' removed successfully.".
- ``/v1/models`` lists each adapter after the base model, ``root`` its path and ``parent`` the
  base model's served name; a request names an adapter in ``model``.

Where the adapter comes from. A Hugging Face id (anything not starting with ``/``) is refused
when ``HF_HUB_OFFLINE`` is on, as the Hub client refuses. When the stand-in knows its pod's
volumes (``NEMOTRON_SIM_MOUNTS``, ``{mountPath: directory}``): a path must be a directory of a
mount holding ``adapter_config.json``, whose ``r`` is checked against ``--max-lora-rank``; a Hub
id is "fetched" (no network) into ``HF_HUB_CACHE`` as a snapshot whose ``adapter_config.json``
has ``r`` = ``SIMULATED_RANK`` unless a test seeded another. The kubelet gives its in-process
stand-ins their pod's ``emptyDir`` and claim directories (kubelet/stand_in_volumes.py), where
the stand-in download step leaves the adapters it fetched. A stand-in without volumes (started
directly, as in unit tests) takes every adapter as found, with rank ``SIMULATED_RANK``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nemotron_sim.vllm import lora_rules
from nemotron_sim.vllm.protocol import model_card

MOUNTS_ENV = "NEMOTRON_SIM_MOUNTS"
SIMULATED_RANK = 8


class LoraError(Exception):
    """An API error of the adapter endpoints: status and vLLM's message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class LoadedAdapter:
    name: str
    path: str
    rank: int


class LoraAdapters:
    """The adapters one stand-in serves."""

    def __init__(self, options: Mapping[str, Any], env: Mapping[str, str]) -> None:
        self.limits = lora_rules.lora_limits(options)  # raises LoraConfigError like vLLM
        self.runtime_updates = lora_rules.runtime_updates_allowed(env)
        self._env = dict(env)
        self.loaded: dict[str, LoadedAdapter] = {}
        self.running: dict[str, int] = {}  # adapter name → requests in flight

    @property
    def enabled(self) -> bool:
        return self.limits.enabled

    def load_static(self) -> None:
        """``--lora-modules``: loaded when the server starts, as vLLM does."""
        for module in self.limits.modules:
            self.load(module.name, module.path)

    def load(self, name: Any, path: Any) -> LoadedAdapter:
        if not isinstance(name, str) or not name or not isinstance(path, str) or not path:
            raise LoraError(400, "Both 'lora_name' and 'lora_path' must be provided.")
        if not self.enabled:
            raise LoraError(400, "LoRA is not enabled (start vLLM with --enable-lora).")
        if name in self.loaded:
            raise LoraError(400, f"The lora adapter '{name}' has already been loaded.")
        rank = self._fetch(name, path)
        try:
            lora_rules.check_adapter_rank(rank, self.limits.max_lora_rank)
        except lora_rules.LoraConfigError as error:
            raise LoraError(400, f"Loading lora {name} failed: {error}") from None
        adapter = LoadedAdapter(name, path, rank)
        self.loaded[name] = adapter
        return adapter

    def unload(self, name: Any) -> None:
        if not isinstance(name, str) or name not in self.loaded:
            raise LoraError(404, f"The lora adapter '{name}' cannot be found.")
        del self.loaded[name]

    def _fetch(self, name: str, path: str) -> int:
        hub = not path.startswith("/")
        if hub and _true(self._env.get("HF_HUB_OFFLINE", "0")):
            raise LoraError(
                400, f"Loading lora {name} failed: No adapter found for {path} (HF_HUB_OFFLINE)"
            )
        mounts = self._mounts()
        if mounts is None:
            # A stand-in without pod volumes (the in-process kind) cannot look: the adapter is
            # taken as found, with the simulated rank.
            return SIMULATED_RANK
        directory = self._hub(path, mounts) if hub else resolve_mount(path, mounts)
        if directory is None or not directory.is_dir():
            raise LoraError(400, f"Loading lora {name} failed: No adapter found for {path}")
        config = directory / "adapter_config.json"
        try:
            return int(json.loads(config.read_text(encoding="utf-8"))["r"])
        except (OSError, ValueError, KeyError, TypeError):
            raise LoraError(
                400, f"Loading lora {name} failed: {path} has no adapter_config.json with 'r'"
            ) from None

    def _mounts(self) -> dict[str, str] | None:
        text = self._env.get(MOUNTS_ENV)
        if not text:
            return None
        try:
            mounts = json.loads(text)
        except ValueError:
            return None
        return {str(k): str(v) for k, v in mounts.items()} if isinstance(mounts, dict) else None

    def _hub(self, repo: str, mounts: dict[str, str]) -> Path | None:
        """The simulated fetch: the repository's snapshot in ``HF_HUB_CACHE``."""
        cache = self._env.get("HF_HUB_CACHE")
        root = resolve_mount(cache, mounts) if cache else None
        if root is None:
            return None
        snapshot = root / f"models--{repo.replace('/', '--')}" / "snapshots" / "simulated"
        config = snapshot / "adapter_config.json"
        if not config.is_file():
            snapshot.mkdir(parents=True, exist_ok=True)
            config.write_text(json.dumps({"r": SIMULATED_RANK, "simulated": True}))
        return snapshot

    def cards(self, base: str, created: int) -> list[dict[str, Any]]:
        return [
            model_card(a.name, created, root=a.path, parent=base, max_model_len=None)
            for a in self.loaded.values()
        ]

    def info_labels(self) -> dict[str, str]:
        """``vllm:lora_requests_info``'s labels: the adapters with requests running."""
        running = ",".join(sorted(n for n, count in self.running.items() if count > 0))
        return {
            "max_lora": str(self.limits.max_loras),
            "running_lora_adapters": running,
            "waiting_lora_adapters": "",
        }


def _true(value: str) -> bool:
    return value.strip().lower() in ("1", "true", "yes", "on")


def resolve_mount(path: str, mounts: Mapping[str, str]) -> Path | None:
    """A container path through the pod's mounts (longest mountPath first); None outside them."""
    for mount in sorted(mounts, key=len, reverse=True):
        if path == mount or path.startswith(mount.rstrip("/") + "/"):
            return Path(mounts[mount]) / path[len(mount) :].lstrip("/")
    return None
