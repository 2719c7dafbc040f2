"""API errors as the Kubernetes API server reports them: a ``Status`` object with a code."""

from __future__ import annotations

from typing import Any

_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


class ApiError(Exception):
    """An error the stand-in answers with; ``status()`` is the body a real server would send."""

    def __init__(
        self,
        code: int,
        message: str,
        *,
        reason: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason or _REASONS.get(code, "Unknown")
        self.details = details

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            body["details"] = self.details
        return body


def _details(kind: str, group: str, name: str) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name, "kind": kind}
    if group:
        details["group"] = group
    return details


def _qualified(plural: str, group: str) -> str:
    return f"{plural}.{group}" if group else plural


class NotFoundError(ApiError):
    def __init__(self, plural: str, group: str, name: str) -> None:
        super().__init__(
            404,
            f'{_qualified(plural, group)} "{name}" not found',
            details=_details(plural, group, name),
        )


class AlreadyExistsError(ApiError):
    def __init__(self, plural: str, group: str, name: str) -> None:
        super().__init__(
            409,
            f'{_qualified(plural, group)} "{name}" already exists',
            reason="AlreadyExists",
            details=_details(plural, group, name),
        )


class ConflictError(ApiError):
    """A stale ``resourceVersion`` (optimistic concurrency) or another write conflict."""

    def __init__(self, plural: str, group: str, name: str, why: str | None = None) -> None:
        why = why or (
            "the object has been modified; please apply your changes to the latest version "
            "and try again"
        )
        super().__init__(
            409,
            f'Operation cannot be fulfilled on {_qualified(plural, group)} "{name}": {why}',
            details=_details(plural, group, name),
        )


class InvalidError(ApiError):
    """422 with one cause per bad field, as kubectl prints them."""

    def __init__(
        self, kind: str, group: str, name: str, causes: list[tuple[str, str]], *, prefix: str = ""
    ) -> None:
        subject = f"{kind}.{group}" if group else kind
        text = "; ".join(f"{field}: {msg}" if field else msg for field, msg in causes)
        details = _details(kind, group, name)
        details["causes"] = [
            {"reason": "FieldValueInvalid", "message": msg, "field": field} for field, msg in causes
        ]
        super().__init__(422, prefix or f'{subject} "{name}" is invalid: {text}', details=details)


def bad_request(message: str) -> ApiError:
    return ApiError(400, message)
