"""A Prometheus Operator PodMonitor for vLLM's /metrics on the leaders."""

from __future__ import annotations

from typing import Any

from nemotron_operator.api import NemotronDeployment
from nemotron_operator.render import names as n
from nemotron_operator.render.names import Names

POD_MONITOR_API_VERSION = "monitoring.coreos.com/v1"


def build_pod_monitor(deployment: NemotronDeployment, names: Names) -> dict[str, Any] | None:
    """None unless ``spec.monitoring.podMonitor.enabled``. A PodMonitor rather than a
    ServiceMonitor: it scrapes every leader pod directly, without a metrics Service."""
    monitor = deployment.spec.monitoring.pod_monitor
    if not monitor.enabled:
        return None
    return {
        "apiVersion": POD_MONITOR_API_VERSION,
        "kind": "PodMonitor",
        "metadata": {
            "name": names.pod_monitor,
            "namespace": names.namespace,
            # The user's labels are how their Prometheus selects monitors; ours win on conflict.
            "labels": {
                **dict(sorted(monitor.labels.items())),
                **n.labels(names, n.COMPONENT_MONITORING),
            },
        },
        "spec": {
            "selector": {"matchLabels": n.serving_selector(names, n.ROLE_LEADER)},
            "podMetricsEndpoints": [
                {"port": "http", "path": "/metrics", "interval": monitor.interval}
            ],
        },
    }
