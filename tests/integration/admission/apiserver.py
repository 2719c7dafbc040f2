"""A synchronous client of kube-apiserver for the admission suite, over the repository's one
transport (``nemotron_operator.kube.transport``) on a private event loop.

Hundreds of server-side dry-run requests go over its keep-alive connections, authenticated with
the admin's bearer token and verified against the cluster CA: no kubectl process per case.
Answers are returned as they are (the status code and the decoded body), so the tests assert
kube-apiserver's own words.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nemotron_operator.kube.transport import JSON, Transport

GROUP, VERSION, PLURAL = "serving.nemotron.io", "v1alpha1", "nemotrondeployments"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


@dataclass(frozen=True, order=True)
class Cause:
    field: str
    message: str
    reason: str


@dataclass(frozen=True)
class Answer:
    """kube-apiserver's answer: the status code and the decoded JSON body."""

    code: int
    body: Any
    warnings: tuple[str, ...] = ()  # the ``Warning`` headers (fieldValidation=Warn, deprecations)

    @property
    def causes(self) -> list[Cause]:
        details = self.body.get("details") or {} if isinstance(self.body, dict) else {}
        return [
            Cause(c.get("field", ""), c.get("message", ""), c.get("reason", ""))
            for c in details.get("causes") or []
        ]

    @property
    def message(self) -> str:
        return str(self.body.get("message", "")) if isinstance(self.body, dict) else ""

    def __str__(self) -> str:  # what an assertion shows
        return f"HTTP {self.code}: {json.dumps(self.body, indent=1)[:4000]}"


class ApiServer:
    """Requests to one kube-apiserver as its administrator; call it outside any event loop."""

    def __init__(self, url: str, ca_pem: bytes | str, token: str) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme != "https" or not parts.hostname:
            raise ValueError(f"not an https URL: {url}")
        pem = ca_pem.decode() if isinstance(ca_pem, bytes) else ca_pem
        context = ssl.create_default_context(cadata=pem)
        bearer = f"Bearer {token}"
        self._transport = Transport(url, context, authorization=lambda: bearer, connections=4)
        self._loop = asyncio.new_event_loop()

    def close(self) -> None:
        if not self._loop.is_closed():
            self._loop.run_until_complete(self._transport.close())
            self._loop.close()

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        params: Mapping[str, str] | None = None,
        content_type: str = JSON,
    ) -> Answer:
        answer = self._loop.run_until_complete(
            self._transport.answer(
                method, path, params=params, body=body, content_type=content_type
            )
        )
        return Answer(answer.status, answer.body, answer.warnings)

    # --- the project's resource ---------------------------------------------------------------

    @staticmethod
    def path(namespace: str, name: str | None = None, subresource: str | None = None) -> str:
        path = f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{PLURAL}"
        if name is not None:
            path += f"/{name}"
        if subresource is not None:
            path += f"/{subresource}"
        return path

    def dry_run(
        self,
        method: str,
        path: str,
        body: Any,
        *,
        field_validation: str = "Strict",
        content_type: str = "application/json",
    ) -> Answer:
        """``method`` with ``?dryRun=All``: validated, admitted or refused, never stored."""
        params = {"dryRun": "All", "fieldValidation": field_validation}
        return self.request(method, path, body, params=params, content_type=content_type)
