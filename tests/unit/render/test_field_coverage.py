"""Nothing in the spec is silently dropped: changing any field changes the rendered objects, in the
place that field owns. Fields the planner consumes (capacity.*, model.architecture.*) reach the
manifest through the plan, so these cases run the real planner. A new API field without a case
here fails ``test_every_spec_field_has_a_case``; docs/rendering.md must list it too.
"""

from __future__ import annotations

import copy
import json
import re
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from nemotron_operator.api import NemotronDeploymentSpec
from nemotron_operator.api.errors import parse_deployment
from nemotron_operator.render import RenderOptions, names, render_all
from nemotron_operator.sizing import PlanningError, plan_deployment
from tests.unit.render.fakes import SUPER_VL, flag_value, of_kind

Objects = list[dict[str, Any]]
INFEASIBLE = "infeasible"


def merge(base: dict[str, Any], change: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in change.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


BASE: dict[str, Any] = {
    "model": {"id": SUPER_VL},
    "engine": {"maxModelLen": 262_144},
    "capacity": {"gpu": {"products": ["NVIDIA-H200"]}},
}
DENSE: dict[str, Any] = {  # examples/custom-architecture.yaml
    "model": {
        "id": "example-org/Nemotron-H-8B-Custom-Finetune",
        "architecture": {
            "layerPattern": "M-M-M-M*-M-M-M-M*-M-M-M-M*-M-M-M-M*-M-M-M-M-M-M-M-M-",
            "hiddenSize": 4096,
            "numAttentionHeads": 32,
            "numKeyValueHeads": 8,
            "headDim": 128,
            "mambaNumHeads": 128,
            "mambaHeadDim": 64,
            "ssmStateSize": 128,
            "mambaNGroups": 8,
            "convKernel": 4,
            "vocabSize": 131072,
            "maxPositionEmbeddings": 8192,
            "parameters": {"routedExperts": 0, "other": 8_100_000_000},
        },
    },
    "engine": {"maxModelLen": 8192, "reasoningParser": "none", "toolCallParser": "none"},
    "capacity": {"gpu": {"products": ["NVIDIA-H100-80GB-HBM3"]}},
}
MOE: dict[str, Any] = {  # Nemotron 3 Nano's shape (model-facts.md §1.3) as an explicit model
    "model": {
        "id": "example-org/Nano-Shaped-MoE",
        "architecture": {
            "layerPattern": "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME",
            "hiddenSize": 2688,
            "numAttentionHeads": 32,
            "numKeyValueHeads": 2,
            "headDim": 128,
            "mambaNumHeads": 64,
            "mambaHeadDim": 64,
            "ssmStateSize": 128,
            "mambaNGroups": 8,
            "nRoutedExperts": 128,
            "numExpertsPerTok": 6,
            "nSharedExperts": 1,
            "vocabSize": 131072,
            "maxPositionEmbeddings": 262_144,
            "parameters": {"routedExperts": 29_000_000_000, "other": 2_600_000_000},
        },
    },
    "engine": {"maxModelLen": 131_072, "reasoningParser": "none", "toolCallParser": "none"},
    "capacity": {"gpu": {"products": ["NVIDIA-H100-80GB-HBM3"]}, "parallelism": {"tensor": 2}},
}
MOE_SIZED = merge(  # with the expert widths of Nemotron 3 Nano (model-facts.md §1.3)
    MOE,
    {
        "model": {
            "architecture": {"moeIntermediateSize": 1856, "moeSharedExpertIntermediateSize": 3712}
        }
    },
)
PVC = {"model": {"source": {"pvc": {"claimName": "weights", "path": "/a"}}}}
TOKEN = {"model": {"source": {"huggingFace": {"tokenSecretRef": {"name": "hf", "key": "token"}}}}}
PLUGIN = {
    "engine": {
        "reasoningParserPlugin": {
            "configMapName": "parsers",
            "fileName": "super_v3.py",
            "parserName": "super_v3",
        }
    }
}
KARPENTER = {
    "nodePool": {
        "provisioner": "Karpenter",
        "karpenter": {"nodeClassRef": {"name": "gpu"}, "instanceTypes": ["p5e.48xlarge"]},
    }
}
MONITOR = {"monitoring": {"podMonitor": {"enabled": True}}}
GATEWAY = {"gateway": {"enabled": True, "httpRoute": {"parentRefs": [{"name": "gw"}]}}}
PROMETHEUS = {"serverAddress": "http://prom:9090", "query": "sum(demand)", "threshold": 4}
KEDA = {"autoscaling": {"provider": "KEDA", "maxReplicas": 4, "keda": {"prometheus": PROMETHEUS}}}
WITH_PVC, WITH_TOKEN, WITH_PLUGIN, WITH_KARPENTER, WITH_MONITOR, WITH_GATEWAY, WITH_KEDA = (
    merge(BASE, part) for part in (PVC, TOKEN, PLUGIN, KARPENTER, MONITOR, GATEWAY, KEDA)
)
TOLERATION = {"key": "dedicated", "operator": "Equal", "value": "a", "effect": "NoExecute"}
TOLERATIONS = {"scheduling": {"tolerations": [TOLERATION | {"tolerationSeconds": 60}]}}


def render_spec(spec: dict[str, Any], options: RenderOptions | None = None) -> Objects | str:
    deployment = parse_deployment(
        {
            "apiVersion": "serving.nemotron.io/v1alpha1",
            "kind": "NemotronDeployment",
            "metadata": {"name": "coverage", "namespace": "ai"},
            "spec": spec,
        }
    )
    try:
        result = plan_deployment(deployment.spec)
    except PlanningError:
        return INFEASIBLE
    return render_all(deployment, result, options)


# Where a field shows up in the objects.
def sts(objects: Objects) -> dict[str, Any]:
    found: dict[str, Any] = of_kind(objects, "StatefulSet")[0]
    return found


def pod(objects: Objects) -> dict[str, Any]:
    spec: dict[str, Any] = sts(objects)["spec"]["template"]["spec"]
    return spec


def args(objects: Objects) -> list[str]:
    found: list[str] = pod(objects)["containers"][0]["args"]
    return found


def flag(name: str) -> Callable[[Objects], Any]:
    return lambda objects: flag_value(args(objects), name)


def init_env(name: str) -> Callable[[Objects], Any]:
    return lambda o: next(e for e in pod(o)["initContainers"][0]["env"] if e["name"] == name)


def pod_field(name: str) -> Callable[[Objects], Any]:
    return lambda objects: pod(objects).get(name)


def kind(name: str) -> Callable[[Objects], Any]:
    return lambda objects: of_kind(objects, name)


def update_strategy(objects: Objects) -> Any:
    return sts(objects)["spec"]["updateStrategy"]


def lws_rollout(objects: Objects) -> Any:
    return of_kind(objects, "LeaderWorkerSet")[0]["spec"]["rolloutStrategy"]


def plan(objects: Objects) -> Any:
    return json.loads(sts(objects)["metadata"]["annotations"][names.PLAN])


def claim(objects: Objects) -> Any:
    return sts(objects)["spec"].get("volumeClaimTemplates")


def picker(objects: Objects) -> Any:
    return of_kind(objects, "Deployment")[0]["spec"]["template"]["spec"]["containers"][0]


def pool_ref(objects: Objects) -> Any:
    return of_kind(objects, "InferencePool")[0]["spec"]["endpointPickerRef"]


def route_parents(objects: Objects) -> Any:
    return of_kind(objects, "HTTPRoute")[0]["spec"]["parentRefs"]


def scaled_object(objects: Objects) -> Any:
    return of_kind(objects, "ScaledObject")[0]["spec"]


def trigger(objects: Objects) -> Any:
    return scaled_object(objects)["triggers"][0]["metadata"]


def keda_case(key: str, value: Any) -> Case:
    return Case({"autoscaling": {"keda": {"prometheus": {key: value}}}}, trigger, WITH_KEDA)


def node_pool(objects: Objects) -> Any:
    return of_kind(objects, "NodePool")[0]["spec"]["template"]["spec"]


# Two 8-GPU H100 nodes per replica (TP 8, PP 2), and the same on a LeaderWorkerSet.
MULTI_NODE = merge(
    BASE,
    {
        "capacity": {
            "gpu": {"products": ["NVIDIA-H100-80GB-HBM3"]},
            "parallelism": {"tensor": 8, "pipeline": 2},
        }
    },
)
ON_LWS = merge(MULTI_NODE, {"multiNode": {"backend": "LeaderWorkerSet"}})


@dataclass(frozen=True)
class Case:
    change: dict[str, Any]
    where: Callable[[Objects], Any]
    base: dict[str, Any] = field(default_factory=lambda: BASE)
    options: RenderOptions | None = None


def arch(base: dict[str, Any], key: str, value: Any) -> Case:
    return Case({"model": {"architecture": {key: value}}}, plan, base)


def params(base: dict[str, Any], key: str, value: int) -> Case:
    return Case({"model": {"architecture": {"parameters": {key: value}}}}, plan, base)


A = "spec.model.architecture."
CASES: dict[str, Case] = {
    "spec.model.id": Case({"model": {"id": "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8"}}, args),
    "spec.model.revision": Case({"model": {"revision": "v2"}}, init_env("MODEL_REVISION")),
    "spec.model.servedName": Case({"model": {"servedName": "chat"}}, flag("--served-model-name")),
    "spec.model.source.huggingFace.tokenSecretRef.name": Case(
        {"model": {"source": {"huggingFace": {"tokenSecretRef": {"name": "other"}}}}},
        init_env("HF_TOKEN"),
        WITH_TOKEN,
    ),
    "spec.model.source.huggingFace.tokenSecretRef.key": Case(
        {"model": {"source": {"huggingFace": {"tokenSecretRef": {"key": "other"}}}}},
        init_env("HF_TOKEN"),
        WITH_TOKEN,
    ),
    "spec.model.source.pvc.claimName": Case(
        {"model": {"source": {"pvc": {"claimName": "other"}}}}, pod_field("volumes"), WITH_PVC
    ),
    "spec.model.source.pvc.path": Case(
        {"model": {"source": {"pvc": {"path": "/b"}}}}, args, WITH_PVC
    ),
    A + "layerPattern": arch(
        DENSE, "layerPattern", "M-M-M-M*-M-M-M-M*-M-M-M-M*-M-M-M-M*-M-M-M-M*-M-M-M-"
    ),
    A + "hiddenSize": arch(DENSE, "hiddenSize", 5120),
    A + "numAttentionHeads": arch(DENSE, "numAttentionHeads", 64),
    A + "numKeyValueHeads": arch(DENSE, "numKeyValueHeads", 4),
    A + "headDim": arch(DENSE, "headDim", 64),
    A + "mambaNumHeads": arch(DENSE, "mambaNumHeads", 64),
    A + "mambaHeadDim": arch(DENSE, "mambaHeadDim", 32),
    A + "ssmStateSize": arch(DENSE, "ssmStateSize", 64),
    A + "mambaNGroups": arch(DENSE, "mambaNGroups", 4),
    A + "convKernel": arch(DENSE, "convKernel", 3),
    A + "nRoutedExperts": arch(MOE, "nRoutedExperts", 127),  # EP over 2 ranks no longer divides
    A + "numExpertsPerTok": arch(MOE, "numExpertsPerTok", 8),
    A + "nSharedExperts": arch(MOE_SIZED, "nSharedExperts", 2),
    A + "moeIntermediateSize": arch(MOE, "moeIntermediateSize", 1856),
    A + "moeSharedExpertIntermediateSize": arch(MOE_SIZED, "moeSharedExpertIntermediateSize", 7424),
    A + "moeLatentSize": arch(MOE_SIZED, "moeLatentSize", 1024),
    A + "intermediateSize": arch(DENSE, "intermediateSize", 65536),  # wider than Mamba layers
    A + "vocabSize": arch(DENSE, "vocabSize", 262_144),
    A + "maxPositionEmbeddings": arch(DENSE, "maxPositionEmbeddings", 4096),
    A + "trainedContext": Case(
        {"model": {"architecture": {"trainedContext": 16_384}}},
        lambda o: [e["name"] for e in pod(o)["containers"][0]["env"]],
        merge(DENSE, {"engine": {"maxModelLen": 16_384}}),
    ),
    A + "mtpLayers": arch(DENSE, "mtpLayers", 1),
    A + "vision": arch(DENSE, "vision", True),
    A + "precision": arch(DENSE, "precision", "FP8"),
    A + "trustRemoteCode": Case(
        {"model": {"architecture": {"trustRemoteCode": True}}},
        args,
        DENSE,
        RenderOptions(allow_remote_code=True),
    ),
    A + "parameters.routedExperts": params(MOE, "routedExperts", 40_000_000_000),
    A + "parameters.other": params(DENSE, "other", 9_000_000_000),
    A + "parameters.mtp": params(DENSE, "mtp", 100_000_000),
    A + "parameters.vision": params(DENSE, "vision", 500_000_000),
    "spec.engine.image": Case(
        {"engine": {"image": "registry.example/vllm:v0.31.0"}},
        lambda o: pod(o)["containers"][0]["image"],
    ),
    "spec.engine.version": Case(
        {"engine": {"version": "0.31.0"}},
        plan,  # the engine profile: block size, pool, engineVersion
        merge(BASE, {"engine": {"image": "registry.example/vllm@sha256:0123abcd"}}),
    ),
    "spec.engine.maxModelLen": Case({"engine": {"maxModelLen": 131_072}}, flag("--max-model-len")),
    "spec.engine.gpuMemoryUtilization": Case(
        {"engine": {"gpuMemoryUtilization": 0.85}}, flag("--gpu-memory-utilization")
    ),
    "spec.engine.kvCacheMemory": Case(
        {"engine": {"kvCacheMemory": "Planned"}}, flag("--kv-cache-memory-bytes")
    ),
    "spec.engine.maxNumSeqs": Case({"engine": {"maxNumSeqs": 32}}, flag("--max-num-seqs")),
    "spec.engine.maxNumBatchedTokens": Case(
        {"engine": {"maxNumBatchedTokens": 4096}}, flag("--max-num-batched-tokens")
    ),
    "spec.engine.kvCacheDtype": Case({"engine": {"kvCacheDtype": "fp8"}}, flag("--kv-cache-dtype")),
    "spec.engine.mambaSsmCacheDtype": Case(
        {"engine": {"mambaSsmCacheDtype": "float16"}}, flag("--mamba-ssm-cache-dtype")
    ),
    "spec.engine.speculativeDecoding.method": Case(
        {"engine": {"speculativeDecoding": {"method": "none"}}}, flag("--speculative-config")
    ),
    "spec.engine.speculativeDecoding.numSpeculativeTokens": Case(
        {"engine": {"speculativeDecoding": {"numSpeculativeTokens": 3}}},
        flag("--speculative-config"),
    ),
    "spec.engine.reasoningParser": Case(
        {"engine": {"reasoningParser": "deepseek_r1"}}, flag("--reasoning-parser")
    ),
    "spec.engine.reasoningParserPlugin.configMapName": Case(
        {"engine": {"reasoningParserPlugin": {"configMapName": "other"}}},
        pod_field("volumes"),
        WITH_PLUGIN,
    ),
    "spec.engine.reasoningParserPlugin.fileName": Case(
        {"engine": {"reasoningParserPlugin": {"fileName": "other.py"}}},
        flag("--reasoning-parser-plugin"),
        WITH_PLUGIN,
    ),
    "spec.engine.reasoningParserPlugin.parserName": Case(
        {"engine": {"reasoningParserPlugin": {"parserName": "other"}}},
        flag("--reasoning-parser"),
        WITH_PLUGIN,
    ),
    "spec.engine.toolCallParser": Case(
        {"engine": {"toolCallParser": "qwen3_xml"}}, flag("--tool-call-parser")
    ),
    "spec.engine.multimodal.images": Case(
        {"engine": {"multimodal": {"images": 1}}}, flag("--limit-mm-per-prompt")
    ),
    "spec.engine.multimodal.videos": Case(
        {"engine": {"multimodal": {"videos": 0}}}, flag("--limit-mm-per-prompt")
    ),
    "spec.engine.enableThinking": Case(
        {"engine": {"enableThinking": False}}, flag("--default-chat-template-kwargs")
    ),
    "spec.engine.enablePrefixCaching": Case({"engine": {"enablePrefixCaching": False}}, args),
    "spec.engine.extraArgs": Case({"engine": {"extraArgs": ["--async-scheduling"]}}, args),
    # maxNumSeqs 64 alone keeps TP 4 (TP 2 holds 1.47 requests, below the default 2); it is here
    # because TP 2's pool has 115 Mamba blocks, fewer than vLLM's default 1024 sequences.
    "spec.capacity.minConcurrency": Case(
        {"capacity": {"minConcurrency": 1}, "engine": {"maxNumSeqs": 64}},
        flag("--tensor-parallel-size"),
    ),
    "spec.capacity.gpu.products": Case(
        {"capacity": {"gpu": {"products": ["NVIDIA-B200"]}}}, pod_field("nodeSelector")
    ),
    "spec.capacity.gpu.count": Case(
        {"capacity": {"gpu": {"count": 8}}},
        lambda o: pod(o)["containers"][0]["resources"]["limits"],
    ),
    "spec.capacity.gpu.allocation": Case(
        {"capacity": {"gpu": {"allocation": "DRA"}}},
        lambda o: (pod(o).get("resourceClaims"), pod(o)["containers"][0]["resources"]),
    ),
    "spec.capacity.gpu.deviceClassName": Case(
        {"capacity": {"gpu": {"deviceClassName": "h200.example.com"}}},
        kind("ResourceClaimTemplate"),
        merge(BASE, {"capacity": {"gpu": {"allocation": "DRA"}}}),
    ),
    "spec.capacity.parallelism.tensor": Case(
        {"capacity": {"parallelism": {"tensor": 8}}}, flag("--tensor-parallel-size")
    ),
    "spec.capacity.parallelism.pipeline": Case(
        {"capacity": {"parallelism": {"pipeline": 2}}}, flag("--pipeline-parallel-size")
    ),
    "spec.capacity.parallelism.expert": Case(
        {"capacity": {"parallelism": {"expert": False}}}, args
    ),
    "spec.replicas": Case({"replicas": 3}, lambda o: sts(o)["spec"]["replicas"]),
    "spec.autoscaling.maxReplicas": Case(
        {"autoscaling": {"maxReplicas": 16}},
        lambda o: of_kind(o, "NodePool")[0]["spec"]["limits"],
        merge(WITH_KARPENTER, {"autoscaling": {"maxReplicas": 1}}),
    ),
    "spec.autoscaling.provider": Case(KEDA, kind("ScaledObject")),
    "spec.autoscaling.keda.prometheus.serverAddress": keda_case("serverAddress", "https://p:9"),
    "spec.autoscaling.keda.prometheus.query": keda_case("query", "sum(other)"),
    "spec.autoscaling.keda.prometheus.threshold": keda_case("threshold", 0.5),
    "spec.autoscaling.keda.prometheus.activationThreshold": keda_case("activationThreshold", 1),
    "spec.autoscaling.keda.pollingIntervalSeconds": Case(
        {"autoscaling": {"keda": {"pollingIntervalSeconds": 5}}}, scaled_object, WITH_KEDA
    ),
    "spec.nodePool.provisioner": Case(KARPENTER, kind("NodePool")),
    "spec.nodePool.karpenter.nodeClassRef.group": Case(
        {"nodePool": {"karpenter": {"nodeClassRef": {"group": "karpenter.example"}}}},
        node_pool,
        WITH_KARPENTER,
    ),
    "spec.nodePool.karpenter.nodeClassRef.kind": Case(
        {"nodePool": {"karpenter": {"nodeClassRef": {"kind": "OtherNodeClass"}}}},
        node_pool,
        WITH_KARPENTER,
    ),
    "spec.nodePool.karpenter.nodeClassRef.name": Case(
        {"nodePool": {"karpenter": {"nodeClassRef": {"name": "other"}}}}, node_pool, WITH_KARPENTER
    ),
    "spec.nodePool.karpenter.instanceTypes": Case(
        {"nodePool": {"karpenter": {"instanceTypes": ["p5en.48xlarge"]}}}, node_pool, WITH_KARPENTER
    ),
    "spec.nodePool.karpenter.capacityType": Case(
        {"nodePool": {"karpenter": {"capacityType": "spot"}}}, node_pool, WITH_KARPENTER
    ),
    "spec.storage.cache.size": Case({"storage": {"cache": {"size": "999Gi"}}}, claim),
    "spec.storage.cache.storageClassName": Case(
        {"storage": {"cache": {"storageClassName": "fast"}}}, claim
    ),
    "spec.storage.cache.accessModes": Case(
        {"storage": {"cache": {"accessModes": ["ReadWriteOncePod"]}}}, claim
    ),
    "spec.storage.cache.shared": Case(
        {"storage": {"cache": {"shared": True, "accessModes": ["ReadWriteMany"]}}},
        kind("PersistentVolumeClaim"),
    ),
    "spec.storage.cache.nodeLocal.path": Case(
        {"storage": {"cache": {"nodeLocal": {"path": "/mnt/nvme/models"}}}},
        pod_field("volumes"),
        merge(BASE, {"storage": {"cache": {"nodeLocal": {"path": "/var/lib/nemotron/models"}}}}),
    ),
    "spec.scheduling.nodeSelector": Case(
        {"scheduling": {"nodeSelector": {"zone": "a"}}}, pod_field("nodeSelector")
    ),
    "spec.scheduling.affinity": Case(
        {"scheduling": {"affinity": {"podAntiAffinity": {}}}}, pod_field("affinity")
    ),
    "spec.scheduling.priorityClassName": Case(
        {"scheduling": {"priorityClassName": "high"}}, pod_field("priorityClassName")
    ),
    "spec.monitoring.podMonitor.enabled": Case(MONITOR, kind("PodMonitor")),
    "spec.monitoring.podMonitor.interval": Case(
        {"monitoring": {"podMonitor": {"interval": "15s"}}}, kind("PodMonitor"), WITH_MONITOR
    ),
    "spec.monitoring.podMonitor.labels": Case(
        {"monitoring": {"podMonitor": {"labels": {"release": "prom"}}}},
        kind("PodMonitor"),
        WITH_MONITOR,
    ),
    "spec.gateway.enabled": Case({"gateway": {"enabled": True}}, kind("InferencePool")),
    "spec.networkPolicy.enabled": Case(
        {"networkPolicy": {"enabled": True, "apiFromNamespaces": ["clients"]}},
        kind("NetworkPolicy"),
    ),
    "spec.networkPolicy.apiFromNamespaces": Case(
        {"networkPolicy": {"apiFromNamespaces": ["clients", "gateway"]}},
        kind("NetworkPolicy"),
        merge(BASE, {"networkPolicy": {"enabled": True, "apiFromNamespaces": ["clients"]}}),
    ),
    "spec.gateway.endpointPicker.image": Case(
        {"gateway": {"endpointPicker": {"image": "registry.example/epp:v1"}}}, picker, WITH_GATEWAY
    ),
    "spec.gateway.endpointPicker.failureMode": Case(
        {"gateway": {"endpointPicker": {"failureMode": "FailOpen"}}}, pool_ref, WITH_GATEWAY
    ),
    "spec.gateway.httpRoute.parentRefs[].name": Case(
        {"gateway": {"httpRoute": {"parentRefs": [{"name": "other"}]}}},
        route_parents,
        WITH_GATEWAY,
    ),
    "spec.gateway.httpRoute.parentRefs[].namespace": Case(
        {"gateway": {"httpRoute": {"parentRefs": [{"name": "gw", "namespace": "gateways"}]}}},
        route_parents,
        WITH_GATEWAY,
    ),
    "spec.gateway.httpRoute.parentRefs[].sectionName": Case(
        {"gateway": {"httpRoute": {"parentRefs": [{"name": "gw", "sectionName": "http"}]}}},
        route_parents,
        WITH_GATEWAY,
    ),
    "spec.verification.enabled": Case(
        {"verification": {"enabled": False}}, pod_field("readinessGates")
    ),
    "spec.rollout.maxUnavailable": Case(
        {"rollout": {"maxUnavailable": 2}}, update_strategy, merge(BASE, {"rollout": {}})
    ),
    "spec.rollout.maxSurge": Case(
        {"rollout": {"maxSurge": 1}}, lws_rollout, merge(ON_LWS, {"rollout": {}})
    ),
    "spec.multiNode.backend": Case(
        {"multiNode": {"backend": "LeaderWorkerSet"}}, kind("LeaderWorkerSet"), MULTI_NODE
    ),
    "spec.multiNode.exclusiveTopology": Case(
        {"multiNode": {"exclusiveTopology": "nvidia.com/gpu.clique"}},
        lambda objects: of_kind(objects, "LeaderWorkerSet")[0]["metadata"]["annotations"],
        ON_LWS,
    ),
    "spec.rollout.canary.replicas": Case(
        {"rollout": {"canary": {"replicas": 1}}},
        update_strategy,
        merge(BASE, {"replicas": 3, "rollout": {}}),
    ),
}
for _key, _value in (
    ("key", "other"),
    ("operator", "Exists"),
    ("value", "b"),
    ("effect", "NoSchedule"),
    ("tolerationSeconds", 120),
):
    _changed = TOLERATIONS["scheduling"]["tolerations"][0] | {_key: _value}
    if _key == "operator":
        _changed.pop("value")
    CASES[f"spec.scheduling.tolerations[].{_key}"] = Case(
        {"scheduling": {"tolerations": [_changed]}},
        pod_field("tolerations"),
        merge(BASE, TOLERATIONS),
    )


# LoRA (render/adapters.py): limits are flags; with runtime loading the wanted adapters are the
# StatefulSet's adapters annotation (outside the pod template); their claims and token reach the
# pod; a pinned revision is fetched by the download step and loaded from its directory.
SQL_ADAPTER = {"name": "sql", "rank": 16, "source": {"huggingFace": {"id": "org/sql-lora"}}}
PVC_ADAPTER = {"name": "law", "rank": 8, "source": {"pvc": {"claimName": "loras", "path": "/l"}}}
TOKEN_ADAPTER = merge(
    SQL_ADAPTER, {"source": {"huggingFace": {"tokenSecretRef": {"name": "hf", "key": "token"}}}}
)
WITH_LORA = merge(BASE, {"engine": {"lora": {"maxLoras": 2, "maxLoraRank": 64}}})
WITH_ADAPTERS = merge(WITH_LORA, {"adapters": [SQL_ADAPTER]})


def adapters_annotation(objects: Objects) -> Any:
    return json.loads(sts(objects)["metadata"]["annotations"][names.ADAPTERS])


def vllm_env(name: str) -> Callable[[Objects], Any]:
    return lambda o: next((e for e in pod(o)["containers"][0]["env"] if e["name"] == name), None)


def adapter(change: dict[str, Any], where: Callable[[Objects], Any], base: Any) -> Case:
    return Case({"adapters": [merge(base, change)]}, where, merge(WITH_LORA, {"adapters": [base]}))


L = "spec.adapters[]."
CASES.update(
    {
        "spec.engine.lora.maxLoras": Case(
            {"engine": {"lora": {"maxLoras": 4}}}, flag("--max-loras"), WITH_LORA
        ),
        "spec.engine.lora.maxLoraRank": Case(
            {"engine": {"lora": {"maxLoraRank": 128}}}, flag("--max-lora-rank"), WITH_LORA
        ),
        "spec.engine.lora.maxCpuLoras": Case(
            {"engine": {"lora": {"maxCpuLoras": 8}}}, flag("--max-cpu-loras"), WITH_LORA
        ),
        "spec.engine.lora.runtimeUpdates": Case(
            {"engine": {"lora": {"runtimeUpdates": False}}}, args, WITH_ADAPTERS
        ),
        L + "name": adapter({"name": "other"}, adapters_annotation, SQL_ADAPTER),
        L + "rank": adapter({"rank": 32}, adapters_annotation, SQL_ADAPTER),
        L + "source.huggingFace.id": adapter(
            {"source": {"huggingFace": {"id": "org/other"}}}, adapters_annotation, SQL_ADAPTER
        ),
        # The download step fetches the pinned revision, and vLLM loads its directory.
        L + "source.huggingFace.revision": adapter(
            {"source": {"huggingFace": {"revision": "v3"}}},
            adapters_annotation,
            merge(SQL_ADAPTER, {"source": {"huggingFace": {"revision": "v2"}}}),
        ),
        L + "source.huggingFace.tokenSecretRef.name": adapter(
            {"source": {"huggingFace": {"tokenSecretRef": {"name": "other"}}}},
            vllm_env("HF_TOKEN"),
            TOKEN_ADAPTER,
        ),
        L + "source.huggingFace.tokenSecretRef.key": adapter(
            {"source": {"huggingFace": {"tokenSecretRef": {"key": "other"}}}},
            vllm_env("HF_TOKEN"),
            TOKEN_ADAPTER,
        ),
        L + "source.pvc.claimName": adapter(
            {"source": {"pvc": {"claimName": "other"}}}, pod_field("volumes"), PVC_ADAPTER
        ),
        L + "source.pvc.path": adapter(
            {"source": {"pvc": {"path": "/m"}}}, adapters_annotation, PVC_ADAPTER
        ),
    }
)

S3_SOURCE = {"uri": "s3://models/org/nano", "credentialsSecretRef": {"name": "s3"}}
WITH_OBJECT_STORE = merge(BASE, {"model": {"source": {"objectStore": S3_SOURCE}}})
OBJ = "spec.model.source.objectStore."
CASES.update(
    {
        OBJ + "uri": Case(
            {"model": {"source": {"objectStore": {"uri": "gs://other/nano"}}}},
            args,
            WITH_OBJECT_STORE,
        ),
        OBJ + "credentialsSecretRef.name": Case(
            {"model": {"source": {"objectStore": {"credentialsSecretRef": {"name": "other"}}}}},
            vllm_env("AWS_SECRET_ACCESS_KEY"),
            WITH_OBJECT_STORE,
        ),
        OBJ + "endpoint": Case(
            {"model": {"source": {"objectStore": {"endpoint": "https://minio.example:9000"}}}},
            vllm_env("AWS_ENDPOINT_URL"),
            WITH_OBJECT_STORE,
        ),
        OBJ + "concurrency": Case(
            {"model": {"source": {"objectStore": {"concurrency": 32}}}},
            flag("--model-loader-extra-config"),
            WITH_OBJECT_STORE,
        ),
    }
)


def spec_paths(model: type[BaseModel], prefix: str) -> list[str]:
    paths = []
    for name, info in model.model_fields.items():
        path = f"{prefix}.{info.alias or name}"
        nested, is_list = _nested_model(info.annotation)
        if nested is None:
            paths.append(path)
        else:
            paths += spec_paths(nested, f"{path}[]" if is_list else path)
    return paths


def _nested_model(annotation: Any) -> tuple[type[BaseModel] | None, bool]:
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _nested_model(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            found, is_list = _nested_model(arg)
            if found is not None:
                return found, is_list
        return None, False
    if origin is list:
        found, _ = _nested_model(typing.get_args(annotation)[0])
        return found, found is not None
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, False
    return None, False


SPEC_PATHS = spec_paths(NemotronDeploymentSpec, "spec")
# Read by the controller's autoscaler, not by the renderer: it sets spec.replicas, which renders;
# and the rollout's deadline, which the controller watches (controller/decide/rollout.py).
CONTROLLER_ONLY = {
    "spec.rollout.progressDeadlineSeconds": {"rollout": {"progressDeadlineSeconds": 60}},
    "spec.autoscaling.minReplicas": {"autoscaling": {"maxReplicas": 8, "minReplicas": 2}},
    "spec.autoscaling.target.metric": {
        "autoscaling": {"maxReplicas": 8, "target": {"metric": "kvCacheUsage", "value": 0.5}}
    },
    "spec.autoscaling.target.value": {"autoscaling": {"maxReplicas": 8, "target": {"value": 9}}},
    "spec.autoscaling.scaleUpStabilizationSeconds": {
        "autoscaling": {"maxReplicas": 8, "scaleUpStabilizationSeconds": 5}
    },
    "spec.autoscaling.scaleDownDelaySeconds": {
        "autoscaling": {"maxReplicas": 8, "scaleDownDelaySeconds": 5}
    },
    "spec.autoscaling.idleSeconds": {
        "autoscaling": {"maxReplicas": 8, "minReplicas": 0, "idleSeconds": 60}
    },
}


def test_every_spec_field_has_a_case() -> None:
    missing = [p for p in SPEC_PATHS if p not in CASES and p not in CONTROLLER_ONLY]
    assert missing == []
    covered = set(CASES) | set(CONTROLLER_ONLY)
    assert sorted(covered - set(SPEC_PATHS)) == []  # no case for a field that is gone


@pytest.mark.parametrize("path", sorted(CONTROLLER_ONLY))
def test_controller_only_field_leaves_the_manifest_alone(path: str) -> None:
    base = merge(WITH_KARPENTER, {"autoscaling": {"maxReplicas": 8}, "rollout": {}})
    assert render_spec(base) == render_spec(merge(base, CONTROLLER_ONLY[path]))


@pytest.mark.parametrize("path", sorted(CASES))
def test_field_reaches_the_manifest(path: str) -> None:
    case = CASES[path]
    before = render_spec(case.base, case.options)
    after = render_spec(merge(case.base, case.change), case.options)
    assert after != INFEASIBLE or before != INFEASIBLE, f"{path}: both layouts infeasible"

    def where(objects: Objects | str) -> Any:
        return INFEASIBLE if isinstance(objects, str) else case.where(objects)

    assert where(before) != where(after), f"{path} did not change {case.where}"


def test_docs_list_every_spec_field(repo_root: Path) -> None:
    text = (repo_root / "docs" / "rendering.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"`(spec\.[A-Za-z0-9.\[\]]+)`", text))
    assert [p for p in SPEC_PATHS if p not in documented] == []
