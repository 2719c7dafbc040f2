"""Services and the PodDisruptionBudget of the serving pods."""

from __future__ import annotations

from typing import Any

from nemotron_operator.api import NemotronDeployment
from nemotron_operator.render import names as n
from nemotron_operator.render.engine import MASTER_PORT, SERVE_PORT
from nemotron_operator.render.names import Names

_HTTP = {"name": "http", "port": SERVE_PORT, "targetPort": "http", "protocol": "TCP"}


def build_service(names: Names) -> dict[str, Any]:
    """The OpenAI API endpoint: port 8000 on the leaders (workers run no API server)."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": names.service,
            "namespace": names.namespace,
            "labels": n.labels(names, n.COMPONENT_SERVING),
        },
        "spec": {
            "type": "ClusterIP",
            "selector": n.serving_selector(names, n.ROLE_LEADER),
            "ports": [dict(_HTTP)],
        },
    }


def build_headless_service(names: Names, multi_node: bool) -> dict[str, Any]:
    """Stable pod DNS names for the StatefulSets. Not-ready pods are published because a
    multi-node replica's workers must reach the leader while it is still loading."""
    ports = [dict(_HTTP)]
    if multi_node:
        ports.append({"name": "dist", "port": MASTER_PORT, "protocol": "TCP"})
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": names.headless_service,
            "namespace": names.namespace,
            "labels": n.labels(names, n.COMPONENT_SERVING),
        },
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": n.serving_selector(names),
            "ports": ports,
        },
    }


def needs_pod_disruption_budget(deployment: NemotronDeployment, nodes_per_replica: int) -> bool:
    """Only a deployment that can have more than one serving pod gets the budget: with one pod,
    ``maxUnavailable: 1`` allows every eviction a cluster without the budget would, so it was an
    object (and a write, and a watch event per change) that changed nothing. More than one: a
    replica on several nodes, ``spec.replicas`` > 1, or an autoscaler that may go above 1 (the
    budget is then kept at every scale, not created and deleted as it moves)."""
    spec = deployment.spec
    autoscaling = spec.autoscaling
    return (
        nodes_per_replica > 1
        or spec.replicas > 1
        or (autoscaling is not None and autoscaling.max_replicas > 1)
    )


def build_pod_disruption_budget(names: Names) -> dict[str, Any]:
    """One serving pod at a time may be evicted (a node drain proceeds; a second eviction waits
    for the first replacement). Pods that are not ready may always be evicted, so a crash-looping
    pod never blocks a drain."""
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {
            "name": names.pod_disruption_budget,
            "namespace": names.namespace,
            "labels": n.labels(names, n.COMPONENT_SERVING),
        },
        "spec": {
            "maxUnavailable": 1,
            "selector": {"matchLabels": n.serving_selector(names)},
            "unhealthyPodEvictionPolicy": "AlwaysAllow",
        },
    }
