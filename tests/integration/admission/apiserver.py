"""A plain, synchronous HTTPS client of kube-apiserver for the admission suite.

Hundreds of server-side dry-run requests go over one keep-alive connection (``http.client``),
authenticated with the admin's bearer token and verified against the cluster CA: no kubectl
process per case. Answers are returned as they are — the status code and the decoded body — so
the tests assert kube-apiserver's own words.
"""

from __future__ import annotations

import http.client
import json
import ssl
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MERGE_PATCH = "application/merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
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
    """Requests to one kube-apiserver as its administrator, over one keep-alive connection."""

    def __init__(self, url: str, ca_pem: bytes | str, token: str) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme != "https" or not parts.hostname:
            raise ValueError(f"not an https URL: {url}")
        self._host, self._port = parts.hostname, parts.port or 443
        pem = ca_pem.decode() if isinstance(ca_pem, bytes) else ca_pem
        self._context = ssl.create_default_context(cadata=pem)
        self._headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        self._connection: http.client.HTTPSConnection | None = None

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def _connect(self) -> http.client.HTTPSConnection:
        if self._connection is None:
            self._connection = http.client.HTTPSConnection(
                self._host, self._port, context=self._context, timeout=30
            )
        return self._connection

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        params: Mapping[str, str] | None = None,
        content_type: str = "application/json",
    ) -> Answer:
        if params:
            path = f"{path}?{urllib.parse.urlencode(params)}"
        headers = dict(self._headers)
        data = None
        if body is not None:
            data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
            headers["Content-Type"] = content_type
        for attempt in (1, 2):  # once more on a fresh connection if the idle one was closed
            connection = self._connect()
            try:
                connection.request(method, path, body=data, headers=headers)
                response = connection.getresponse()
                raw = response.read()
            except (http.client.RemoteDisconnected, ConnectionError, http.client.BadStatusLine):
                self.close()
                if attempt == 2:
                    raise
                continue
            try:
                decoded = json.loads(raw) if raw else None
            except json.JSONDecodeError:
                decoded = raw.decode(errors="replace")
            warnings = tuple(v for k, v in response.getheaders() if k.lower() == "warning")
            return Answer(response.status, decoded, warnings)
        raise AssertionError("unreachable")

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
