"""``spec.networkPolicy``: NetworkPolicies around the serving pods (opt-in)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints

from nemotron_operator.api.base import DNS_LABEL, ApiModel, cel, validations

NamespaceName = Annotated[str, StringConstraints(min_length=1, max_length=63, pattern=DNS_LABEL)]


class NetworkPolicySpec(ApiModel):
    """Ingress to the serving pods: the vLLM API port only from the namespaces named here (and
    the operator's, for its readiness check and scrapes); the ranks of a multi-node replica
    reach one another and nothing else reaches them. Needs a CNI that enforces NetworkPolicy."""

    model_config = ApiModel.model_config | {
        "json_schema_extra": validations(
            cel(
                "!self.enabled || size(self.apiFromNamespaces) > 0",
                "name at least one namespace whose pods may call the vLLM API (your clients', "
                "your gateway's), or set enabled: false",
                ".apiFromNamespaces",
            )
        ),
    }

    enabled: bool = Field(
        default=False, description="Render NetworkPolicies for the serving pods (opt-in)."
    )
    api_from_namespaces: Annotated[list[NamespaceName], Field(max_length=32)] = Field(
        default_factory=list,
        description="Namespaces whose pods may connect to the vLLM API port. Name the "
        "deployment's own namespace too if its clients run there; the operator's namespace is "
        "always allowed.",
    )
