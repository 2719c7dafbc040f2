"""Validation of rendered objects.

Built-in kinds: kubernetes-validate (the Kubernetes OpenAPI schemas, strict: unknown fields fail)
for the oldest and newest Kubernetes versions the operator supports. It has no schema for
CRD-backed kinds, so the Karpenter NodePool and the Prometheus Operator PodMonitor are checked
against the subsets of their CRD schemas below, written from karpenter.sh/v1
(kubernetes-sigs/karpenter ``pkg/apis/crds/karpenter.sh_nodepools.yaml``, v1.0+) and
monitoring.coreos.com/v1 (prometheus-operator ``PodMonitor``). They are closed
(``additionalProperties: false``) at every level the renderer writes, so a misspelled field fails.
"""

from __future__ import annotations

from typing import Any

import jsonschema  # type: ignore[import-untyped]
import kubernetes_validate

# Oldest: CRD validation rules (CEL) and StatefulSet start ordinals are on by default from 1.29;
# newest: the last schema kubernetes-validate ships.
KUBERNETES_VERSIONS = ("1.29.0", "1.37.0")
# capacity.gpu.allocation DRA: resource.k8s.io/v1 is GA, and served, from 1.34.
DRA_VERSIONS = ("1.34.0", "1.37.0")

_STRING_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
_QUANTITY = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE])?$"
_LABEL_KEY = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$"
)
_DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"


def _closed(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


_METADATA_CLUSTER = _closed(
    {
        "name": {"type": "string", "maxLength": 253, "pattern": _DNS_SUBDOMAIN},
        "labels": _STRING_MAP,
        "annotations": _STRING_MAP,
    },
    ("name",),
)
_METADATA_NAMESPACED = _closed(
    {
        **_METADATA_CLUSTER["properties"],
        "namespace": {"type": "string"},
        "ownerReferences": {"type": "array"},
    },
    ("name", "namespace"),
)

NODE_POOL_SCHEMA = _closed(
    {
        "apiVersion": {"const": "karpenter.sh/v1"},
        "kind": {"const": "NodePool"},
        "metadata": _METADATA_CLUSTER,
        "spec": _closed(
            {
                "template": _closed(
                    {
                        "metadata": _closed({"labels": _STRING_MAP, "annotations": _STRING_MAP}),
                        "spec": _closed(
                            {
                                "nodeClassRef": _closed(
                                    {
                                        "group": {"type": "string"},
                                        "kind": {"type": "string"},
                                        "name": {"type": "string"},
                                    },
                                    ("group", "kind", "name"),
                                ),
                                "requirements": {
                                    "type": "array",
                                    "maxItems": 100,
                                    "items": _closed(
                                        {
                                            "key": {
                                                "type": "string",
                                                "maxLength": 316,
                                                "pattern": _LABEL_KEY,
                                            },
                                            "operator": {
                                                "enum": [
                                                    "In",
                                                    "NotIn",
                                                    "Exists",
                                                    "DoesNotExist",
                                                    "Gt",
                                                    "Lt",
                                                ]
                                            },
                                            "values": {
                                                "type": "array",
                                                "items": {"type": "string"},
                                            },
                                            "minValues": {"type": "integer"},
                                        },
                                        ("key", "operator"),
                                    ),
                                },
                                "taints": {
                                    "type": "array",
                                    "items": _closed(
                                        {
                                            "key": {"type": "string"},
                                            "value": {"type": "string"},
                                            "effect": {
                                                "enum": [
                                                    "NoSchedule",
                                                    "PreferNoSchedule",
                                                    "NoExecute",
                                                ]
                                            },
                                        },
                                        ("key", "effect"),
                                    ),
                                },
                                "expireAfter": {"type": "string"},
                            },
                            ("nodeClassRef", "requirements"),
                        ),
                    },
                    ("spec",),
                ),
                "limits": {
                    "type": "object",
                    "additionalProperties": {"type": "string", "pattern": _QUANTITY},
                },
                "disruption": _closed(
                    {
                        "consolidationPolicy": {"enum": ["WhenEmpty", "WhenEmptyOrUnderutilized"]},
                        "consolidateAfter": {
                            "type": "string",
                            "pattern": r"^(([0-9]+(s|m|h))+|Never)$",
                        },
                    },
                    ("consolidateAfter",),
                ),
                "weight": {"type": "integer", "minimum": 1, "maximum": 100},
            },
            ("template",),
        ),
    },
    ("apiVersion", "kind", "metadata", "spec"),
)

_DURATION = (
    r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$"
)

POD_MONITOR_SCHEMA = _closed(
    {
        "apiVersion": {"const": "monitoring.coreos.com/v1"},
        "kind": {"const": "PodMonitor"},
        "metadata": _METADATA_NAMESPACED,
        "spec": _closed(
            {
                "selector": _closed(
                    {"matchLabels": _STRING_MAP, "matchExpressions": {"type": "array"}}
                ),
                "podMetricsEndpoints": {
                    "type": "array",
                    "minItems": 1,
                    "items": _closed(
                        {
                            "port": {"type": "string"},
                            "path": {"type": "string"},
                            "interval": {"type": "string", "pattern": _DURATION},
                        }
                    ),
                },
            },
            ("selector",),
        ),
    },
    ("apiVersion", "kind", "metadata", "spec"),
)

# Subsets of inference.networking.k8s.io_inferencepools.yaml (Gateway API Inference Extension
# v1.6.2) and gateway.networking.k8s.io_httproutes.yaml (Gateway API v1.6.3); the whole CRDs check
# the same objects in kube-apiserver (tests/integration/controlplane/test_thirdparty_crds.py).
_PORT = {"type": "integer", "minimum": 1, "maximum": 65535}
INFERENCE_POOL_SCHEMA = _closed(
    {
        "apiVersion": {"const": "inference.networking.k8s.io/v1"},
        "kind": {"const": "InferencePool"},
        "metadata": _METADATA_NAMESPACED,
        "spec": _closed(
            {
                "selector": _closed({"matchLabels": _STRING_MAP}, ("matchLabels",)),
                "targetPorts": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 8,
                    "items": _closed({"number": _PORT}, ("number",)),
                },
                "appProtocol": {"enum": ["http", "kubernetes.io/h2c"]},
                "endpointPickerRef": _closed(
                    {
                        "group": {"type": "string"},
                        "kind": {"type": "string"},
                        "name": {"type": "string", "minLength": 1, "maxLength": 253},
                        "port": _closed({"number": _PORT}, ("number",)),
                        "failureMode": {"enum": ["FailOpen", "FailClose"]},
                    },
                    ("name",),
                ),
            },
            ("selector", "targetPorts", "endpointPickerRef"),
        ),
    },
    ("apiVersion", "kind", "metadata", "spec"),
)
HTTP_ROUTE_SCHEMA = _closed(
    {
        "apiVersion": {"const": "gateway.networking.k8s.io/v1"},
        "kind": {"const": "HTTPRoute"},
        "metadata": _METADATA_NAMESPACED,
        "spec": _closed(
            {
                "parentRefs": {
                    "type": "array",
                    "maxItems": 32,
                    "items": _closed(
                        {
                            "group": {"type": "string"},
                            "kind": {"type": "string"},
                            "name": {"type": "string"},
                            "namespace": {"type": "string"},
                            "sectionName": {"type": "string"},
                        },
                        ("name",),
                    ),
                },
                "rules": {
                    "type": "array",
                    "items": _closed(
                        {
                            "matches": {"type": "array"},
                            "backendRefs": {
                                "type": "array",
                                "items": _closed(
                                    {
                                        "group": {"type": "string"},
                                        "kind": {"type": "string"},
                                        "name": {"type": "string"},
                                        "weight": {"type": "integer"},
                                    },
                                    ("name",),
                                ),
                            },
                        }
                    ),
                },
            }
        ),
    },
    ("apiVersion", "kind", "metadata", "spec"),
)

# A subset of keda.sh_scaledobjects.yaml (github.com/kedacore/keda/v2 v2.20.2, config/crd/bases);
# the whole CRD checks the same object in kube-apiserver
# (tests/integration/controlplane/test_thirdparty_crds.py).
_INT32 = {"type": "integer", "minimum": 0, "maximum": 2**31 - 1}
_WINDOW = _closed({"stabilizationWindowSeconds": _INT32})
SCALED_OBJECT_SCHEMA = _closed(
    {
        "apiVersion": {"const": "keda.sh/v1alpha1"},
        "kind": {"const": "ScaledObject"},
        "metadata": _METADATA_NAMESPACED,
        "spec": _closed(
            {
                "scaleTargetRef": _closed(
                    {
                        "apiVersion": {"type": "string"},
                        "kind": {"type": "string"},
                        "name": {"type": "string", "minLength": 1},
                    },
                    ("name",),
                ),
                "minReplicaCount": _INT32,
                "maxReplicaCount": {**_INT32, "minimum": 1},
                "pollingInterval": {**_INT32, "minimum": 1},
                "cooldownPeriod": _INT32,
                "initialCooldownPeriod": _INT32,
                "advanced": _closed(
                    {
                        "horizontalPodAutoscalerConfig": _closed(
                            {"behavior": _closed({"scaleUp": _WINDOW, "scaleDown": _WINDOW})}
                        )
                    }
                ),
                "triggers": {
                    "type": "array",
                    "minItems": 1,
                    "items": _closed(
                        {
                            "type": {"type": "string", "minLength": 1},
                            "name": {"type": "string"},
                            "metricType": {"enum": ["AverageValue", "Value", "Utilization"]},
                            "metadata": _STRING_MAP,
                        },
                        ("metadata", "type"),
                    ),
                },
            },
            ("scaleTargetRef", "triggers"),
        ),
    },
    ("apiVersion", "kind", "metadata", "spec"),
)

_INT_OR_STRING = {"anyOf": [{"type": "integer"}, {"type": "string"}]}
# leaderworkerset.x-k8s.io/v1 (sigs.k8s.io/lws v0.9.0, config/crd/bases/
# leaderworkerset.x-k8s.io_leaderworkersets.yaml); the pod templates and claim templates are
# checked as a StatefulSet's (validate_object), strictly, against the Kubernetes schemas.
LEADER_WORKER_SET_SCHEMA = _closed(
    {
        "apiVersion": {"const": "leaderworkerset.x-k8s.io/v1"},
        "kind": {"const": "LeaderWorkerSet"},
        "metadata": _METADATA_NAMESPACED,
        "spec": _closed(
            {
                "replicas": {"type": "integer", "minimum": 0},
                "startupPolicy": {"enum": ["LeaderReady", "LeaderCreated"]},
                "leaderWorkerTemplate": _closed(
                    {
                        "size": {"type": "integer", "minimum": 1},
                        "restartPolicy": {
                            "enum": [
                                "RecreateGroupOnPodRestart",
                                "RecreateGroupAfterStart",
                                "Default",
                                "None",
                            ]
                        },
                        "leaderTemplate": {"type": "object"},
                        "workerTemplate": {"type": "object"},
                        "volumeClaimTemplates": {"type": "array"},
                        "persistentVolumeClaimRetentionPolicy": _closed(
                            {
                                "whenDeleted": {"enum": ["Retain", "Delete"]},
                                "whenScaled": {"enum": ["Retain", "Delete"]},
                            }
                        ),
                    },
                    ("workerTemplate",),
                ),
                "rolloutStrategy": _closed(
                    {
                        "type": {"const": "RollingUpdate"},
                        "rollingUpdateConfiguration": _closed(
                            {
                                "partition": {"type": "integer", "minimum": 0},
                                "maxUnavailable": _INT_OR_STRING,
                                "maxSurge": _INT_OR_STRING,
                            }
                        ),
                    },
                    ("type",),
                ),
            },
            ("leaderWorkerTemplate",),
        ),
    },
    ("apiVersion", "kind", "metadata", "spec"),
)


def _leader_worker_set_templates(obj: dict[str, Any]) -> None:
    """Each pod template (with the claim templates) as a StatefulSet's, strictly."""
    group = obj["spec"]["leaderWorkerTemplate"]
    for key in ("leaderTemplate", "workerTemplate"):
        template = group[key]
        spec: dict[str, Any] = {
            "serviceName": obj["metadata"]["name"],
            "selector": {"matchLabels": template["metadata"]["labels"]},
            "template": template,
        }
        for field in ("volumeClaimTemplates", "persistentVolumeClaimRetentionPolicy"):
            if field in group:
                spec[field] = group[field]
        validate_object(
            {
                "apiVersion": "apps/v1",
                "kind": "StatefulSet",
                "metadata": {"name": obj["metadata"]["name"], "namespace": "x"},
                "spec": spec,
            }
        )


CRD_SCHEMAS = {
    ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"): LEADER_WORKER_SET_SCHEMA,
    ("inference.networking.k8s.io/v1", "InferencePool"): INFERENCE_POOL_SCHEMA,
    ("gateway.networking.k8s.io/v1", "HTTPRoute"): HTTP_ROUTE_SCHEMA,
    ("karpenter.sh/v1", "NodePool"): NODE_POOL_SCHEMA,
    ("monitoring.coreos.com/v1", "PodMonitor"): POD_MONITOR_SCHEMA,
    ("keda.sh/v1alpha1", "ScaledObject"): SCALED_OBJECT_SCHEMA,
}


def validate_object(obj: dict[str, Any]) -> None:
    """Raise when ``obj`` is not a valid object of its kind."""
    schema = CRD_SCHEMAS.get((obj.get("apiVersion", ""), obj.get("kind", "")))
    if schema is not None:
        jsonschema.validate(obj, schema)
        if obj["kind"] == "LeaderWorkerSet":
            _leader_worker_set_templates(obj)
        return
    dra = obj.get("apiVersion") == "resource.k8s.io/v1" or _has_claims(obj)
    for version in DRA_VERSIONS if dra else KUBERNETES_VERSIONS:
        kubernetes_validate.validate(obj, version, strict=True)


def _has_claims(obj: dict[str, Any]) -> bool:
    """A workload whose pods claim DRA devices (a cluster without DRA would not run it)."""
    template = ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}
    return "resourceClaims" in template
