"""The objects ``hack/bench-runtime.py`` makes: per deployment, the child kinds the renderer makes
(StatefulSet, headless Service, PodDisruptionBudget, PVC) and one pod, all carrying the
operator's labels, then pod status changes as a start-up makes them. Nothing is scheduled or run:
the pods name a scheduler that does not exist and the PVC a StorageClass that does not exist, so
the only events are those of the objects written here (and kube-controller-manager's StatefulSet
and PodDisruptionBudget status updates)."""

from __future__ import annotations

from typing import Any

MANAGED = {"app.kubernetes.io/managed-by": "nemotron-operator"}
START_UP = ("PodScheduled", "Initialized", "ContainersReady", "Ready")


def _meta(name: str, namespace: str, instance: str) -> dict[str, Any]:
    labels = {**MANAGED, "app.kubernetes.io/instance": instance, "app.kubernetes.io/name": "b"}
    return {"name": name, "namespace": namespace, "labels": labels}


def objects(i: int, namespace: str) -> list[tuple[str, dict[str, Any]]]:
    """(collection path, body) of deployment ``i``'s children and pod."""
    inst = f"bench-{i}"
    selector = {"app.kubernetes.io/instance": inst}
    # The StatefulSet selects no pod written here: its controller would adopt and delete it.
    template = {**selector, "app.kubernetes.io/component": "template"}
    core = f"/api/v1/namespaces/{namespace}"
    return [
        (f"/apis/apps/v1/namespaces/{namespace}/statefulsets", {
            "metadata": _meta(inst, namespace, inst),
            "spec": {
                "replicas": 0, "serviceName": inst,
                "selector": {"matchLabels": template},
                "template": {
                    "metadata": {"labels": {**MANAGED, **template}},
                    "spec": {"containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0"}]},
                },
            },
        }),
        (f"{core}/services", {
            "metadata": _meta(inst, namespace, inst),
            "spec": {"clusterIP": "None", "selector": selector, "ports": [{"port": 8000}]},
        }),
        (f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets", {
            "metadata": _meta(inst, namespace, inst),
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": selector}},
        }),
        (f"{core}/persistentvolumeclaims", {
            "metadata": _meta(f"cache-{inst}", namespace, inst),
            "spec": {
                "accessModes": ["ReadWriteOnce"], "storageClassName": "bench-none",
                "resources": {"requests": {"storage": "1Gi"}},
            },
        }),
        (f"{core}/pods", {
            "metadata": _meta(f"{inst}-0", namespace, inst),
            "spec": {
                "schedulerName": "bench-none",
                "containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0"}],
            },
        }),
    ]  # fmt: skip


def status_step(step: int) -> dict[str, Any]:
    """The pod status after ``step`` + 1 of the start-up's conditions turned True."""
    now = "2026-12-04T00:00:00Z"
    conditions = [
        {"type": kind, "status": "True", "lastTransitionTime": now} for kind in START_UP[: step + 1]
    ]
    return {"status": {"conditions": conditions}}
