"""``status``: what the operator observed, in Kubernetes conventions."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from nemotron_operator.api.base import ApiModel
from nemotron_operator.api.capacity import GpuProduct
from nemotron_operator.api.plan import Plan

Phase = Literal[
    "Pending", "Infeasible", "WaitingForCapacity", "Deploying", "Ready", "Degraded", "Idle"
]
ConditionType = Literal[
    "Feasible",
    "CapacityAvailable",
    "Progressing",
    "Ready",
    "Degraded",
    "PlanAccurate",
    "InferenceGateway",
    "Verified",
    "Autoscaling",
    "MultiNodeBackend",
]
CamelReason = Annotated[
    str,
    StringConstraints(
        min_length=1, max_length=1024, pattern=r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
    ),
]
Timestamp = Annotated[str, StringConstraints(max_length=64)]
PodName = Annotated[str, StringConstraints(max_length=253)]
FigureName = Annotated[str, StringConstraints(max_length=32)]
MAX_LISTED_PODS = 16


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
    mtp_mean_accepted_length: float | None = Field(
        default=None,
        ge=1,
        description="Tokens per MTP verification step: 1 + accepted tokens / drafts.",
    )
    ttft_seconds_p50: float | None = Field(default=None, ge=0, description="TTFT median.")
    ttft_seconds_p95: float | None = Field(default=None, ge=0, description="TTFT 95th percentile.")
    sampled_at: Timestamp | None = Field(
        default=None,
        description="When these figures were measured (RFC 3339). Status is rewritten only when "
        "a figure changes meaningfully; the operator's /metrics has every scrape.",
    )
    pods_sampled: int = Field(default=0, ge=0, description="Serving pods that answered.")
    unresponsive_pods: Annotated[list[PodName], Field(max_length=MAX_LISTED_PODS)] = Field(
        default_factory=list,
        description="Ready serving pods whose /metrics did not answer (first few, sorted).",
    )


class PlanCheck(ApiModel):
    """vLLM's own KV cache allocation (vllm:cache_config_info) compared with status.plan."""

    kv_cache_blocks: int = Field(ge=0, description="num_gpu_blocks vLLM allocated.")
    kv_cache_tokens: int = Field(ge=0, description="KV cache capacity vLLM reports, tokens.")
    max_concurrency: float = Field(ge=0, description="Full-length sequences vLLM can hold.")
    block_size_tokens: int = Field(ge=0, description="Block size vLLM chose, tokens.")
    blocks_deviation: float = Field(description="Observed / planned blocks − 1 (−0.1 = 10 % less).")
    tokens_deviation: float = Field(description="Observed / planned KV tokens − 1.")
    concurrency_deviation: float = Field(description="Observed / planned max concurrency − 1.")
    derived: Annotated[list[FigureName], Field(max_length=4)] = Field(
        default_factory=list,
        description="Figures vLLM did not publish, derived from num_gpu_blocks and the plan.",
    )
    pod: PodName = Field(description="The pod whose figures are shown (the furthest below plan).")
    pods_checked: int = Field(ge=0, description="Pods whose cache config was read.")
    checked_at: Timestamp = Field(description="When last compared (RFC 3339).")


class ReplicaAdapters(ApiModel):
    """The LoRA adapters one ready serving pod serves, as its vLLM lists them (/v1/models)."""

    pod: PodName = Field(description="The serving pod (a replica's leader).")
    adapters: Annotated[
        list[Annotated[str, StringConstraints(max_length=63)]], Field(max_length=64)
    ] = Field(default_factory=list, description="Adapter names, sorted.")
    message: Annotated[str, StringConstraints(max_length=256)] | None = Field(
        default=None,
        description="Why the pod does not serve the wanted adapters (the last load or unload "
        "that failed; retried with a back-off).",
    )


StartupPhase = Literal["Scheduling", "Downloading", "Loading", "Verifying"]


class PredictedStartup(ApiModel):
    """The plan's start-up, from the weight bytes and the load path (docs/startup.md)."""

    download_seconds: int = Field(ge=0, description="Fetching the weights into the cache.")
    load_seconds: int = Field(ge=0, description="Reading the weights onto the GPUs.")
    compile_seconds: int = Field(ge=0, description="torch.compile and CUDA graph capture.")
    total_seconds: int = Field(ge=0, description="The whole start-up.")


class ObservedStartup(ApiModel):
    """The latest start of a serving pod that reached Ready, phase by phase."""

    pod: PodName = Field(description="The pod.")
    ready_at: Timestamp = Field(description="When it turned Ready (RFC 3339).")
    total_seconds: float = Field(ge=0, description="Pod creation to Ready.")
    scheduling_seconds: float | None = Field(default=None, ge=0, description="Creation to bound.")
    downloading_seconds: float | None = Field(
        default=None, ge=0, description="The download init container (about 0: weights present)."
    )
    loading_seconds: float | None = Field(
        default=None, ge=0, description="vLLM start to /health: load, compile, CUDA graphs."
    )
    verifying_seconds: float | None = Field(
        default=None, ge=0, description="The behavioural check before traffic."
    )


class StartupStatus(ApiModel):
    """Start-up of the serving pods: where the slowest one is, and what a start costs."""

    phase: StartupPhase | None = Field(
        default=None, description="Phase of the pod furthest behind; absent when all are Ready."
    )
    pod: PodName | None = Field(default=None, description="That pod.")
    since: Timestamp | None = Field(default=None, description="When it entered that phase.")
    predicted: PredictedStartup | None = Field(default=None, description="The plan's figure.")
    last_observed: ObservedStartup | None = Field(
        default=None, description="The latest observed start of a pod."
    )


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
    plan_check: PlanCheck | None = Field(
        default=None, description="The plan checked against what vLLM allocated."
    )
    adapters: Annotated[list[ReplicaAdapters], Field(max_length=64)] | None = Field(
        default=None,
        description="With LoRA on: the adapters each ready serving pod serves (docs/controller.md "
        '"Adapters").',
    )

    startup: StartupStatus | None = Field(
        default=None, description="Start-up phases and times (docs/startup.md)."
    )
