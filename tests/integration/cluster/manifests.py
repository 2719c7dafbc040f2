"""Small manifests and a bounded wait for the simulated-cluster tests."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def vllm_statefulset(
    name: str,
    *,
    namespace: str = "default",
    replicas: int = 1,
    gpus: int = 1,
    extra_args: tuple[str, ...] = (),
    product: str | None = None,
) -> dict[str, Any]:
    """A StatefulSet shaped like the operator's: init download, vllm serve, probes, cache PVC."""
    container = {
        "name": "vllm",
        "image": "vllm/vllm-openai:v0.31.0",
        "command": ["vllm", "serve", NANO, "--served-model-name", name, *extra_args],
        "ports": [{"name": "http", "containerPort": 8000}],
        "resources": {"limits": {"nvidia.com/gpu": str(gpus)}},
        "readinessProbe": {"httpGet": {"path": "/health", "port": "http"}},
        "volumeMounts": [{"name": "cache", "mountPath": "/cache"}],
    }
    pod_spec: dict[str, Any] = {
        "tolerations": [GPU_TOLERATION],
        "initContainers": [{"name": "download", "image": "hf", "command": ["hf", "download"]}],
        "containers": [container],
    }
    if product:
        pod_spec["nodeSelector"] = {"nvidia.com/gpu.product": product}
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "serviceName": f"{name}-headless",
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": pod_spec},
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "cache"},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "100Gi"}},
                    },
                }
            ],
        },
    }


def service(name: str, *, namespace: str = "default", headless: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "selector": {"app": name},
        "ports": [{"name": "http", "port": 8000, "targetPort": "http"}],
    }
    if headless:
        spec["clusterIP"] = "None"
    suffix = "-headless" if headless else ""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": f"{name}{suffix}", "namespace": namespace},
        "spec": spec,
    }


async def wait_for(
    check: Callable[[], Any], *, seconds: float = 10.0, every: float = 0.02, what: str = ""
) -> Any:
    """Poll ``check`` until it returns something truthy; fail after ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        await asyncio.sleep(every)
    raise AssertionError(f"timed out after {seconds}s waiting for {what or check}")
