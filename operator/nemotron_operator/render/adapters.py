"""LoRA adapters in the rendered objects: vLLM's LoRA flags, the adapter cache and claims, and the
wanted set of adapters (docs/sizing.md §LoRA, docs/controller.md "Adapters").

Two ways an adapter reaches a serving pod:

- ``engine.lora.runtimeUpdates`` (default): the pod template carries only what vLLM needs at start
  (``--enable-lora`` and its limits, ``VLLM_ALLOW_RUNTIME_LORA_UPDATING=True``, the adapter cache
  and the adapters' claims). The wanted set is the StatefulSet's ``serving.nemotron.io/adapters``
  annotation (outside the pod template, so changing it restarts nothing), and the controller loads
  and unloads adapters in each ready pod (``/v1/load_lora_adapter``, ``/v1/unload_lora_adapter``).
- ``runtimeUpdates: false``: the adapters are ``--lora-modules`` of the command line, so a change
  rolls the pods.

Hugging Face adapters are fetched by vLLM's own adapter loader into ``HF_HUB_CACHE``, a directory
of the weight cache volume (an ``emptyDir`` when the weights come from a read-only claim).
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass
from typing import Any

from nemotron_operator.api import NemotronDeployment
from nemotron_operator.api.adapters import DEFAULT_MAX_LORA_RANK, DEFAULT_MAX_LORAS, AdapterSpec
from nemotron_operator.api.errors import FieldError
from nemotron_operator.render.names import WEIGHTS_VOLUME

ADAPTER_CACHE_MOUNT = "/adapter-cache"
ADAPTER_CACHE_SUBPATH = ".adapter-cache"
ADAPTER_CACHE_VOLUME = "adapter-cache"
ADAPTER_CLAIM_MOUNT = "/adapters"
RUNTIME_UPDATES_ENV = "VLLM_ALLOW_RUNTIME_LORA_UPDATING"


@dataclass(frozen=True)
class WantedAdapter:
    """One adapter as vLLM loads it: its name, the ``lora_path`` and the rank."""

    name: str
    path: str
    rank: int

    def to_wire(self) -> dict[str, Any]:
        return {"name": self.name, "path": self.path, "rank": self.rank}


def lora_enabled(deployment: NemotronDeployment) -> bool:
    """LoRA is on when the engine sets limits or the spec lists adapters."""
    return deployment.spec.engine.lora is not None or bool(deployment.spec.adapters)


def runtime_updates(deployment: NemotronDeployment) -> bool:
    lora = deployment.spec.engine.lora
    return lora_enabled(deployment) and (lora is None or lora.runtime_updates)


def limits(deployment: NemotronDeployment) -> tuple[int, int, int]:
    """(max_loras, max_lora_rank, max_cpu_loras) as vLLM will run them."""
    lora = deployment.spec.engine.lora
    if lora is None:
        return DEFAULT_MAX_LORAS, DEFAULT_MAX_LORA_RANK, DEFAULT_MAX_LORAS
    cpu = lora.max_cpu_loras if lora.max_cpu_loras is not None else lora.max_loras
    return lora.max_loras, lora.max_lora_rank, cpu


def claim_volume_name(claim_name: str) -> str:
    return f"adapter-{claim_name}"[:63].rstrip("-.")


def adapter_path(adapter: AdapterSpec) -> str:
    """The ``lora_path`` vLLM loads: a Hugging Face id (vLLM's loader fetches it into
    ``HF_HUB_CACHE``), or the directory on the mounted claim."""
    source = adapter.source
    if source.pvc is not None:
        root = f"{ADAPTER_CLAIM_MOUNT}/{claim_volume_name(source.pvc.claim_name)}"
        return posixpath.normpath(posixpath.join(root, source.pvc.path.lstrip("/")))
    assert source.hugging_face is not None  # AdapterSource: exactly one
    return source.hugging_face.id


def wanted_adapters(deployment: NemotronDeployment) -> tuple[WantedAdapter, ...]:
    """The adapters every ready serving pod should serve, in spec order."""
    return tuple(WantedAdapter(a.name, adapter_path(a), a.rank) for a in deployment.spec.adapters)


def adapters_annotation(deployment: NemotronDeployment) -> str:
    """The StatefulSet annotation carrying the wanted set (compact JSON, spec order)."""
    wire = [a.to_wire() for a in wanted_adapters(deployment)]
    return json.dumps(wire, separators=(",", ":"), sort_keys=True)


def lora_args(deployment: NemotronDeployment, base_model_name: str) -> list[str]:
    """``--enable-lora`` and its limits; ``--lora-modules`` when adapters are not loaded at run
    time. Empty when LoRA is off."""
    if not lora_enabled(deployment):
        return []
    max_loras, max_rank, max_cpu = limits(deployment)
    args = [
        "--enable-lora",
        "--max-loras",
        str(max_loras),
        "--max-lora-rank",
        str(max_rank),
        "--max-cpu-loras",
        str(max_cpu),
    ]
    if not runtime_updates(deployment) and deployment.spec.adapters:
        args.append("--lora-modules")
        for adapter in wanted_adapters(deployment):
            # vLLM's JSON form (LoRAParserAction): name, path and the base model it adapts.
            module = {"base_model_name": base_model_name, "name": adapter.name}
            module["path"] = adapter.path
            args.append(json.dumps(module, separators=(",", ":"), sort_keys=True))
    return args


def _token_ref(deployment: NemotronDeployment) -> dict[str, str] | None:
    for adapter in deployment.spec.adapters:
        hf = adapter.source.hugging_face
        if hf is not None and hf.token_secret_ref is not None:
            return {"name": hf.token_secret_ref.name, "key": hf.token_secret_ref.key}
    return None


def lora_env(deployment: NemotronDeployment) -> list[dict[str, Any]]:
    """The serving container's environment for LoRA (replaces the default HF_HUB_OFFLINE=1: the
    adapter loader fetches Hugging Face adapters)."""
    if not lora_enabled(deployment):
        return []
    env: list[dict[str, Any]] = [
        {"name": "HF_HUB_OFFLINE", "value": "0"},
        {"name": "HF_HUB_CACHE", "value": ADAPTER_CACHE_MOUNT},
    ]
    if runtime_updates(deployment):
        env.append({"name": RUNTIME_UPDATES_ENV, "value": "True"})
    token = _token_ref(deployment)
    if token is not None:
        # The kubelet resolves the Secret; the operator never reads it (no Secret RBAC).
        env.append({"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": token}})
    return env


def _claims(deployment: NemotronDeployment) -> list[str]:
    claims: list[str] = []
    for adapter in deployment.spec.adapters:
        pvc = adapter.source.pvc
        if pvc is not None and pvc.claim_name not in claims:
            claims.append(pvc.claim_name)
    return claims


def lora_volumes(deployment: NemotronDeployment) -> list[dict[str, Any]]:
    """The adapter cache (when the weight cache is read-only) and the adapters' claims."""
    if not lora_enabled(deployment):
        return []
    volumes: list[dict[str, Any]] = []
    if deployment.spec.model.source.hugging_face is None:  # no writable weight cache
        volumes.append({"name": ADAPTER_CACHE_VOLUME, "emptyDir": {"sizeLimit": "20Gi"}})
    for claim in _claims(deployment):
        source = {"claimName": claim, "readOnly": True}
        volumes.append({"name": claim_volume_name(claim), "persistentVolumeClaim": source})
    return volumes


def lora_mounts(deployment: NemotronDeployment) -> list[dict[str, Any]]:
    if not lora_enabled(deployment):
        return []
    if deployment.spec.model.source.hugging_face is None:  # no writable weight cache
        mounts: list[dict[str, Any]] = [
            {"name": ADAPTER_CACHE_VOLUME, "mountPath": ADAPTER_CACHE_MOUNT}
        ]
    else:
        # A writable directory of the weight cache: adapters are cached like the base weights.
        cache = {"name": WEIGHTS_VOLUME, "mountPath": ADAPTER_CACHE_MOUNT}
        mounts = [cache | {"subPath": ADAPTER_CACHE_SUBPATH}]
    for claim in _claims(deployment):
        name = claim_volume_name(claim)
        mounts.append(
            {"name": name, "mountPath": f"{ADAPTER_CLAIM_MOUNT}/{name}", "readOnly": True}
        )
    return mounts


def adapter_errors(deployment: NemotronDeployment, served_name: str) -> list[FieldError]:
    """What vLLM would refuse, or the operator cannot render, about the adapters."""
    errors: list[FieldError] = []
    _, max_rank, _ = limits(deployment)
    seen: set[str] = set()
    tokens = set()
    for index, adapter in enumerate(deployment.spec.adapters):
        field = f"spec.adapters[{index}]"
        if adapter.name in seen:
            errors.append(FieldError(f"{field}.name", f"{adapter.name!r} is listed twice"))
        seen.add(adapter.name)
        if adapter.name == served_name:
            errors.append(
                FieldError(
                    f"{field}.name",
                    f"{adapter.name!r} is the base model's served name: name the adapter "
                    "differently",
                )
            )
        if adapter.rank > max_rank:
            errors.append(
                FieldError(
                    f"{field}.rank",
                    f"rank {adapter.rank} exceeds spec.engine.lora.maxLoraRank ({max_rank}); "
                    "vLLM refuses to load it: raise maxLoraRank to at least "
                    f"{adapter.rank}",
                )
            )
        hf = adapter.source.hugging_face
        if hf is not None and hf.token_secret_ref is not None:
            tokens.add((hf.token_secret_ref.name, hf.token_secret_ref.key))
            if len(tokens) > 1:
                errors.append(
                    FieldError(
                        f"{field}.source.huggingFace.tokenSecretRef",
                        "adapters share the serving container's HF_TOKEN: every "
                        "tokenSecretRef must name the same Secret key",
                    )
                )
    return errors
