"""``spec``: the whole desired state of a NemotronDeployment."""

from __future__ import annotations

from pydantic import Field

from nemotron_operator.api.adapters import Adapters
from nemotron_operator.api.autoscaling import AutoscalingSpec
from nemotron_operator.api.base import ApiModel, cel, validations
from nemotron_operator.api.capacity import (
    CapacitySpec,
    MonitoringSpec,
    NodePoolSpec,
    SchedulingSpec,
    StorageSpec,
)
from nemotron_operator.api.engine import EngineSpec
from nemotron_operator.api.gateway import GatewaySpec
from nemotron_operator.api.model import ModelSpec
from nemotron_operator.api.multinode import MultiNodeSpec
from nemotron_operator.api.network import NetworkPolicySpec
from nemotron_operator.api.rollout import RolloutSpec

MAX_REPLICAS = 64


class VerificationSpec(ApiModel):
    """The behavioural check before a serving pod takes traffic (docs/controller.md)."""

    enabled: bool = Field(
        default=True,
        description="Send each serving pod a few small requests (a chat completion, and the "
        "reasoning split, a tool call and JSON output it promises) when vLLM reports ready, and "
        "admit it to traffic (a pod readiness gate) only when they pass. false: pods take "
        "traffic as soon as vLLM reports ready.",
    )


class NemotronDeploymentSpec(ApiModel):
    """Desired state: which model, how vLLM runs, how much capacity, where."""

    model_config = ApiModel.model_config | {
        "json_schema_extra": validations(
            cel(
                "!has(self.storage) || !has(self.model.source) || !has(self.model.source.pvc)",
                "spec.storage configures the download cache and does not apply when weights come "
                "from spec.model.source.pvc: remove spec.storage",
                ".storage",
            ),
            cel(
                "!has(self.storage) || !has(self.model.source) || "
                "!has(self.model.source.objectStore)",
                "spec.storage configures the download cache and does not apply when weights are "
                "streamed from spec.model.source.objectStore: remove spec.storage",
                ".storage",
            ),
            cel(
                "!has(self.capacity) || !has(self.capacity.gpu) || "
                "!has(self.capacity.gpu.count) || !has(self.capacity.parallelism) || "
                "!has(self.capacity.parallelism.tensor) || "
                "self.capacity.gpu.count % self.capacity.parallelism.tensor == 0",
                "capacity.gpu.count must be a multiple of capacity.parallelism.tensor",
                ".capacity.gpu.count",
            ),
            cel(
                "!has(self.capacity) || !has(self.capacity.gpu) || "
                "!has(self.capacity.gpu.count) || !has(self.capacity.parallelism) || "
                "!has(self.capacity.parallelism.tensor) || "
                "!has(self.capacity.parallelism.pipeline) || "
                "self.capacity.gpu.count == self.capacity.parallelism.tensor * "
                "self.capacity.parallelism.pipeline",
                "capacity.gpu.count must equal parallelism.tensor × parallelism.pipeline",
                ".capacity.gpu.count",
            ),
        )
    }

    model: ModelSpec = Field(description="The checkpoint to serve.")
    engine: EngineSpec = Field(default_factory=EngineSpec, description="vLLM engine settings.")
    adapters: Adapters = Field(
        default_factory=list,
        description="LoRA adapters served beside the base model, each under its own model name. "
        "With engine.lora.runtimeUpdates (the default) adding or removing one changes what "
        "running pods serve without restarting them.",
    )
    capacity: CapacitySpec = Field(
        default_factory=CapacitySpec, description="Concurrency target, GPUs and parallelism."
    )
    replicas: int = Field(
        default=1,
        ge=0,
        le=MAX_REPLICAS,
        description="Serving replicas (scale subresource). With spec.autoscaling the operator "
        "sets it between minReplicas and maxReplicas.",
    )
    autoscaling: AutoscalingSpec | None = Field(
        default=None,
        description="Scale replicas from scraped vLLM load (provider Operator), or through a "
        "KEDA ScaledObject the operator renders (provider KEDA). Leave unset when your own HPA "
        "or ScaledObject drives the scale subresource.",
    )
    rollout: RolloutSpec | None = Field(
        default=None,
        description="How a changed pod template rolls through the replicas: maxUnavailable, a "
        "canary, a progress deadline. Unset: the StatefulSets' defaults (one pod at a time).",
    )
    multi_node: MultiNodeSpec = Field(
        default_factory=MultiNodeSpec,
        description="How a replica that spans nodes runs: a LeaderWorkerSet or StatefulSets.",
    )
    node_pool: NodePoolSpec = Field(
        default_factory=NodePoolSpec, description="How GPU nodes are provided."
    )
    storage: StorageSpec | None = Field(
        default=None,
        description="Weight cache volume (Hugging Face sources). Default: one claim per pod, "
        "sized from the checkpoint.",
    )
    scheduling: SchedulingSpec = Field(
        default_factory=SchedulingSpec, description="Placement of serving pods."
    )
    monitoring: MonitoringSpec = Field(
        default_factory=MonitoringSpec, description="Prometheus Operator integration."
    )
    gateway: GatewaySpec = Field(
        default_factory=GatewaySpec,
        description="Gateway API Inference Extension: an InferencePool, its endpoint picker and "
        "optionally an HTTPRoute.",
    )
    verification: VerificationSpec = Field(
        default_factory=VerificationSpec,
        description="The behavioural check of each serving pod before it takes traffic.",
    )
    network_policy: NetworkPolicySpec = Field(
        default_factory=NetworkPolicySpec,
        description="NetworkPolicies for the serving pods: the vLLM API port only from the "
        "namespaces named, the multi-node ranks only among one replica's pods (opt-in; needs a "
        "CNI that enforces NetworkPolicy).",
    )
