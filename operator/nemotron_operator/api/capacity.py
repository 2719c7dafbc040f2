"""``spec.capacity``, ``spec.nodePool``, ``spec.storage``, ``spec.scheduling``, ``spec.monitoring``:
where and on what the deployment runs."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints

from nemotron_operator.api.base import (
    ApiModel,
    LabelKey,
    Labels,
    LabelValue,
    Quantity,
    ResourceName,
    cel,
    validations,
)

# Full-length sequences (at maxModelLen) a replica must hold at once. 1 would accept a replica that
# one long request fills; 2 is the largest value at which NVIDIA's documented minimum layouts for
# Nemotron 3 Super (BF16 4×H100, FP8 2×H100, NVFP4 1×B200) still pass at the default 262,144-token
# context — FP8 on 2×H100 holds about 3.4 (see docs/sizing.md).
DEFAULT_MIN_CONCURRENCY = 2

# GPU Feature Discovery product name (nvidia.com/gpu.product), e.g. NVIDIA-H200.
GpuProduct = Annotated[
    str, StringConstraints(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
]


GpuAllocation = Literal["DevicePlugin", "DRA"]
DEFAULT_DEVICE_CLASS = "gpu.nvidia.com"  # the DeviceClass NVIDIA's DRA driver chart installs


class GpuSelection(ApiModel):
    """Which GPUs a replica may use, and how the pods ask for them."""

    model_config = ApiModel.model_config | {
        "json_schema_extra": validations(
            cel(
                "!has(self.deviceClassName) || self.allocation == 'DRA'",
                "gpu.deviceClassName is only used with allocation: DRA; set allocation: DRA or "
                "remove deviceClassName",
                ".deviceClassName",
            )
        )
    }

    products: Annotated[list[GpuProduct], Field(max_length=16)] = Field(
        default_factory=list,
        description="Candidate GPU products as GPU Feature Discovery names (nvidia.com/gpu."
        "product), e.g. NVIDIA-H200. Empty: the products the cluster has, else the catalog.",
    )
    count: int | None = Field(
        default=None,
        ge=1,
        le=512,
        description="Forces the number of GPUs per replica. Unset: planned.",
    )
    allocation: GpuAllocation = Field(
        default="DevicePlugin",
        description="How pods get their GPUs. DevicePlugin: the nvidia.com/gpu resource and "
        "the GPU Feature Discovery product label. DRA: a ResourceClaimTemplate per pod "
        "(resource.k8s.io/v1) requesting exactly the planned count of the planned product from "
        "deviceClassName; the operator must run with --dra (the chart's rbac.dra).",
    )
    device_class_name: ResourceName | None = Field(
        default=None,
        description="DeviceClass the claims request (allocation DRA only). Default: "
        f"{DEFAULT_DEVICE_CLASS}, the class NVIDIA's DRA driver installs.",
    )


class Parallelism(ApiModel):
    """Explicit parallel layout. Each value is honoured or the deployment is rejected with a
    reason; the planner never changes it."""

    tensor: int | None = Field(
        default=None,
        description="Tensor-parallel size (a power of two up to 64; stays inside a node).",
        json_schema_extra=validations(
            cel(
                "self in [1, 2, 4, 8, 16, 32, 64]",
                "tensor parallel size must be a power of two no larger than 64 "
                "(1, 2, 4, 8, 16, 32 or 64)",
            )
        ),
    )
    pipeline: int | None = Field(
        default=None,
        ge=1,
        le=64,
        description="Pipeline-parallel size (stages; goes across nodes).",
    )
    expert: bool | None = Field(
        default=None,
        description="Expert parallelism for MoE layers (--enable-expert-parallel). Default: on "
        "for MoE models when tensor parallel is above 1 (with TP 1 it has nothing to shard).",
    )


class CapacitySpec(ApiModel):
    """How much each replica must hold, and on which GPUs."""

    min_concurrency: int = Field(
        default=DEFAULT_MIN_CONCURRENCY,
        ge=1,
        le=100_000,
        description="Full-length sequences (at maxModelLen) each replica must hold at once; "
        "layouts below it are rejected.",
    )
    gpu: GpuSelection = Field(default_factory=GpuSelection, description="GPU products and count.")
    parallelism: Parallelism = Field(
        default_factory=Parallelism, description="Explicit parallel layout."
    )


class NodeClassRef(ApiModel):
    """Karpenter node class of the NodePool."""

    group: Annotated[str, StringConstraints(min_length=1, max_length=253)] = Field(
        default="karpenter.k8s.aws", description="API group of the node class."
    )
    kind: Annotated[str, StringConstraints(min_length=1, max_length=63)] = Field(
        default="EC2NodeClass", description="Kind of the node class."
    )
    name: ResourceName = Field(description="Name of the node class.")


class KarpenterSpec(ApiModel):
    """Karpenter NodePool settings."""

    node_class_ref: NodeClassRef = Field(description="Node class for the GPU nodes.")
    instance_types: Annotated[
        list[Annotated[str, StringConstraints(min_length=1, max_length=64)]], Field(max_length=32)
    ] = Field(
        default_factory=list,
        description="Allowed instance types, e.g. p5e.48xlarge. Empty: any with the planned GPU.",
    )
    capacity_type: Literal["on-demand", "spot", "reserved"] = Field(
        default="on-demand", description="karpenter.sh/capacity-type of the nodes."
    )


class NodePoolSpec(ApiModel):
    """How GPU nodes are provided."""

    model_config = ApiModel.model_config | {
        "json_schema_extra": validations(
            cel(
                "self.provisioner != 'Karpenter' || has(self.karpenter)",
                "nodePool.karpenter is required when provisioner is Karpenter",
                ".karpenter",
            ),
            cel(
                "!has(self.karpenter) || self.provisioner == 'Karpenter'",
                "nodePool.karpenter is set but provisioner is None: set provisioner: Karpenter "
                "or remove nodePool.karpenter",
                ".provisioner",
            ),
        )
    }

    provisioner: Literal["None", "Karpenter"] = Field(
        default="None",
        description="None: nodes exist already. Karpenter: create a karpenter.sh/v1 NodePool "
        "sized from the plan.",
    )
    karpenter: KarpenterSpec | None = Field(
        default=None, description="Karpenter settings (provisioner Karpenter only)."
    )


AccessMode = Literal["ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"]


def _default_access_modes() -> list[AccessMode]:
    return ["ReadWriteOnce"]


# An absolute directory on the node: segments never begin with a dot (no "..", no hidden
# directories), no trailing slash.
NodePath = Annotated[
    str,
    StringConstraints(min_length=2, max_length=256, pattern=r"^(/[A-Za-z0-9_-][A-Za-z0-9._-]*)+$"),
]


class NodeLocalCache(ApiModel):
    """A weight cache on each node's own disk (a hostPath directory), for clusters without
    ReadWriteMany storage: the second pod on a node finds the weights and skips the download."""

    path: NodePath = Field(
        description="The node's directory, e.g. /var/lib/nemotron/models (created when "
        "missing). hostPath: the pods need the privileged Pod Security level; the directory is "
        "shared by every deployment on the node that names it, and nothing cleans it up."
    )


class CacheSpec(ApiModel):
    """The weight cache volume that the download fills."""

    model_config = ApiModel.model_config | {
        "json_schema_extra": validations(
            cel(
                "!self.shared || self.accessModes.exists(m, m == 'ReadWriteMany')",
                "a shared cache needs accessModes to include ReadWriteMany",
                ".accessModes",
            ),
            cel(
                "!has(self.nodeLocal) || !self.shared",
                "a node-local cache is one directory per node, a shared cache one claim for "
                "all pods: set nodeLocal or shared, not both",
                ".nodeLocal",
            ),
        )
    }

    size: Quantity | None = Field(
        default=None,
        description="Size of the cache claim, e.g. 300Gi. Default: the checkpoint's bytes plus "
        "10% headroom.",
    )
    storage_class_name: ResourceName | None = Field(
        default=None, description="StorageClass of the claim. Default: the cluster's default."
    )
    access_modes: Annotated[list[AccessMode], Field(min_length=1, max_length=4)] = Field(
        default_factory=_default_access_modes, description="Access modes of the claim."
    )
    shared: bool = Field(
        default=False,
        description="One claim shared by every pod (needs ReadWriteMany) instead of one claim "
        "per pod.",
    )
    node_local: NodeLocalCache | None = Field(
        default=None,
        description="A directory on each node (hostPath) instead of a claim; the other cache "
        "fields then do not apply. Exclusive with shared.",
    )


class StorageSpec(ApiModel):
    """Storage for weights."""

    cache: CacheSpec = Field(default_factory=CacheSpec, description="The weight cache volume.")


class Toleration(ApiModel):
    """A pod toleration (core/v1 Toleration)."""

    key: Annotated[str, StringConstraints(max_length=317)] | None = Field(
        default=None, description="Taint key."
    )
    operator: Literal["Exists", "Equal"] | None = Field(default=None, description="Operator.")
    value: LabelValue | None = Field(default=None, description="Taint value.")
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = Field(
        default=None, description="Taint effect; empty matches all."
    )
    toleration_seconds: int | None = Field(
        default=None, ge=0, le=10**9, description="Seconds a NoExecute taint is tolerated."
    )


class SchedulingSpec(ApiModel):
    """Placement of serving pods, merged with what the plan requires (never replacing it)."""

    node_selector: Annotated[dict[LabelKey, LabelValue], Field(max_length=32)] = Field(
        default_factory=dict,
        description="Extra node labels to require. nvidia.com/gpu.product comes from the plan; "
        "setting it to another product is refused.",
    )
    tolerations: Annotated[list[Toleration], Field(max_length=32)] = Field(
        default_factory=list,
        description="Extra tolerations, added to the nvidia.com/gpu toleration.",
    )
    affinity: dict[str, Any] | None = Field(
        default=None,
        description="core/v1 Affinity for serving pods, passed through unchanged.",
    )
    priority_class_name: ResourceName | None = Field(
        default=None, description="PriorityClass of serving pods."
    )


class PodMonitorSpec(ApiModel):
    """A Prometheus Operator PodMonitor for the serving pods' vLLM /metrics."""

    enabled: bool = Field(default=False, description="Create a PodMonitor for vLLM's /metrics.")
    interval: Annotated[str, StringConstraints(max_length=16, pattern=r"^[0-9]+(ms|s|m|h)$")] = (
        Field(default="30s", description="Scrape interval.")
    )
    labels: Labels = Field(
        default_factory=dict, description="Labels the Prometheus instance selects monitors by."
    )


class MonitoringSpec(ApiModel):
    """Monitoring integration."""

    # Named for what it creates: a PodMonitor scrapes each leader pod directly, without a
    # metrics Service (it was `serviceMonitor` before v1alpha1 settled).
    pod_monitor: PodMonitorSpec = Field(
        default_factory=PodMonitorSpec,
        description="Prometheus Operator PodMonitor for vLLM's /metrics on the serving leaders.",
    )
