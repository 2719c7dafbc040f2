"""Files for pods whose containers are stand-ins (no process): the ``emptyDir`` and
``persistentVolumeClaim`` volumes as directories, and what the stand-in download step leaves in
them, so the stand-in vLLM finds a LoRA adapter where vLLM would, or does not find it.

- A volume is a directory: a claim's is ``<claims root>/<namespace>/<claim>`` (shared with the
  process pods, it outlives the pod), a ``hostPath``'s ``<nodes root>/<node>/<path>`` (the
  node's own disk: shared by its pods, outlives them), an ``emptyDir``'s lives under the pod's
  directory and goes with it. Other volume types are not materialized (nothing in them is
  read). Directories are created only when something is written, so an untouched volume costs
  nothing.
- A container sees its mounts as ``NEMOTRON_SIM_MOUNTS`` (``{mountPath: directory}``, the
  convention of the process pods, podfiles.py); the stand-in vLLM resolves adapter paths with it
  (nemotron_sim/vllm/lora.py).
- The download init container's ``hf download`` is only pretended (no network), but the
  adapters it lists (``ADAPTERS``: ``id revision directory`` per line, render/storage.py) are
  "fetched" as the real script fetches them: skipped when the directory's completion marker
  names the same ``id@revision``, else the directory gets a minimal PEFT ``adapter_config.json``
  (``r``, ``lora_alpha``, ``target_modules``; rank ``SIMULATED_RANK``, like the stand-in's own
  Hub fetch) and the marker. A test that wants another rank seeds the directory and the marker.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nemotron_sim.kubelet.events import log
from nemotron_sim.kubelet.podfiles import volume_mounts
from nemotron_sim.vllm.lora import SIMULATED_RANK, resolve_mount

ADAPTERS_ENV = "ADAPTERS"  # nemotron_operator.render.adapters.DOWNLOADS_ENV
COMPLETE_MARKER = ".nemotron-download-complete"  # the download script's marker file
# Nemotron-H's LoRA-capable projections (attention, Mamba, MLP), as a PEFT config names them.
TARGET_MODULES = (
    "q_proj", "k_proj", "v_proj", "o_proj", "in_proj", "out_proj", "up_proj", "down_proj",
)  # fmt: skip


@dataclass(frozen=True)
class StandInVolumes:
    """One pod's volume directories (name → directory) under its own ``root``."""

    root: Path
    volumes: Mapping[str, Path]

    def mounts(self, container: Mapping[str, Any]) -> dict[str, str]:
        """``mountPath`` → directory for one container (``subPath`` applied)."""
        return volume_mounts(self.volumes, container)

    def remove(self) -> None:
        """The pod is gone: its ``emptyDir`` volumes go with it (claims stay)."""
        shutil.rmtree(self.root, ignore_errors=True)


def stand_in_volumes(
    pod: Mapping[str, Any], pods_root: Path, claims_root: Path, nodes_root: Path | None = None
) -> StandInVolumes:
    """``nodes_root``: where the simulated nodes' filesystems live; a ``hostPath`` volume is
    ``<nodes_root>/<node>/<path>``, shared by the node's pods and outliving them."""
    md = pod.get("metadata") or {}
    namespace = str(md.get("namespace") or "default")
    root = pods_root / f"{namespace}_{md.get('name')}_{str(md.get('uid', ''))[:8]}"
    node = str((pod.get("spec") or {}).get("nodeName") or "")
    volumes: dict[str, Path] = {}
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        name = str(volume.get("name", ""))
        claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
        host_path = str((volume.get("hostPath") or {}).get("path") or "")
        if claim:
            volumes[name] = claims_root / namespace / str(claim)
        elif "emptyDir" in volume:
            volumes[name] = root / "volumes" / name
        elif host_path and node and nodes_root is not None:
            volumes[name] = nodes_root / node / host_path.lstrip("/")
    return StandInVolumes(root, volumes)


def fetch_adapters(env: Mapping[str, str], mounts: Mapping[str, str]) -> list[str]:
    """The download step's adapters (``ADAPTERS``), written through the container's mounts;
    returns the container paths written. A directory on no volume is skipped: the real script
    would fill the container's own filesystem, which the serving container never sees."""
    written = []
    for line in env.get(ADAPTERS_ENV, "").splitlines():
        words = line.split()
        if len(words) != 3:
            continue
        repo, revision, directory = words
        target = resolve_mount(directory, mounts)
        if target is None:
            log.info("stand-in download: %s is on no volume; the adapter is lost", directory)
            continue
        marker = target / COMPLETE_MARKER
        want = f"{repo}@{revision}"
        if marker.is_file() and marker.read_text(encoding="utf-8").strip() == want:
            continue
        target.mkdir(parents=True, exist_ok=True)
        config = {
            "peft_type": "LORA",
            "base_model_name_or_path": env.get("MODEL_ID", ""),
            "r": SIMULATED_RANK,
            "lora_alpha": 2 * SIMULATED_RANK,
            "target_modules": list(TARGET_MODULES),
            "simulated": True,
        }
        (target / "adapter_config.json").write_text(json.dumps(config), encoding="utf-8")
        marker.write_text(want + "\n", encoding="utf-8")
        written.append(directory)
    return written
