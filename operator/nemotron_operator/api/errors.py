"""Turning pydantic validation errors into messages that name the field the way kubectl does."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from nemotron_operator.api.resource import NemotronDeployment


@dataclass(frozen=True)
class FieldError:
    """One problem with one field: ``path`` is dotted camelCase (``spec.engine.maxModelLen``)."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class SpecError(ValueError):
    """The object is not a valid NemotronDeployment; ``errors`` names every bad field."""

    def __init__(self, errors: Sequence[FieldError], name: str | None = None) -> None:
        self.errors = tuple(errors)
        self.name = name
        subject = f'NemotronDeployment "{name}"' if name else "NemotronDeployment"
        super().__init__(f"{subject} is invalid: " + "; ".join(str(e) for e in self.errors))


def field_path(location: Sequence[int | str]) -> str:
    """``('spec', 'engine', 'extraArgs', 2)`` → ``spec.engine.extraArgs[2]``."""
    out = ""
    for part in location:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def field_errors(exc: ValidationError) -> list[FieldError]:
    errors = []
    for err in exc.errors(include_url=False):
        message = err["msg"]
        if err["type"] == "extra_forbidden":
            message = "unknown field (check the spelling; fields are camelCase)"
        elif "input" in err and err["type"] not in ("missing",):
            message = f"Invalid value: {_short(err['input'])}: {message}"
        errors.append(FieldError(field_path(err["loc"]), message))
    return errors


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def parse_deployment(obj: dict[str, Any]) -> NemotronDeployment:
    """Validate a NemotronDeployment object (as read from YAML or the API) into the model."""
    name = obj.get("metadata", {}).get("name") if isinstance(obj.get("metadata"), dict) else None
    try:
        return NemotronDeployment.model_validate(obj)
    except ValidationError as exc:
        raise SpecError(field_errors(exc), name=name) from exc
