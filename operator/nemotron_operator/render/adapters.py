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

Where a Hugging Face adapter is fetched (docs/controller.md "LoRA adapters"):

- by the pod's download step (``storage.build_download_container``), into
  ``/adapter-cache/fetched/<org>--<name>/<revision>``, when the adapter is in the pod template:
  every Hugging Face adapter without runtime updates, and each one with a ``revision`` with them
  (vLLM's own loader cannot fetch a revision, so a pinned adapter is part of the template and
  adding it rolls the pods). vLLM loads that directory (``--lora-modules``, or ``lora_path`` of
  ``/v1/load_lora_adapter``);
- by vLLM's own adapter loader at load time, into ``HF_HUB_CACHE``, for an adapter without a
  revision loaded at run time: it can be added to running pods, whose download step has run.

The adapter cache is a directory of the weight cache volume (an ``emptyDir`` when the weights
come from a read-only claim).
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nemotron_operator.api import NemotronDeployment
from nemotron_operator.api.adapters import DEFAULT_MAX_LORA_RANK, DEFAULT_MAX_LORAS, AdapterSpec
from nemotron_operator.api.errors import FieldError
from nemotron_operator.catalog import vllm_flags
from nemotron_operator.render.names import WEIGHTS_VOLUME

ADAPTER_CACHE_MOUNT = "/adapter-cache"
ADAPTER_CACHE_SUBPATH = ".adapter-cache"
ADAPTER_CACHE_VOLUME = "adapter-cache"
ADAPTER_CLAIM_MOUNT = "/adapters"
# The download step's adapters, one directory per adapter and revision; vLLM's own Hub cache
# (``models--<org>--<name>``) sits beside it in the same volume.
FETCHED_ROOT = f"{ADAPTER_CACHE_MOUNT}/fetched"
DEFAULT_REVISION = "main"
# The download container's list of adapters to fetch, one "id revision directory" line each.
DOWNLOADS_ENV = "ADAPTERS"
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


def fetched_directory(repo_id: str, revision: str) -> str:
    """Where the download step puts one adapter revision (no ``/`` left in either part, so no
    ``..`` path component can arise)."""
    return f"{FETCHED_ROOT}/{repo_id.replace('/', '--')}/{revision.replace('/', '--')}"


def fetched_by_download(deployment: NemotronDeployment, adapter: AdapterSpec) -> bool:
    """The download step fetches this adapter: a Hugging Face adapter in the pod template."""
    hf = adapter.source.hugging_face
    if hf is None:
        return False
    return hf.revision is not None or not runtime_updates(deployment)


def downloads(deployment: NemotronDeployment) -> tuple[tuple[str, str, str], ...]:
    """(id, revision, directory) of each adapter the download step fetches, in spec order."""
    found: list[tuple[str, str, str]] = []
    for adapter in deployment.spec.adapters:
        hf = adapter.source.hugging_face
        if hf is None or not fetched_by_download(deployment, adapter):
            continue
        revision = hf.revision or DEFAULT_REVISION
        entry = (hf.id, revision, fetched_directory(hf.id, revision))
        if entry not in found:
            found.append(entry)
    return tuple(found)


def adapter_path(deployment: NemotronDeployment, adapter: AdapterSpec) -> str:
    """The ``lora_path`` vLLM loads: the download step's directory, a Hugging Face id (vLLM's
    loader fetches it into ``HF_HUB_CACHE``), or the directory on the mounted claim."""
    source = adapter.source
    if source.pvc is not None:
        root = f"{ADAPTER_CLAIM_MOUNT}/{claim_volume_name(source.pvc.claim_name)}"
        return posixpath.normpath(posixpath.join(root, source.pvc.path.lstrip("/")))
    assert source.hugging_face is not None  # AdapterSource: exactly one
    hf = source.hugging_face
    if fetched_by_download(deployment, adapter):
        return fetched_directory(hf.id, hf.revision or DEFAULT_REVISION)
    return hf.id


def wanted_adapters(deployment: NemotronDeployment) -> tuple[WantedAdapter, ...]:
    """The adapters every ready serving pod should serve, in spec order."""
    return tuple(
        WantedAdapter(a.name, adapter_path(deployment, a), a.rank) for a in deployment.spec.adapters
    )


def needs_hub(deployment: NemotronDeployment) -> bool:
    """vLLM itself may fetch adapters from the Hub: with runtime updates an adapter without a
    revision can be added to running pods at any time."""
    return runtime_updates(deployment)


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


def token_ref(deployment: NemotronDeployment) -> dict[str, str] | None:
    for adapter in deployment.spec.adapters:
        hf = adapter.source.hugging_face
        if hf is not None and hf.token_secret_ref is not None:
            return {"name": hf.token_secret_ref.name, "key": hf.token_secret_ref.key}
    return None


def lora_env(deployment: NemotronDeployment) -> list[dict[str, Any]]:
    """The serving container's environment for LoRA. With runtime updates it replaces the
    default HF_HUB_OFFLINE=1 (vLLM's loader fetches adapters added without a revision); without,
    the download step fetched every adapter and the server stays offline."""
    if not lora_enabled(deployment):
        return []
    if not needs_hub(deployment):
        return [{"name": "HF_HUB_OFFLINE", "value": "1"}]
    env: list[dict[str, Any]] = [
        {"name": "HF_HUB_OFFLINE", "value": "0"},
        {"name": "HF_HUB_CACHE", "value": ADAPTER_CACHE_MOUNT},
        {"name": RUNTIME_UPDATES_ENV, "value": "True"},
    ]
    token = token_ref(deployment)
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


def adapter_cache_mount(deployment: NemotronDeployment) -> dict[str, Any]:
    """The adapter cache at ``/adapter-cache``, the same in the download and serving containers:
    a directory of the weight cache (adapters are cached like the base weights), or the
    ``emptyDir`` where there is no writable weight cache (a read-only weight claim, or weights
    streamed from an object store)."""
    if deployment.spec.model.source.hugging_face is None:
        return {"name": ADAPTER_CACHE_VOLUME, "mountPath": ADAPTER_CACHE_MOUNT}
    cache = {"name": WEIGHTS_VOLUME, "mountPath": ADAPTER_CACHE_MOUNT}
    return cache | {"subPath": ADAPTER_CACHE_SUBPATH}


def lora_mounts(deployment: NemotronDeployment) -> list[dict[str, Any]]:
    if not lora_enabled(deployment):
        return []
    mounts = [adapter_cache_mount(deployment)]
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


# vLLM's MoE LoRA layer under expert parallelism (vllm/lora/layers/fused_moe.py
# ``FusedMoEWithLoRA._ep_check`` and ``_verify_ep_fs``, since PR #40867): only this all2all
# backend (vLLM's default), and no --fully-sharded-loras. docs/sizing.md §11.
LORA_EP_ALL2ALL_BACKEND = "allgather_reducescatter"


def expert_parallel_errors(
    deployment: NemotronDeployment, expert_parallel: bool
) -> list[FieldError]:
    """What vLLM refuses at start with LoRA on a plan with expert parallelism: the extra
    arguments ``--fully-sharded-loras`` and an ``--all2all-backend`` other than
    ``allgather_reducescatter`` (the operator renders neither itself)."""
    if not expert_parallel or not lora_enabled(deployment):
        return []
    try:
        uses = vllm_flags.parse_args(deployment.spec.engine.extra_args)
    except vllm_flags.FlagError:
        return []  # reported by the extraArgs check
    errors = []
    undo = (
        "or turn expert parallelism off (spec.capacity.parallelism.expert: false), or serve "
        "without LoRA"
    )
    for use in uses:
        field = f"spec.engine.extraArgs[{use.index}]"
        if use.flag.name == "--fully-sharded-loras" and not use.negated:
            errors.append(
                FieldError(
                    field,
                    "--fully-sharded-loras with expert parallelism is refused by vLLM's MoE LoRA "
                    f"layer (both shard along the same GPUs): remove it, {undo}",
                )
            )
        if use.flag.name == "--all2all-backend" and use.value != LORA_EP_ALL2ALL_BACKEND:
            errors.append(
                FieldError(
                    field,
                    f"--all2all-backend {use.value} with LoRA and expert parallelism is refused "
                    f"by vLLM's MoE LoRA layer, which supports only {LORA_EP_ALL2ALL_BACKEND} "
                    f"(vLLM's default): remove it or set {LORA_EP_ALL2ALL_BACKEND}, {undo}",
                )
            )
    return errors


def fetched_in_pod(pod: Mapping[str, Any]) -> frozenset[str]:
    """The adapter directories a pod's own download step filled: the ``ADAPTERS`` lines of its
    download init container (a pod runs its containers only once its init containers succeeded).
    A pod of an older template lacks the adapters pinned since."""
    spec = pod.get("spec") or {}
    for container in spec.get("initContainers") or []:
        for variable in container.get("env") or []:
            if variable.get("name") == DOWNLOADS_ENV:
                lines = str(variable.get("value") or "").splitlines()
                return frozenset(line.split()[2] for line in lines if len(line.split()) == 3)
    return frozenset()


def loadable_in_pod(
    wanted: Sequence[WantedAdapter], pod: Mapping[str, Any]
) -> tuple[WantedAdapter, ...]:
    """The wanted adapters this pod can load: a directory of the download step only when its
    own download step filled it, so vLLM is never pointed at a directory nobody filled (the pod
    gets the adapter when the rollout replaces it)."""
    filled = fetched_in_pod(pod)
    return tuple(a for a in wanted if not a.path.startswith(f"{FETCHED_ROOT}/") or a.path in filled)
