"""The Gateway API Inference Extension objects: an InferencePool over the serving leaders, its
endpoint picker (EPP: Deployment, Service, ServiceAccount, Role, RoleBinding, ConfigMap) and an
optional HTTPRoute.

The picker's configuration is derived from the plan, the same source as vLLM's flags: the prefix
producer hashes prompts in blocks of ``plan.block_size_tokens`` (vLLM caches prefixes only in
whole blocks, and a hybrid model's block is raised to hold its Mamba state: thousands of tokens,
not vLLM's default 16), and is left out, with its scorer, when ``plan.prefix_caching`` is off.
The plugin types, parameters and flags are those of the llm-d router v0.9.0 (docs/gateway.md).
"""

from __future__ import annotations

import hashlib
from typing import Any

import yaml

from nemotron_operator.api import NemotronDeployment, Plan
from nemotron_operator.render import names as n
from nemotron_operator.render.engine import SERVE_PORT
from nemotron_operator.render.names import Names

INFERENCE_POOL_API_VERSION = "inference.networking.k8s.io/v1"
INFERENCE_POOL_GROUP = "inference.networking.k8s.io"
HTTP_ROUTE_API_VERSION = "gateway.networking.k8s.io/v1"
EPP_CONFIG_API_VERSION = "llm-d.ai/v1alpha1"
# The header Body-Based Routing sets from the request's "model" (the Inference Extension's
# multi-model guide matches routes on it).
MODEL_HEADER = "X-Gateway-Model-Name"
GRPC_PORT = 9002  # ext-proc
HEALTH_PORT = 9003  # gRPC health
METRICS_PORT = 9090
CONFIG_MOUNT = "/config"
CONFIG_FILE = "epp-config.yaml"
EXT_PROC_SERVICE = "envoy.service.ext_proc.v3.ExternalProcessor"
# vLLM's metric names (model-facts.md §6), which the queue and KV-cache scorers read.
VLLM_METRICS = {
    "name": "vllm",
    "queuedRequestsSpec": "vllm:num_requests_waiting",
    "runningRequestsSpec": "vllm:num_requests_running",
    "kvUsageSpec": "vllm:kv_cache_usage_perc",
    "cacheInfoSpec": "vllm:cache_config_info",
}
# Weights of upstream's default profile (llm-d router chart, default-plugins.yaml).
WEIGHTS = {"queue-scorer": 2, "kv-cache-utilization-scorer": 2, "prefix-cache-scorer": 3}


# What spec.gateway adds (the picker's Service is a Service among the serving ones).
GATEWAY_OBJECT_KINDS = frozenset(
    {"ServiceAccount", "Role", "RoleBinding", "ConfigMap", "Deployment"}
    | {"InferencePool", "HTTPRoute"}
)


def wanted(deployment: NemotronDeployment) -> bool:
    return deployment.spec.gateway.enabled


def picker_config(plan: Plan) -> dict[str, Any]:
    """The EndpointPickerConfig for this plan."""
    plugins: list[dict[str, Any]] = [
        {"type": "metrics-data-source", "parameters": {"scheme": "http", "path": "/metrics"}},
        {
            "type": "core-metrics-extractor",
            "parameters": {"defaultEngine": "vllm", "engineConfigs": [dict(VLLM_METRICS)]},
        },
        {"type": "queue-scorer"},
        {"type": "kv-cache-utilization-scorer"},
    ]
    scorers = ["queue-scorer", "kv-cache-utilization-scorer"]
    if plan.prefix_caching:
        plugins += [
            {
                "type": "approx-prefix-cache-producer",
                "parameters": {
                    # Not learned from vllm:cache_config_info: the plan knows the block size.
                    "autoTune": False,
                    "blockSizeTokens": plan.block_size_tokens,
                    "maxPrefixTokensToMatch": plan.max_model_len,
                    # Token blocks one replica's cache holds: its index need not remember more.
                    "lruCapacityPerServer": max(1, plan.kv_cache_tokens // plan.block_size_tokens),
                },
            },
            {"type": "prefix-cache-scorer"},
        ]
        scorers.append("prefix-cache-scorer")
    return {
        "apiVersion": EPP_CONFIG_API_VERSION,
        "kind": "EndpointPickerConfig",
        "plugins": plugins,
        "schedulingProfiles": [
            {
                "name": "default",
                "plugins": [{"pluginRef": s, "weight": WEIGHTS[s]} for s in scorers],
            }
        ],
    }


def build_gateway_objects(
    deployment: NemotronDeployment, plan: Plan, names: Names, served_name: str
) -> list[dict[str, Any]]:
    """Every gateway object, or none unless ``spec.gateway.enabled``."""
    if not wanted(deployment):
        return []
    config_text = yaml.safe_dump(picker_config(plan), sort_keys=False)
    objects = [
        _service_account(names),
        _role(names),
        _role_binding(names),
        _config_map(names, config_text),
        _service(names),
        _deployment(deployment, names, config_text),
        _inference_pool(deployment, names),
    ]
    route = deployment.spec.gateway.http_route
    if route is not None:
        objects.append(_http_route(deployment, names, served_name))
    return objects


def _meta(names: Names, name: str, component: str = n.COMPONENT_GATEWAY) -> dict[str, Any]:
    return {"name": name, "namespace": names.namespace, "labels": n.labels(names, component)}


def picker_selector(names: Names) -> dict[str, str]:
    """The picker's pods. Not the serving labels, and without managed-by: they are neither in
    the pool nor among the pods the operator follows."""
    return {n.NAME: "endpoint-picker", n.INSTANCE: names.instance}


def _service_account(names: Names) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": _meta(names, names.endpoint_picker, n.COMPONENT_ENDPOINT_PICKER),
        "automountServiceAccountToken": True,
    }


def _role(names: Names) -> dict[str, Any]:
    """What the picker reads, in this namespace only: the pods it scores, its pool, and the
    llm-d InferenceObjective and InferenceModelRewrite objects (its upstream Role)."""
    read = ["get", "list", "watch"]
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": _meta(names, names.endpoint_picker, n.COMPONENT_ENDPOINT_PICKER),
        "rules": [
            {"apiGroups": [""], "resources": ["pods"], "verbs": read},
            {"apiGroups": [INFERENCE_POOL_GROUP], "resources": ["inferencepools"], "verbs": read},
            {
                "apiGroups": ["llm-d.ai"],
                "resources": ["inferenceobjectives", "inferencemodelrewrites"],
                "verbs": read,
            },
        ],
    }


def _role_binding(names: Names) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": _meta(names, names.endpoint_picker, n.COMPONENT_ENDPOINT_PICKER),
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "Role",
            "name": names.endpoint_picker,
        },
        "subjects": [
            {
                "kind": "ServiceAccount",
                "name": names.endpoint_picker,
                "namespace": names.namespace,
            }
        ],
    }


def _config_map(names: Names, config_text: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(names, names.endpoint_picker, n.COMPONENT_ENDPOINT_PICKER),
        "data": {CONFIG_FILE: config_text},
    }


def _service(names: Names) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(names, names.endpoint_picker, n.COMPONENT_ENDPOINT_PICKER),
        "spec": {
            "type": "ClusterIP",
            "selector": picker_selector(names),
            "ports": [
                {
                    "name": "grpc-ext-proc",
                    "port": GRPC_PORT,
                    "targetPort": GRPC_PORT,
                    "protocol": "TCP",
                    "appProtocol": "kubernetes.io/h2c",
                },
                {
                    "name": "grpc-health",
                    "port": HEALTH_PORT,
                    "targetPort": HEALTH_PORT,
                    "protocol": "TCP",
                },
                {
                    "name": "http-metrics",
                    "port": METRICS_PORT,
                    "targetPort": METRICS_PORT,
                    "protocol": "TCP",
                },
            ],
        },
    }


def _grpc_probe(period: int) -> dict[str, Any]:
    return {
        "grpc": {"port": HEALTH_PORT, "service": EXT_PROC_SERVICE},
        "initialDelaySeconds": 5,
        "periodSeconds": period,
    }


def _deployment(deployment: NemotronDeployment, names: Names, config_text: str) -> dict[str, Any]:
    picker = deployment.spec.gateway.endpoint_picker
    config_hash = hashlib.sha256(config_text.encode()).hexdigest()[:16]
    args = [
        "--pool-name", names.inference_pool,
        "--pool-namespace", names.namespace,
        "--pool-group", INFERENCE_POOL_GROUP,
        "--config-file", f"{CONFIG_MOUNT}/{CONFIG_FILE}",
        "--grpc-port", str(GRPC_PORT),
        "--grpc-health-port", str(HEALTH_PORT),
        "--metrics-port", str(METRICS_PORT),
        # Cleartext gRPC (the Service's h2c); the metrics endpoint without TokenReviews, which a
        # namespaced Role cannot grant.
        "--secure-serving=false",
        "--metrics-endpoint-auth=false",
        "--zap-encoder", "json",
    ]  # fmt: skip
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(names, names.endpoint_picker, n.COMPONENT_ENDPOINT_PICKER),
        "spec": {
            # One picker: its prefix index lives in memory (upstream's recommendation), and a
            # replacement must not run beside the old one.
            "replicas": 1,
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": picker_selector(names)},
            "template": {
                "metadata": {
                    "labels": picker_selector(names),
                    # The picker reads its configuration once, at start: a new one restarts it.
                    "annotations": {n.CONFIG_HASH: config_hash},
                },
                "spec": {
                    "serviceAccountName": names.endpoint_picker,
                    "terminationGracePeriodSeconds": 130,
                    "securityContext": {
                        "runAsNonRoot": True,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "containers": [
                        {
                            "name": "epp",
                            "image": picker.image,
                            "imagePullPolicy": "IfNotPresent",
                            "args": args,
                            "ports": [
                                {"name": "grpc", "containerPort": GRPC_PORT, "protocol": "TCP"},
                                {
                                    "name": "grpc-health",
                                    "containerPort": HEALTH_PORT,
                                    "protocol": "TCP",
                                },
                                {
                                    "name": "metrics",
                                    "containerPort": METRICS_PORT,
                                    "protocol": "TCP",
                                },
                            ],
                            "livenessProbe": _grpc_probe(10),
                            "readinessProbe": _grpc_probe(5),
                            "resources": {
                                "requests": {"cpu": "500m", "memory": "1Gi"},
                                "limits": {"memory": "4Gi"},
                            },
                            "securityContext": {
                                "allowPrivilegeEscalation": False,
                                "runAsNonRoot": True,
                                "capabilities": {"drop": ["ALL"]},
                            },
                            "volumeMounts": [
                                {"name": "config", "mountPath": CONFIG_MOUNT, "readOnly": True}
                            ],
                        }
                    ],
                    "volumes": [{"name": "config", "configMap": {"name": names.endpoint_picker}}],
                },
            },
        },
    }


def _inference_pool(deployment: NemotronDeployment, names: Names) -> dict[str, Any]:
    picker = deployment.spec.gateway.endpoint_picker
    return {
        "apiVersion": INFERENCE_POOL_API_VERSION,
        "kind": "InferencePool",
        "metadata": _meta(names, names.inference_pool),
        "spec": {
            # The leaders: the one pod of each replica that runs vLLM's API server.
            "selector": {"matchLabels": n.serving_selector(names, n.ROLE_LEADER)},
            "targetPorts": [{"number": SERVE_PORT}],
            "endpointPickerRef": {
                "group": "",
                "kind": "Service",
                "name": names.endpoint_picker,
                "port": {"number": GRPC_PORT},
                "failureMode": picker.failure_mode,
            },
        },
    }


def _http_route(deployment: NemotronDeployment, names: Names, served_name: str) -> dict[str, Any]:
    route = deployment.spec.gateway.http_route
    assert route is not None
    parents = []
    for ref in route.parent_refs:
        parent: dict[str, Any] = {
            "group": "gateway.networking.k8s.io",
            "kind": "Gateway",
            "name": ref.name,
        }
        if ref.namespace is not None:
            parent["namespace"] = ref.namespace
        if ref.section_name is not None:
            parent["sectionName"] = ref.section_name
        parents.append(parent)
    return {
        "apiVersion": HTTP_ROUTE_API_VERSION,
        "kind": "HTTPRoute",
        "metadata": _meta(names, names.http_route),
        "spec": {
            "parentRefs": parents,
            "rules": [
                {
                    "matches": [
                        {
                            "path": {"type": "PathPrefix", "value": "/"},
                            "headers": [
                                {"type": "Exact", "name": MODEL_HEADER, "value": served_name}
                            ],
                        }
                    ],
                    "backendRefs": [
                        {
                            "group": INFERENCE_POOL_GROUP,
                            "kind": "InferencePool",
                            "name": names.inference_pool,
                            "weight": 1,
                        }
                    ],
                }
            ],
        },
    }
