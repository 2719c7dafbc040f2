"""``status``: what the operator observed, in Kubernetes conventions."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from nemotron_operator.api.base import ApiModel
from nemotron_operator.api.capacity import GpuProduct
from nemotron_operator.api.plan import Plan

Phase = Literal["Pending", "Infeasible", "WaitingForCapacity", "Deploying", "Ready", "Degraded"]
ConditionType = Literal["Feasible", "CapacityAvailable", "Progressing", "Ready", "Degraded"]
CamelReason = Annotated[
    str,
    StringConstraints(
        min_length=1, max_length=1024, pattern=r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
    ),
]
Timestamp = Annotated[str, StringConstraints(max_length=64)]


class Condition(ApiModel):
    """A metav1.Condition."""

    type: ConditionType = Field(description="Condition type.")
    status: Literal["True", "False", "Unknown"] = Field(description="True, False or Unknown.")
    reason: CamelReason = Field(description="One-word CamelCase reason.")
    message: Annotated[str, StringConstraints(max_length=32768)] = Field(
        default="", description="What happened and what to change."
    )
    last_transition_time: Timestamp = Field(description="When status last changed (RFC 3339).")
    observed_generation: int | None = Field(
        default=None, ge=0, description="metadata.generation the condition was computed for."
    )


class NodePoolStatus(ApiModel):
    """The GPU node pool the plan needs."""

    gpu_product: GpuProduct = Field(description="GPU product.")
    gpus_per_node: int = Field(ge=1, description="GPUs per node.")
    nodes: int = Field(ge=0, description="Nodes needed for all replicas.")
    provisioner: Literal["None", "Karpenter"] = Field(description="Who provides the nodes.")
    object_name: Annotated[str, StringConstraints(max_length=253)] | None = Field(
        default=None, description="Name of the NodePool object, when one is created."
    )


class Throughput(ApiModel):
    """Serving figures scraped from the ready pods' vLLM /metrics."""

    generation_tokens_per_second: float = Field(default=0.0, ge=0, description="Output tokens/s.")
    prompt_tokens_per_second: float = Field(default=0.0, ge=0, description="Prompt tokens/s.")
    requests_running: int = Field(default=0, ge=0, description="Requests running.")
    requests_waiting: int = Field(default=0, ge=0, description="Requests waiting.")
    kv_cache_usage: float = Field(
        default=0.0, ge=0, le=1, description="Mean KV cache usage (0-1) across pods."
    )
    mtp_acceptance_rate: float | None = Field(
        default=None, ge=0, le=1, description="Accepted / drafted MTP tokens."
    )
    ttft_seconds_p50: float | None = Field(default=None, ge=0, description="TTFT median.")
    ttft_seconds_p95: float | None = Field(default=None, ge=0, description="TTFT 95th percentile.")
    sampled_at: Timestamp | None = Field(default=None, description="When sampled (RFC 3339).")


class NemotronDeploymentStatus(ApiModel):
    """Observed state."""

    observed_generation: int | None = Field(
        default=None, ge=0, description="metadata.generation this status describes."
    )
    phase: Phase | None = Field(default=None, description="Summary for humans.")
    conditions: Annotated[list[Condition], Field(max_length=16)] = Field(
        default_factory=list,
        description="Feasible, CapacityAvailable, Progressing, Ready, Degraded.",
    )
    plan: Plan | None = Field(default=None, description="The sizing plan and its arithmetic.")
    node_pool: NodePoolStatus | None = Field(default=None, description="GPU node pool.")
    replicas: int | None = Field(default=None, ge=0, description="Desired replicas.")
    ready_replicas: int | None = Field(default=None, ge=0, description="Ready replicas.")
    ready: Annotated[str, StringConstraints(max_length=32)] | None = Field(
        default=None, description="ready/desired, for kubectl get."
    )
    selector: Annotated[str, StringConstraints(max_length=1024)] | None = Field(
        default=None, description="Label selector of serving pods (scale subresource)."
    )
    endpoint: Annotated[str, StringConstraints(max_length=512)] | None = Field(
        default=None, description="In-cluster OpenAI base URL."
    )
    throughput: Throughput | None = Field(default=None, description="Serving throughput.")
