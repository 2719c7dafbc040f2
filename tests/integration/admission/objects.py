"""The objects the admission suite sends: the examples, the CRD file, and three bases that
together reach every field of the schema, so every bound can be probed.

Each list holds at least one item and each map at least one key, somewhere among the bases;
``test_every_constraint_is_reachable`` fails listing any constraint no base reaches. The suite
stores the bases in kube-apiserver for real, so the probes start from objects as kube-apiserver
keeps them (defaults applied: defaulted fields are probed too).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from tests.status_objects import full_status

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"
CRD_FILE = ROOT / "crds" / "serving.nemotron.io_nemotrondeployments.yaml"
CRD_NAME = "nemotrondeployments.serving.nemotron.io"


def load_example(name: str) -> dict[str, Any]:
    obj: dict[str, Any] = yaml.safe_load((EXAMPLES / name).read_text())
    return obj


def crd_file() -> dict[str, Any]:
    crd: dict[str, Any] = yaml.safe_load(CRD_FILE.read_text())
    return crd


def open_api_schema(crd: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def raw_bases() -> list[dict[str, Any]]:
    """The bases as written (kube-apiserver applies the defaults when it stores them)."""
    full = load_example("super-vl-bf16-h200.yaml")
    full["metadata"]["name"] = "base-full"
    full["status"] = full_status()
    full["spec"]["scheduling"]["affinity"] = {"nodeAffinity": {}}
    # A node-local weight cache (its path's pattern and length are probed here).
    full["spec"]["storage"]["cache"]["nodeLocal"] = {"path": "/var/lib/nemotron/models"}
    karpenter = copy.deepcopy(full)
    karpenter["metadata"]["name"] = "base-karpenter"
    karpenter["spec"]["nodePool"] = {
        "provisioner": "Karpenter",
        "karpenter": {
            "nodeClassRef": {"name": "gpu", "group": "karpenter.k8s.aws", "kind": "EC2NodeClass"},
            "instanceTypes": ["p5e.48xlarge"],
            "capacityType": "on-demand",
        },
    }
    karpenter["spec"]["capacity"]["gpu"]["count"] = 4
    # An engine release named apart from the image's tag, and an exclusive placement of a
    # replica's group (their patterns and lengths are probed here).
    karpenter["spec"]["engine"]["version"] = "0.34.0"
    karpenter["spec"]["multiNode"] = {
        "backend": "LeaderWorkerSet",
        "exclusiveTopology": "nvidia.com/gpu.clique",
    }
    karpenter["spec"]["capacity"]["parallelism"] = {"tensor": 4, "pipeline": 1, "expert": True}
    del karpenter["spec"]["engine"]["reasoningParser"]
    karpenter["spec"]["engine"]["reasoningParserPlugin"] = {
        "configMapName": "parsers",
        "fileName": "super_v3_reasoning_parser.py",
        "parserName": "super_v3",
    }
    karpenter["status"]["nodePool"].update(provisioner="Karpenter", objectName="nd-super-vl")
    karpenter["spec"]["gateway"] = {
        "enabled": True,
        "endpointPicker": {"image": "registry.example/epp:v1", "failureMode": "FailOpen"},
        "httpRoute": {
            "parentRefs": [{"name": "gw", "namespace": "gateways", "sectionName": "http"}]
        },
    }
    custom = load_example("custom-architecture.yaml")
    custom["metadata"]["name"] = "base-custom"
    custom["spec"]["model"]["architecture"]["parameters"].update(mtp=1, vision=1)
    custom["spec"]["model"]["architecture"]["trainedContext"] = 16384
    custom["spec"]["model"]["architecture"].update(
        moeIntermediateSize=2688, moeSharedExpertIntermediateSize=5376, moeLatentSize=1024
    )
    # Reached by no example base: networkPolicy, a canary, scale to zero, an object-store source
    # (karpenter); DRA, LoRA and KEDA (custom).
    karpenter["spec"]["networkPolicy"] = {"enabled": True, "apiFromNamespaces": ["clients"]}
    karpenter["spec"]["rollout"]["canary"] = {"replicas": 1}
    karpenter["spec"]["autoscaling"].update(minReplicas=0, idleSeconds=900)
    # Weights streamed from a bucket (karpenter; full keeps the Hugging Face source and storage).
    del karpenter["spec"]["storage"]
    karpenter["spec"]["model"]["source"] = {
        "objectStore": {
            "uri": "s3://models/nvidia/NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-BF16",
            "credentialsSecretRef": {"name": "s3-credentials"},
            "endpoint": "https://minio.storage.svc:9000",
            "concurrency": 32,
        }
    }
    custom["spec"].setdefault("capacity", {})["gpu"] = {
        "allocation": "DRA",
        "deviceClassName": "gpu.nvidia.com",
    }
    custom["spec"]["engine"]["lora"] = {
        "maxLoras": 2,
        "maxLoraRank": 16,
        "maxCpuLoras": 4,
        "runtimeUpdates": True,
    }
    custom["spec"]["adapters"] = [
        {
            "name": "law",
            "rank": 8,
            "source": {
                "huggingFace": {
                    "id": "example-org/law-lora",
                    "revision": "v2",
                    "tokenSecretRef": {"name": "hf-token", "key": "token"},
                }
            },
        },
    ]
    # autoscaling.provider KEDA with every field of its trigger (custom).
    custom["spec"]["autoscaling"] = {
        "provider": "KEDA",
        "minReplicas": 0,
        "maxReplicas": 2,
        "idleSeconds": 600,
        "keda": {
            "prometheus": {
                "serverAddress": "http://prometheus.monitoring.svc:9090",
                "query": "sum(rate(gateway_requests_total[1m]))",
                "threshold": 4,
                "activationThreshold": 0.5,
            },
            "pollingIntervalSeconds": 15,
        },
    }
    # The probes look at a list's first item: each source kind leads one base.
    karpenter["spec"]["engine"]["lora"] = {"maxLoras": 1, "maxLoraRank": 16}
    karpenter["spec"]["adapters"] = [
        {"name": "sql", "rank": 16, "source": {"pvc": {"claimName": "adapters", "path": "/sql"}}}
    ]
    custom["spec"]["scheduling"] = {
        "tolerations": [
            {"key": "spot", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
        ]
    }
    return [full, karpenter, custom]
