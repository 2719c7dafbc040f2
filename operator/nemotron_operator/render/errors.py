"""Errors the renderer raises about a user's spec: each names the field and what to change."""

from __future__ import annotations

from collections.abc import Sequence

from nemotron_operator.api.errors import FieldError, SpecError


class RenderError(SpecError):
    """The spec cannot be rendered as it is. ``field`` is the first bad field's camelCase path
    (``spec.engine.extraArgs[2]``); ``errors`` lists every problem found."""

    def __init__(self, errors: Sequence[FieldError], name: str | None = None) -> None:
        if not errors:
            raise ValueError("RenderError needs at least one FieldError")
        super().__init__(errors, name=name)
        self.field = self.errors[0].path


def field_error(path: str, message: str) -> FieldError:
    return FieldError(path, message)
