"""Shared helpers of the operator's integration tests: manifests and status lookups."""

from __future__ import annotations

from typing import Any

import yaml

from nemotron_sim.kubeapi.resources import ResourceKey
from tests.kube import KubeHandle

NDS = ResourceKey("serving.nemotron.io", "v1alpha1", "nemotrondeployments")
STATEFULSETS = ResourceKey("apps", "v1", "statefulsets")
SERVICES = ResourceKey("", "v1", "services")
PODS = ResourceKey("", "v1", "pods")
PDBS = ResourceKey("policy", "v1", "poddisruptionbudgets")
CLAIMS = ResourceKey("", "v1", "persistentvolumeclaims")
EVENTS = ResourceKey("", "v1", "events")
SECRETS = ResourceKey("", "v1", "secrets")
NODE_POOLS = ResourceKey("karpenter.sh", "v1", "nodepools")
POD_MONITORS = ResourceKey("monitoring.coreos.com", "v1", "podmonitors")
NAMESPACE = "ai"
NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"


def deployment(name: str = "nano", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"model": {"id": NANO}, "engine": {"maxModelLen": 131072}}
    for key, value in spec.items():
        if isinstance(value, dict) and isinstance(body.get(key), dict):
            body[key] = {**body[key], **value}
        else:
            body[key] = value
    return {
        "apiVersion": "serving.nemotron.io/v1alpha1",
        "kind": "NemotronDeployment",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": body,
    }


def apply(cluster: KubeHandle, obj: dict[str, Any]) -> None:
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(obj))


def status(cluster: KubeHandle, name: str = "nano") -> dict[str, Any]:
    obj = cluster.get(NDS, NAMESPACE, name) or {}
    result: dict[str, Any] = obj.get("status") or {}
    return result


def condition(cluster: KubeHandle, type_: str, name: str = "nano") -> dict[str, Any]:
    for item in status(cluster, name).get("conditions") or []:
        if item["type"] == type_:
            return dict(item)
    return {}


def wait_ready(cluster: KubeHandle, name: str = "nano", seconds: float = 45.0) -> None:
    def ready() -> bool:
        found = status(cluster, name)
        return found.get("phase") == "Ready" and found.get("observedGeneration") == (
            (cluster.get(NDS, NAMESPACE, name) or {}).get("metadata", {}).get("generation")
        )

    cluster.wait_until(ready, seconds=seconds, what=f"{name} Ready")


def children(cluster: KubeHandle, key: ResourceKey, name: str = "nano") -> list[dict[str, Any]]:
    return cluster.list(key, NAMESPACE, f"app.kubernetes.io/instance={name}")


def restart_and_observe(cluster: KubeHandle, pod: dict[str, Any], cold: dict[str, Any]) -> Any:
    """Delete the serving pod (its StatefulSet makes it again) and wait until the operator has
    observed the second start: ``status.startup.lastObserved`` with another ``readyAt``."""
    cluster.kubectl("delete", "pod", "-n", NAMESPACE, pod["metadata"]["name"], "--wait=false")
    cluster.wait_until(
        lambda: (
            (status(cluster).get("startup") or {}).get("lastObserved", {}).get("readyAt")
            not in (None, cold["readyAt"])
        ),
        seconds=60,
        what="a second start observed",
    )
    return status(cluster)["startup"]["lastObserved"]
