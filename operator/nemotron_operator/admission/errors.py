"""What the API server answers when it refuses a custom resource: a ``Status`` with causes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

# Cause reasons as the API server names them (k8s.io/apimachinery/pkg/util/validation/field).
REQUIRED = "FieldValueRequired"
INVALID = "FieldValueInvalid"
NOT_SUPPORTED = "FieldValueNotSupported"
TOO_LONG = "FieldValueTooLong"
TOO_MANY = "FieldValueTooMany"
TYPE_INVALID = "FieldValueTypeInvalid"
UNKNOWN_FIELD = "FieldValueUnknown"


@dataclass(frozen=True)
class Cause:
    """One refused field: ``field`` is the dotted path (``spec.engine.maxModelLen``)."""

    field: str
    message: str
    reason: str = INVALID

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"

    # ``path`` is the name api.errors.FieldError uses; both spellings work.
    @property
    def path(self) -> str:
        return self.field


class AdmissionError(ValueError):
    """The object was refused. ``str()`` reads like ``kubectl apply`` shows it."""

    def __init__(
        self, kind: str, group: str, name: str, causes: Sequence[Cause], *, code: int = 422
    ) -> None:
        self.kind, self.group, self.name = kind, group, name
        self.causes = list(causes)
        self.code = code
        super().__init__(self.message)

    @property
    def message(self) -> str:
        subject = f'{self.kind}.{self.group} "{self.name}"' if self.group else self.kind
        if self.code == 400:
            fields = ", ".join(f'unknown field "{c.field}"' for c in self.causes)
            return f"{subject} is invalid: strict decoding error: {fields}"
        if len(self.causes) == 1:
            return f"{subject} is invalid: {self.causes[0]}"
        return f"{subject} is invalid: [" + ", ".join(str(c) for c in self.causes) + "]"

    def status(self) -> dict[str, Any]:
        """The ``metav1.Status`` body of the refusal."""
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": "BadRequest" if self.code == 400 else "Invalid",
            "details": {
                "name": self.name,
                "group": self.group,
                "kind": self.kind,
                "causes": [
                    {"reason": c.reason, "message": c.message, "field": c.field}
                    for c in self.causes
                ],
            },
            "code": self.code,
        }
