"""The serving pod template: the vLLM container, its volumes, probes, resources and placement.

Sizing rules (documented with their reasons in docs/rendering.md):
- startup probe budget = 600 s of engine warm-up + weight bytes ÷ 100 MB/s;
- /dev/shm = 4 GiB per GPU, at least 8 GiB, at most 64 GiB, memory-backed, explicit limit;
- CPU request = 2 + 2 per GPU; memory request = 16 GiB + 8 GiB per GPU + the /dev/shm size,
  plus, for weights streamed from an object store, the streamer's CPU buffer per GPU.
"""

from __future__ import annotations

import math
from typing import Any

from nemotron_operator.api import NemotronDeployment, Plan
from nemotron_operator.render import adapters, dra, object_store, storage
from nemotron_operator.render import names as n
from nemotron_operator.render.checks import GPU_PRODUCT_LABEL
from nemotron_operator.render.engine import (
    MODEL_MOUNT,
    NODE_RANK_ENV,
    PLUGIN_MOUNT,
    SERVE_PORT,
    Distributed,
    ServeSettings,
    serve_args,
)
from nemotron_operator.render.names import Names

GPU_RESOURCE = "nvidia.com/gpu"  # NVIDIA device plugin's extended resource (model-facts §5)
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"  # set by the StatefulSet controller (1.28+)
# The serving image runs as this non-root user (restricted Pod Security Standard).
RUN_AS_USER = 1000
SCRATCH_MOUNT = "/tmp"  # noqa: S108 - an emptyDir mounted there, not the image's /tmp
SHM_MOUNT = "/dev/shm"  # noqa: S108 - the memory-backed emptyDir NCCL and vLLM need
SCRATCH_SIZE = "32Gi"  # torch.compile, Triton and FlashInfer caches under $HOME

# Startup probe. vLLM binds its socket before loading but answers /health only once the engine
# is built (model-facts §4), so the budget must cover reading every weight byte plus warm-up
# (profiling, torch.compile, CUDA graphs). 100 MB/s is a network volume's baseline (an AWS gp3
# volume's default is 125 MiB/s); 600 s covers compile and graph capture of these models.
STARTUP_WARMUP_SECONDS = 600
LOAD_BYTES_PER_SECOND = 100_000_000
PROBE_PERIOD_SECONDS = 10

GIB = 1024**3
SHM_PER_GPU_GIB = 4
SHM_MIN_GIB = 8
SHM_MAX_GIB = 64
CPU_BASE, CPU_PER_GPU = 2, 2
MEMORY_BASE_GIB, MEMORY_PER_GPU_GIB = 16, 8


def sorted_keys(value: Any) -> Any:
    """``value`` with every mapping's keys in sorted order (list order is kept: it can matter)."""
    if isinstance(value, dict):
        return {key: sorted_keys(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [sorted_keys(item) for item in value]
    return value


def startup_budget_seconds(weight_bytes: int) -> int:
    return STARTUP_WARMUP_SECONDS + math.ceil(weight_bytes / LOAD_BYTES_PER_SECOND)


def shm_gib(gpus: int) -> int:
    return min(SHM_MAX_GIB, max(SHM_MIN_GIB, SHM_PER_GPU_GIB * gpus))


def resources(gpus: int, stream_buffers_bytes: int = 0) -> dict[str, Any]:
    """``stream_buffers_bytes``: the Run:ai streamer's CPU buffers of all the pod's workers
    (render/object_store.py ``memory_request_bytes``), rounded up to a GiB."""
    memory = MEMORY_BASE_GIB + MEMORY_PER_GPU_GIB * gpus + shm_gib(gpus)
    memory += math.ceil(stream_buffers_bytes / GIB)
    return {
        # No CPU or memory limit: loading streams the checkpoint through the page cache, and a
        # limit would turn a slow load into an OOM kill after a long download.
        "requests": {
            "cpu": str(CPU_BASE + CPU_PER_GPU * gpus),
            "memory": f"{memory}Gi",
            GPU_RESOURCE: str(gpus),
        },
        "limits": {GPU_RESOURCE: str(gpus)},
    }


def _http_probe(period: int, timeout: int, failures: int) -> dict[str, Any]:
    return {
        "httpGet": {"path": "/health", "port": "http"},
        "periodSeconds": period,
        "timeoutSeconds": timeout,
        "failureThreshold": failures,
    }


def probes(weight_bytes: int) -> dict[str, Any]:
    budget = startup_budget_seconds(weight_bytes)
    return {
        "startupProbe": _http_probe(
            PROBE_PERIOD_SECONDS, 5, math.ceil(budget / PROBE_PERIOD_SECONDS)
        ),
        "readinessProbe": _http_probe(PROBE_PERIOD_SECONDS, 5, 3),
        "livenessProbe": _http_probe(30, 10, 5),
    }


def container_security_context() -> dict[str, Any]:
    return {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "capabilities": {"drop": ["ALL"]},
    }


def pod_security_context() -> dict[str, Any]:
    return {
        "runAsNonRoot": True,
        "runAsUser": RUN_AS_USER,
        "runAsGroup": RUN_AS_USER,
        "fsGroup": RUN_AS_USER,
        # A recursive chown of a 250 GB cache at every start would delay loading by minutes.
        "fsGroupChangePolicy": "OnRootMismatch",
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def _env(
    deployment: NemotronDeployment, settings: ServeSettings, distributed: Distributed | None
) -> list[dict[str, Any]]:
    env: list[dict[str, Any]] = [{"name": "HOME", "value": SCRATCH_MOUNT}]
    lora = adapters.lora_env(deployment)
    if not lora:
        # Weights are local; the server needs no network access to the Hub.
        env.append({"name": "HF_HUB_OFFLINE", "value": "1"})
    env.append({"name": "VLLM_NO_USAGE_STATS", "value": "1"})
    env += object_store.container_env(deployment)
    env += lora
    if settings.long_context:
        # maxModelLen exceeds config.json's max_position_embeddings but not the trained context.
        env.append({"name": "VLLM_ALLOW_LONG_MAX_MODEL_LEN", "value": "1"})
    if distributed is not None:
        pod_ip = {"fieldRef": {"fieldPath": "status.podIP"}}
        env.append({"name": "VLLM_HOST_IP", "valueFrom": pod_ip})
    if distributed is not None and distributed.worker and distributed.rank_env == NODE_RANK_ENV:
        index = {"fieldRef": {"fieldPath": f"metadata.labels['{POD_INDEX_LABEL}']"}}
        env.append({"name": NODE_RANK_ENV, "valueFrom": index})
    return env


def _volumes(deployment: NemotronDeployment, names: Names, gpus: int) -> list[dict[str, Any]]:
    volumes: list[dict[str, Any]] = []
    weights = storage.weights_volume(deployment, names)
    if weights is not None:
        volumes.append(weights)
    volumes.append(
        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": f"{shm_gib(gpus)}Gi"}}
    )
    volumes.append({"name": "scratch", "emptyDir": {"sizeLimit": SCRATCH_SIZE}})
    plugin = deployment.spec.engine.reasoning_parser_plugin
    if plugin is not None:
        items = [{"key": plugin.file_name, "path": plugin.file_name}]
        config_map = {"name": plugin.config_map_name, "items": items}
        volumes.append({"name": "reasoning-parser", "configMap": config_map})
    volumes += adapters.lora_volumes(deployment)
    return volumes


def _mounts(deployment: NemotronDeployment) -> list[dict[str, Any]]:
    mounts: list[dict[str, Any]] = []
    if storage.has_weights_volume(deployment):
        mounts.append({"name": storage.WEIGHTS_VOLUME, "mountPath": MODEL_MOUNT, "readOnly": True})
    mounts += [
        {"name": "dshm", "mountPath": SHM_MOUNT},
        {"name": "scratch", "mountPath": SCRATCH_MOUNT},
    ]
    if deployment.spec.engine.reasoning_parser_plugin is not None:
        mounts.append({"name": "reasoning-parser", "mountPath": PLUGIN_MOUNT, "readOnly": True})
    mounts += adapters.lora_mounts(deployment)
    return mounts


def tolerations(deployment: NemotronDeployment) -> list[dict[str, Any]]:
    tolerations: list[dict[str, Any]] = [
        {"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}
    ]
    for toleration in deployment.spec.scheduling.tolerations:
        wire = toleration.to_wire()
        if wire not in tolerations:
            tolerations.append(wire)
    return tolerations


def build_vllm_container(
    deployment: NemotronDeployment,
    plan: Plan,
    settings: ServeSettings,
    *,
    gpus: int,
    weight_bytes: int,
    distributed: Distributed | None,
) -> dict[str, Any]:
    serves = distributed is None or not distributed.worker
    container: dict[str, Any] = {
        "name": "vllm",
        "image": deployment.spec.engine.image,
        "command": ["vllm", "serve"],
        "args": serve_args(deployment, plan, settings, distributed),
        "env": _env(deployment, settings, distributed),
        "resources": resources(
            gpus,
            object_store.memory_request_bytes(deployment, gpus=gpus, weight_bytes=weight_bytes),
        ),
        "securityContext": container_security_context(),
        "volumeMounts": _mounts(deployment),
    }
    cache = storage.compile_cache(deployment, plan)
    if cache is not None:  # every rank compiles: leaders and workers
        container["volumeMounts"].append(cache[0])
        container["env"].extend(cache[1])
    if serves:
        container["ports"] = [{"name": "http", "containerPort": SERVE_PORT, "protocol": "TCP"}]
        container.update(probes(weight_bytes))
    return container


def build_pod_template(
    deployment: NemotronDeployment,
    plan: Plan,
    settings: ServeSettings,
    names: Names,
    *,
    pod_labels: dict[str, str],
    gpus: int,
    weight_bytes: int,
    distributed: Distributed | None = None,
) -> dict[str, Any]:
    """The pod template without the config-hash annotation (added over the finished template)."""
    spec = deployment.spec
    image = spec.engine.image
    scratch = {"name": "scratch", "mountPath": SCRATCH_MOUNT}
    download = storage.build_download_container(
        deployment,
        image,
        settings.model_path,
        container_security_context(),
        scratch,
        # A shared cache is filled by the download Job before these pods start.
        base_weights=not storage.builds_shared_claim(deployment),
    )
    pod: dict[str, Any] = {
        "automountServiceAccountToken": False,
        # Service links would inject VLLM_PORT-style variables that vLLM reads as its own.
        "enableServiceLinks": False,
        "securityContext": pod_security_context(),
        "terminationGracePeriodSeconds": 60,
        # Sorted: the output must not depend on the order of keys in the user's YAML.
        "nodeSelector": dict(
            sorted({**spec.scheduling.node_selector, GPU_PRODUCT_LABEL: plan.gpu_product}.items())
        ),
        "tolerations": tolerations(deployment),
    }
    if spec.verification.enabled:
        # The pod takes traffic (Ready, in the Service's endpoints) only once the operator set
        # this condition: after the behavioural check (controller/pods/verifier.py).
        pod["readinessGates"] = [{"conditionType": n.VERIFIED_CONDITION}]
    init = [storage.build_cache_owner_container(deployment, RUN_AS_USER), download]
    if any(container is not None for container in init):
        pod["initContainers"] = [container for container in init if container is not None]
    pod["containers"] = [
        build_vllm_container(
            deployment,
            plan,
            settings,
            gpus=gpus,
            weight_bytes=weight_bytes,
            distributed=distributed,
        )
    ]
    pod["volumes"] = _volumes(deployment, names, gpus)
    if spec.scheduling.affinity is not None:
        pod["affinity"] = sorted_keys(spec.scheduling.affinity)
    if spec.scheduling.priority_class_name is not None:
        pod["priorityClassName"] = spec.scheduling.priority_class_name
    if dra.uses_dra(deployment):
        dra.claim_gpus(pod, dra.template_name(deployment, plan, names, gpus))
    return {
        "metadata": {"labels": pod_labels, "annotations": {n.MODEL: spec.model.id}},
        "spec": pod,
    }
