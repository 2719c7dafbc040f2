"""One case per CEL rule of the CRD: a mutation of the full example that keeps the rule, one that
breaks it, and the field the refusal names. kube-apiserver is held to them in
tests/integration/admission/test_cel_rules.py, the CLI's offline reading of the rules in
tests/unit/test_cli_checks.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]


@dataclass(frozen=True)
class Case:
    rule_fragment: str  # identifies the rule in the CRD
    passing: Callable[[Obj], None]
    failing: Callable[[Obj], None]
    field: str
    message: str  # a fragment of the rule's message
    shown: str | None = None  # the value kube-apiserver prints for a scalar ``self``


def set_(path: str, value: Any) -> Callable[[Obj], None]:
    def mutate(obj: Obj) -> None:
        node = obj
        *parents, last = path.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value

    return mutate


def both(*mutations: Callable[[Obj], None]) -> Callable[[Obj], None]:
    def mutate(obj: Obj) -> None:
        for m in mutations:
            m(obj)

    return mutate


def drop(path: str) -> Callable[[Obj], None]:
    def mutate(obj: Obj) -> None:
        node = obj
        *parents, last = path.split(".")
        for part in parents:
            node = node[part]
        node.pop(last, None)

    return mutate


KARPENTER = {"nodeClassRef": {"name": "gpu"}}
PLUGIN = {"configMapName": "p", "fileName": "p.py", "parserName": "super_v3"}

S3 = {"uri": "s3://models/nvidia/nano", "credentialsSecretRef": {"name": "s3"}}

CASES = [
    Case(
        "(has(self.huggingFace) ? 1 : 0) + (has(self.pvc) ? 1 : 0)",
        both(drop("spec.storage"), set_("spec.model.source", {"pvc": {"claimName": "weights"}})),
        both(
            drop("spec.storage"),
            set_("spec.model.source", {"huggingFace": {}, "pvc": {"claimName": "weights"}}),
        ),
        "spec.model.source",
        "exactly one of spec.model.source.huggingFace, spec.model.source.pvc or "
        "spec.model.source.objectStore",
    ),
    Case(
        "(has(self.objectStore) ? 1 : 0) == 1",
        both(drop("spec.storage"), set_("spec.model.source", {"objectStore": S3})),
        both(
            drop("spec.storage"), set_("spec.model.source", {"huggingFace": {}, "objectStore": S3})
        ),
        "spec.model.source",
        "exactly one of spec.model.source.huggingFace, spec.model.source.pvc or "
        "spec.model.source.objectStore",
    ),
    Case(
        "!has(self.model.source.objectStore)",
        both(drop("spec.storage"), set_("spec.model.source", {"objectStore": S3})),
        set_("spec.model.source", {"objectStore": S3}),
        "spec.storage",
        "does not apply when weights are streamed from spec.model.source.objectStore",
    ),
    Case(
        "self.startsWith('s3://') || self.startsWith('gs://')",
        both(
            drop("spec.storage"),
            set_("spec.model.source", {"objectStore": S3 | {"uri": "gs://models/nano"}}),
        ),
        both(
            drop("spec.storage"),
            set_("spec.model.source", {"objectStore": S3 | {"uri": "http://models/nano"}}),
        ),
        "spec.model.source.objectStore.uri",
        "must be an s3:// or gs:// URI",
        shown='"http://models/nano"',
    ),
    Case(
        "self.method != 'mtp'",
        set_("spec.engine.speculativeDecoding", {"method": "mtp", "numSpeculativeTokens": 8}),
        set_("spec.engine.speculativeDecoding", {"method": "mtp", "numSpeculativeTokens": 9}),
        "spec.engine.speculativeDecoding.numSpeculativeTokens",
        "between 1 and 8 when method is mtp",
    ),
    Case(
        "self.method != 'none'",
        set_("spec.engine.speculativeDecoding", {"method": "none"}),
        set_("spec.engine.speculativeDecoding", {"method": "none", "numSpeculativeTokens": 2}),
        "spec.engine.speculativeDecoding.numSpeculativeTokens",
        "must be 0 or unset when method is none",
    ),
    Case(
        "!(has(self.reasoningParser) && has(self.reasoningParserPlugin))",
        both(
            drop("spec.engine.reasoningParser"), set_("spec.engine.reasoningParserPlugin", PLUGIN)
        ),
        set_("spec.engine.reasoningParserPlugin", PLUGIN),
        "spec.engine",
        "either reasoningParser",
    ),
    Case(
        "self > 0.0 && self < 1.0",
        set_("spec.engine.gpuMemoryUtilization", 0.95),
        set_("spec.engine.gpuMemoryUtilization", 1),
        "spec.engine.gpuMemoryUtilization",
        "greater than 0 and less than 1",
        shown="1",
    ),
    Case(
        "self in [1, 2, 4, 8, 16, 32, 64]",
        set_("spec.capacity.parallelism.tensor", 64),
        set_("spec.capacity.parallelism.tensor", 6),
        "spec.capacity.parallelism.tensor",
        "power of two no larger than 64",
        shown="6",
    ),
    Case(
        "self.provisioner != 'Karpenter' || has(self.karpenter)",
        set_("spec.nodePool", {"provisioner": "Karpenter", "karpenter": KARPENTER}),
        set_("spec.nodePool", {"provisioner": "Karpenter"}),
        "spec.nodePool.karpenter",
        "required when provisioner is Karpenter",
    ),
    Case(
        "!has(self.karpenter) || self.provisioner == 'Karpenter'",
        set_("spec.nodePool", {"provisioner": "None"}),
        set_("spec.nodePool", {"provisioner": "None", "karpenter": KARPENTER}),
        "spec.nodePool.provisioner",
        "set provisioner: Karpenter or remove nodePool.karpenter",
    ),
    Case(
        "!has(self.deviceClassName) || self.allocation == 'DRA'",
        set_("spec.capacity.gpu", {"allocation": "DRA", "deviceClassName": "h200.example.com"}),
        set_("spec.capacity.gpu", {"deviceClassName": "h200.example.com"}),
        "spec.capacity.gpu.deviceClassName",
        "only used with allocation: DRA",
    ),
    Case(
        "!has(self.httpRoute) || self.enabled",
        set_("spec.gateway", {"enabled": True, "httpRoute": {"parentRefs": [{"name": "gw"}]}}),
        set_("spec.gateway", {"httpRoute": {"parentRefs": [{"name": "gw"}]}}),
        "spec.gateway.httpRoute",
        "set enabled to true or remove httpRoute",
    ),
    Case(
        "!self.shared || self.accessModes.exists",
        set_("spec.storage.cache", {"shared": True, "accessModes": ["ReadWriteMany"]}),
        set_("spec.storage.cache", {"shared": True, "accessModes": ["ReadWriteOnce"]}),
        "spec.storage.cache.accessModes",
        "shared cache needs accessModes to include ReadWriteMany",
    ),
    Case(
        "!has(self.model.source.pvc)",
        both(drop("spec.storage"), set_("spec.model.source", {"pvc": {"claimName": "w"}})),
        set_("spec.model.source", {"pvc": {"claimName": "w"}}),
        "spec.storage",
        "does not apply when weights come from spec.model.source.pvc",
    ),
    Case(
        "self.capacity.gpu.count % self.capacity.parallelism.tensor == 0",
        both(set_("spec.capacity.gpu.count", 8), set_("spec.capacity.parallelism.tensor", 4)),
        both(set_("spec.capacity.gpu.count", 6), set_("spec.capacity.parallelism.tensor", 4)),
        "spec.capacity.gpu.count",
        "multiple of capacity.parallelism.tensor",
    ),
    Case(
        "self.capacity.gpu.count == self.capacity.parallelism.tensor *",
        set_("spec.capacity", {"gpu": {"count": 8}, "parallelism": {"tensor": 4, "pipeline": 2}}),
        set_("spec.capacity", {"gpu": {"count": 4}, "parallelism": {"tensor": 4, "pipeline": 2}}),
        "spec.capacity.gpu.count",
        "equal parallelism.tensor × parallelism.pipeline",
    ),
    Case(
        "self.minReplicas <= self.maxReplicas",
        set_("spec.autoscaling", {"minReplicas": 2, "maxReplicas": 2}),
        set_("spec.autoscaling", {"minReplicas": 3, "maxReplicas": 2}),
        "spec.autoscaling.minReplicas",
        "must not exceed autoscaling.maxReplicas",
    ),
    Case(
        "!has(self.idleSeconds) || self.minReplicas == 0",
        set_("spec.autoscaling", {"minReplicas": 0, "maxReplicas": 2, "idleSeconds": 600}),
        set_("spec.autoscaling", {"minReplicas": 1, "maxReplicas": 2, "idleSeconds": 600}),
        "spec.autoscaling.idleSeconds",
        "applies only with autoscaling.minReplicas: 0",
    ),
    Case(
        "self.metric != 'kvCacheUsage' || self.value <= 1.0",
        set_(
            "spec.autoscaling",
            {"maxReplicas": 4, "target": {"metric": "kvCacheUsage", "value": 0.8}},
        ),
        set_(
            "spec.autoscaling", {"maxReplicas": 4, "target": {"metric": "kvCacheUsage", "value": 4}}
        ),
        "spec.autoscaling.target.value",
        "is a fraction (0-1] for kvCacheUsage",
    ),
    Case(
        "!self.enabled || size(self.apiFromNamespaces) > 0",
        set_("spec.networkPolicy", {"enabled": True, "apiFromNamespaces": ["clients"]}),
        set_("spec.networkPolicy", {"enabled": True}),
        "spec.networkPolicy.apiFromNamespaces",
        "name at least one namespace whose pods may call the vLLM API",
    ),
    Case(
        "!has(self.maxCpuLoras) || self.maxCpuLoras >= self.maxLoras",
        set_("spec.engine.lora", {"maxLoras": 2, "maxCpuLoras": 2}),
        set_("spec.engine.lora", {"maxLoras": 4, "maxCpuLoras": 2}),
        "spec.engine.lora.maxCpuLoras",
        "maxCpuLoras must be at least maxLoras",
    ),
    Case(
        "has(self.pvc) != has(self.huggingFace)",
        set_("spec.adapters", [{"name": "a", "rank": 8, "source": {"pvc": {"claimName": "l"}}}]),
        set_(
            "spec.adapters",
            [
                {
                    "name": "a",
                    "rank": 8,
                    "source": {"pvc": {"claimName": "l"}, "huggingFace": {"id": "o/a"}},
                }
            ],
        ),
        "spec.adapters[0].source",
        "exactly one of spec.adapters[].source.huggingFace or source.pvc",
    ),
]
