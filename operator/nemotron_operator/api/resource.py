"""The NemotronDeployment resource: identity (group, version, names), columns and subresources."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints

from nemotron_operator.api.base import ApiModel, Labels
from nemotron_operator.api.spec import NemotronDeploymentSpec
from nemotron_operator.api.status import NemotronDeploymentStatus

GROUP = "serving.nemotron.io"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "NemotronDeployment"
PLURAL = "nemotrondeployments"
SINGULAR = "nemotrondeployment"
SHORT_NAMES = ("nd",)
CATEGORIES = ("nemotron", "ai")

PRINTER_COLUMNS: tuple[dict[str, Any], ...] = (
    {"name": "Model", "type": "string", "jsonPath": ".spec.model.id"},
    {"name": "GPU", "type": "string", "jsonPath": ".status.plan.gpuProduct"},
    {"name": "GPUs", "type": "integer", "jsonPath": ".status.plan.totalGPUs"},
    {"name": "Ready", "type": "string", "jsonPath": ".status.ready"},
    {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
    {
        "name": "Tokens/s",
        "type": "number",
        "format": "float",
        "jsonPath": ".status.throughput.generationTokensPerSecond",
    },
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
)

SCALE_SUBRESOURCE = {
    "specReplicasPath": ".spec.replicas",
    "statusReplicasPath": ".status.replicas",
    "labelSelectorPath": ".status.selector",
}


class ObjectMeta(ApiModel):
    """The parts of metadata the operator reads. Everything else is kept but not modelled."""

    model_config = ApiModel.model_config | {"extra": "allow"}

    name: Annotated[str, StringConstraints(min_length=1, max_length=253)]
    namespace: Annotated[str, StringConstraints(max_length=63)] = "default"
    labels: Labels = Field(default_factory=dict)
    generation: int | None = None
    uid: str | None = None


class NemotronDeployment(ApiModel):
    """One Nemotron model served by vLLM, sized from a memory model."""

    api_version: Literal["serving.nemotron.io/v1alpha1"] = Field(
        default="serving.nemotron.io/v1alpha1", alias="apiVersion"
    )
    kind: Literal["NemotronDeployment"] = "NemotronDeployment"
    metadata: ObjectMeta
    spec: NemotronDeploymentSpec
    status: NemotronDeploymentStatus | None = None
