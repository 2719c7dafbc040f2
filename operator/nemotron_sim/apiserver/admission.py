"""Custom resources validated and defaulted against their stored CRD, as the API server does.

The validation itself is :func:`nemotron_operator.admission.validate_object` (schema, defaults,
CEL rules, unknown fields). This module wires it into the store and carries the request's
``fieldValidation`` mode (Strict: unknown fields refused; Warn, the server default: dropped
with a ``Warning`` header; Ignore: dropped silently).
"""

from __future__ import annotations

import contextvars
from typing import Any

from nemotron_operator.admission import AdmissionError, unknown_fields, validate_object
from nemotron_sim.apiserver.errors import ApiError
from nemotron_sim.apiserver.resources import CRD_KEY, ResourceInfo
from nemotron_sim.apiserver.store import Admission, Store

# Set per HTTP request; in-process writes get the API server's default, Warn.
field_validation: contextvars.ContextVar[str] = contextvars.ContextVar(
    "field_validation", default="Warn"
)
warnings: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "warnings", default=None
)


def crd_admission(store: Store) -> Admission:
    def admit(
        info: ResourceInfo, new: dict[str, Any], old: dict[str, Any] | None
    ) -> dict[str, Any]:
        if info.crd_name is None:
            return new
        crd = store.peek(CRD_KEY, None, info.crd_name)
        if crd is None:
            return new
        mode = field_validation.get()
        try:
            if mode == "Warn":
                _warn_unknown(crd, new)
            return validate_object(
                crd, new, old, field_validation="Strict" if mode == "Strict" else "Ignore"
            )
        except AdmissionError as exc:
            status = exc.status()
            raise ApiError(
                exc.code, status["message"], reason=status["reason"], details=status["details"]
            ) from None

    return admit


def _warn_unknown(crd: dict[str, Any], new: dict[str, Any]) -> None:
    sink = warnings.get()
    if sink is None:
        return
    sink.extend(f'unknown field "{c.field}"' for c in unknown_fields(crd, new))
