"""The base model every API type derives from, and the small type vocabulary of the CRD schema.

camelCase on the wire, snake_case in Python. Unknown fields are rejected (the API server rejects
them too, so a typo never becomes a silently ignored field). Every string and list carries a
bound, because the generated CRD must set ``maxLength``/``maxItems`` everywhere (CEL cost limits).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from pydantic.alias_generators import to_camel


class ApiModel(BaseModel):
    """Base of all API types: camelCase aliases, no unknown fields, validated assignment."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        validate_assignment=True,
        use_attribute_docstrings=False,
    )

    def to_wire(self) -> dict[str, Any]:
        """The object as the API server stores it: camelCase keys, unset optionals omitted."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


def cel(rule: str, message: str, field_path: str | None = None) -> dict[str, str]:
    """One ``x-kubernetes-validations`` entry."""
    entry = {"rule": rule, "message": message}
    if field_path is not None:
        entry["fieldPath"] = field_path
    return entry


def validations(*rules: dict[str, str]) -> dict[str, Any]:
    """``json_schema_extra`` carrying CEL rules for a model or a field."""
    return {"x-kubernetes-validations": list(rules)}


# Names as Kubernetes validates them (RFC 1123 subdomain / label, DNS-1123).
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
# A resource quantity (k8s.io/apimachinery/pkg/api/resource), e.g. "300Gi", "1.5T", "500G".
QUANTITY = r"^([0-9]+(\.[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$"

ResourceName = Annotated[
    str, StringConstraints(min_length=1, max_length=253, pattern=DNS_SUBDOMAIN)
]
LabelValue = Annotated[str, StringConstraints(max_length=63)]
LabelKey = Annotated[str, StringConstraints(min_length=1, max_length=317)]
ShortText = Annotated[str, StringConstraints(max_length=256)]
Quantity = Annotated[str, StringConstraints(min_length=1, max_length=32, pattern=QUANTITY)]
Labels = Annotated[dict[LabelKey, LabelValue], Field(max_length=64)]
