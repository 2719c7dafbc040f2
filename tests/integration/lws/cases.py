"""What the LeaderWorkerSet tests share: the cluster they run on (the real LWS controller as an
add-on), the kinds they read, and the multi-node deployment the operator tests apply."""

from __future__ import annotations

from typing import Any

from nemotron_sim.kubeapi.resources import ResourceKey
from tests.integration.operator.helpers import NAMESPACE

LWS = ResourceKey("leaderworkerset.x-k8s.io", "v1", "leaderworkersets")
STATEFULSETS = ResourceKey("apps", "v1", "statefulsets")
# Two GPUs per node: Super VL in BF16 needs TP 2 x PP 2, two nodes per replica; six nodes hold
# two replicas and a surged third group.
CLUSTER = {"nodes": "NVIDIA-H200:2x6", "addons": ["lws"]}
NAME = "super"


def manifest(**spec: Any) -> dict[str, Any]:
    """A replica across two nodes (TP 2 × PP 2 of Super VL on H200s of two GPUs each)."""
    return {
        "apiVersion": "serving.nemotron.io/v1alpha1",
        "kind": "NemotronDeployment",
        "metadata": {"name": NAME, "namespace": NAMESPACE},
        "spec": {
            "model": {"id": "nvidia/NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-BF16"},
            "engine": {"maxModelLen": 32768},
            "capacity": {"parallelism": {"tensor": 2, "pipeline": 2}},
            **spec,
        },
    }
