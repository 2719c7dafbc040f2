"""A small asynchronous client of kube-apiserver for the simulated nodes: requests, lists and
watches over one aiohttp session, as the admin (a client certificate) or another identity.

Only what the simulated kubelets, node agents, service proxy and volume provisioner need; the
operator has its own client (``nemotron_operator.kube``), which this package never imports.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import AsyncIterator, Mapping
from typing import Any

import aiohttp

from nemotron_sim.kubeapi.resources import ResourceKey

_TIMEOUT = aiohttp.ClientTimeout(total=30.0)
_WATCH_TIMEOUT = aiohttp.ClientTimeout(total=None, sock_connect=10.0, sock_read=None)
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
_LINE_LIMIT = 4 * 1024 * 1024


class ApiStatusError(Exception):
    """kube-apiserver answered with an error ``Status``."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(f"{code} {reason}: {message}")
        self.code, self.reason, self.message = code, reason, message


class KubeApi:
    """Requests to one API server; create it inside the event loop that will use it."""

    def __init__(
        self, base_url: str, context: ssl.SSLContext, *, user_agent: str = "nemotron-sim"
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._context = context
        self._session = aiohttp.ClientSession(
            timeout=_TIMEOUT,
            headers={"User-Agent": user_agent, "Accept": "application/json"},
            connector=aiohttp.TCPConnector(ssl=context, limit=64),
            read_bufsize=_LINE_LIMIT,  # a watch event is one line; large objects need room
        )

    async def close(self) -> None:
        await self._session.close()

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
    ) -> Any:
        """One request; the decoded JSON answer, or ApiStatusError."""
        data = None if body is None else json.dumps(body)
        headers = {"Content-Type": content_type} if data is not None else {}
        async with self._session.request(
            method, self.base_url + path, params=params, data=data, headers=headers
        ) as response:
            text = await response.text()
            if response.status >= 400:
                raise _status_error(response.status, text)
            return json.loads(text) if text else None

    async def raw(self, path: str, params: Mapping[str, str] | None = None) -> bytes:
        """GET that returns the body as is (logs, metrics)."""
        async with self._session.get(self.base_url + path, params=params) as response:
            data = await response.read()
            if response.status >= 400:
                raise _status_error(response.status, data.decode(errors="replace"))
            return data

    async def watch(self, path: str, params: Mapping[str, str]) -> AsyncIterator[dict[str, Any]]:
        """The events of one watch request, until the server ends it."""
        query = {**params, "watch": "true"}
        async with self._session.get(
            self.base_url + path, params=query, timeout=_WATCH_TIMEOUT
        ) as response:
            if response.status >= 400:
                raise _status_error(response.status, await response.text())
            async for line in response.content:
                if line.strip():
                    yield json.loads(line)

    # --- paths --------------------------------------------------------------------------------

    @staticmethod
    def path(
        key: ResourceKey,
        namespace: str | None = None,
        name: str | None = None,
        subresource: str | None = None,
    ) -> str:
        prefix = f"/apis/{key.group}/{key.version}" if key.group else f"/api/{key.version}"
        parts = [prefix]
        if namespace and key.namespaced:
            parts.append(f"/namespaces/{namespace}")
        parts.append(f"/{key.plural}")
        if name:
            parts.append(f"/{name}")
        if subresource:
            parts.append(f"/{subresource}")
        return "".join(parts)


def _status_error(code: int, text: str) -> ApiStatusError:
    try:
        status = json.loads(text)
    except ValueError:
        return ApiStatusError(code, "", text[:500])
    if not isinstance(status, dict):
        return ApiStatusError(code, "", text[:500])
    return ApiStatusError(code, str(status.get("reason", "")), str(status.get("message", "")))
