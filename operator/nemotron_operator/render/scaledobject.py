"""A KEDA ScaledObject on the NemotronDeployment's scale subresource (autoscaling.provider KEDA).

KEDA (keda.sh/v1alpha1, CRD of github.com/kedacore/keda/v2 v2.20.2) scales a custom resource
through its scale subresource: ``scaleTargetRef`` names the NemotronDeployment itself, so KEDA's
HPA and its own 0↔1 step set ``spec.replicas`` exactly as ``kubectl scale`` would, and the
operator renders the StatefulSets from that as for any replica count. The operator's own
autoscaler stays off (``AutoscalingSpec.built_in``): one writer of ``spec.replicas``.

The spec's fields map one to one (docs/rendering.md): minReplicas → ``minReplicaCount`` (0: KEDA
scales to zero), maxReplicas → ``maxReplicaCount``, idleSeconds (with minReplicas 0) →
``cooldownPeriod`` and ``initialCooldownPeriod`` (a new deployment too is idle that long before
zero), the two stabilization windows → the HPA's ``behavior``, and the user's
Prometheus trigger → ``triggers[0]`` (metadata values are strings in KEDA's schema).
"""

from __future__ import annotations

from typing import Any

from nemotron_operator.api import API_VERSION, KIND, NemotronDeployment
from nemotron_operator.render import names as n
from nemotron_operator.render.names import Names

SCALED_OBJECT_API_VERSION = "keda.sh/v1alpha1"
# The trigger's name. The external metric KEDA's HPA reads is not named after it: KEDA names it
# s<index>-<scaler type>, here ``s0-prometheus`` (pkg/scalers/scaler.go
# ``GenerateMetricNameWithIndex``; the ScaledObject's status.externalMetricNames and the HPA's
# metric with KEDA v2.21.0's adapter, tests/integration/addons/test_keda_scale_to_zero.py).
TRIGGER_NAME = "demand"


def keda_number(value: float) -> str:
    """A number as KEDA's trigger metadata takes it (a string): 4.0 → "4", 0.5 → "0.5"."""
    return str(int(value)) if value == int(value) else repr(value)


def build_scaled_object(deployment: NemotronDeployment, names: Names) -> dict[str, Any] | None:
    """None unless ``spec.autoscaling.provider`` is KEDA."""
    autoscaling = deployment.spec.autoscaling
    if autoscaling is None or autoscaling.built_in or autoscaling.keda is None:
        return None
    keda = autoscaling.keda
    trigger = keda.prometheus
    metadata = {
        "serverAddress": trigger.server_address,
        "query": trigger.query,
        "threshold": keda_number(trigger.threshold),
    }
    if trigger.activation_threshold is not None:
        metadata["activationThreshold"] = keda_number(trigger.activation_threshold)
    spec: dict[str, Any] = {
        "scaleTargetRef": {"apiVersion": API_VERSION, "kind": KIND, "name": names.deployment},
        "minReplicaCount": autoscaling.min_replicas,
        "maxReplicaCount": autoscaling.max_replicas,
    }
    if keda.polling_interval_seconds is not None:
        spec["pollingInterval"] = keda.polling_interval_seconds
    if autoscaling.idle_window is not None:  # minReplicas 0: idle this long before zero
        spec["cooldownPeriod"] = autoscaling.idle_window
        # KEDA counts cooldownPeriod from the trigger's last activity; before the trigger was
        # ever active it waits initialCooldownPeriod from the ScaledObject's creation, default
        # 0: a new deployment would be scaled to zero within a second, before its first replica
        # loaded (seen with KEDA v2.21.0, pkg/scaling/executor/scale_scaledobjects.go).
        spec["initialCooldownPeriod"] = autoscaling.idle_window
    spec["advanced"] = {
        "horizontalPodAutoscalerConfig": {
            "behavior": {
                "scaleUp": {
                    "stabilizationWindowSeconds": autoscaling.scale_up_stabilization_seconds
                },
                "scaleDown": {"stabilizationWindowSeconds": autoscaling.scale_down_delay_seconds},
            }
        }
    }
    spec["triggers"] = [
        {
            "type": "prometheus",
            "name": TRIGGER_NAME,
            "metricType": "AverageValue",
            "metadata": metadata,
        }
    ]
    return {
        "apiVersion": SCALED_OBJECT_API_VERSION,
        "kind": "ScaledObject",
        "metadata": {
            "name": names.scaled_object,
            "namespace": names.namespace,
            "labels": n.labels(names, n.COMPONENT_AUTOSCALING),
        },
        "spec": spec,
    }
