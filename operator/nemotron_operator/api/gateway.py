"""``spec.gateway``: attach the deployment to the Gateway API Inference Extension.

When enabled, the operator creates an ``InferencePool`` (``inference.networking.k8s.io/v1``)
selecting the serving leaders, the endpoint picker (EPP) that scores them, and optionally an
``HTTPRoute`` from a Gateway the user names to the pool. docs/gateway.md has the sources.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from nemotron_operator.api.base import (
    DNS_LABEL,
    DNS_SUBDOMAIN,
    ApiModel,
    ResourceName,
    cel,
    validations,
)
from nemotron_operator.api.engine import Image

# The llm-d router's endpoint picker, where the Gateway API Inference Extension's EPP moved
# (its README since v1.6): released as ghcr.io/llm-d/llm-d-router-endpoint-picker:<tag>.
DEFAULT_EPP_IMAGE = "ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.9.0"

# gateway.networking.k8s.io/v1 SectionName: a DNS subdomain of at most 253 characters.
SectionName = Annotated[str, StringConstraints(min_length=1, max_length=253, pattern=DNS_SUBDOMAIN)]


class EndpointPickerSpec(ApiModel):
    """The endpoint picker (EPP) the InferencePool names."""

    image: Image = Field(
        default=DEFAULT_EPP_IMAGE,
        description="EPP image. Default: the llm-d router's endpoint picker, pinned.",
    )
    failure_mode: Literal["FailClose", "FailOpen"] = Field(
        default="FailClose",
        description="What the Gateway does when the picker does not answer: FailClose (the "
        "InferencePool API's default) refuses the request, FailOpen sends it to any pod.",
    )


class ParentRef(ApiModel):
    """A Gateway the HTTPRoute attaches to (gateway.networking.k8s.io/v1 ParentReference)."""

    name: ResourceName = Field(description="Name of the Gateway.")
    namespace: (
        Annotated[str, StringConstraints(min_length=1, max_length=63, pattern=DNS_LABEL)] | None
    ) = Field(default=None, description="Namespace of the Gateway. Default: this one.")
    section_name: SectionName | None = Field(
        default=None, description="Listener of the Gateway. Default: every listener."
    )


class HttpRouteSpec(ApiModel):
    """An HTTPRoute sending requests for this model from a Gateway to the InferencePool."""

    parent_refs: Annotated[list[ParentRef], Field(min_length=1, max_length=32)] = Field(
        description="Gateways to attach to (an existing Gateway: Istio, kgateway, GKE, ...)."
    )


class GatewaySpec(ApiModel):
    """Gateway API Inference Extension integration."""

    model_config = ApiModel.model_config | {
        "json_schema_extra": validations(
            cel(
                "!has(self.httpRoute) || self.enabled",
                "gateway.httpRoute routes to the InferencePool, which exists only with "
                "gateway.enabled: set enabled to true or remove httpRoute",
                ".httpRoute",
            )
        )
    }

    enabled: bool = Field(
        default=False,
        description="Create an InferencePool and its endpoint picker (needs the InferencePool "
        "CRD, and rbac.inferenceGateway in the operator's chart).",
    )
    endpoint_picker: EndpointPickerSpec = Field(
        default_factory=EndpointPickerSpec, description="The endpoint picker."
    )
    http_route: HttpRouteSpec | None = Field(
        default=None,
        description="Also create an HTTPRoute from these Gateways to the pool, matching the "
        "served model name (needs the HTTPRoute CRD). Needs enabled.",
    )
