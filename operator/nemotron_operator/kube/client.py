"""``KubeClient``: the only place the operator talks to the API server (besides kopf's watches).

Reads (get, list, watch, discovery) and the write verbs: server-side apply with ``fieldManager:
nemotron-operator`` and ``force``, delete with a uid precondition, merge and JSON patches, create
and replace. The write verbs are called by ``kube/writes.py`` only, which names each write the
operator makes and builds its body.
Every failure is an :class:`ApiError`; a 404 on a read is ``None``. Nothing retries here: the
controller re-queues the object with a delay, so no handler ever sleeps. Bodies are never
logged (a pod template names Secrets; Events and logs must not carry more than that).
The HTTP (TLS, token, paging, watch streams, the error) is ``kube/transport.py``'s.
"""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator, Callable
from typing import Any

from nemotron_operator.kube.config import Connection
from nemotron_operator.kube.errors import ApiError
from nemotron_operator.kube.resources import Resource
from nemotron_operator.kube.transport import (
    APPLY,
    JSON_PATCH,
    LIST_PAGE,
    MERGE,
    STRATEGIC,
    Transport,
    apply_body,
)

FIELD_MANAGER = "nemotron-operator"
__all__ = ["FIELD_MANAGER", "LIST_PAGE", "KubeClient", "apply_body"]


class KubeClient:
    """The typed verbs over a :class:`~nemotron_operator.kube.transport.Transport`."""

    def __init__(
        self, connection: Connection, *, request_timeout: float = 30.0, user_agent: str = ""
    ) -> None:
        """``user_agent``: sent with every request, so kube-apiserver's audit log tells which
        operator process made it (two replicas share one ServiceAccount)."""
        self.transport = Transport(
            connection.server,
            connection.ssl_context(),
            authorization=connection.authorization,
            user_agent=user_agent,
            request_timeout=request_timeout,
        )
        self._open = False

    @property
    def on_response(self) -> Callable[[str, int], None] | None:
        """Called with (method, HTTP status) after every answer: the API request metrics."""
        return self.transport.on_response

    @on_response.setter
    def on_response(self, callback: Callable[[str, int], None] | None) -> None:
        self.transport.on_response = callback

    async def __aenter__(self) -> KubeClient:
        self._open = True
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._open = False
        await self.transport.close()

    async def _request(
        self,
        method: str,
        url: str,
        *,
        params: dict[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
    ) -> Any:
        if not self._open:
            raise RuntimeError("KubeClient is not open (use async with)")
        return await self.transport.request(
            method, url, params=params, body=body, content_type=content_type
        )

    async def get(self, resource: Resource, namespace: str | None, name: str) -> Any:
        """The object, or None when it does not exist."""
        try:
            return await self._request("GET", resource.object_url(namespace, name))
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    async def list(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> list[dict[str, Any]]:
        items, _ = await self.list_versioned(
            resource, namespace, label_selector=label_selector, field_selector=field_selector
        )
        return items

    async def list_versioned(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> tuple[builtins.list[dict[str, Any]], str]:
        """The items and the list's ``resourceVersion`` (where a watch of it starts).

        In pages of ``LIST_PAGE`` items, as client-go's informers list: one answer of 3,000
        deployments' pods is tens of MiB held at once by both sides. The pages are one snapshot
        (the server's ``continue`` token carries its version); a token that expired (410) fails
        the list, and the caller lists again from the start."""
        if not self._open:
            raise RuntimeError("KubeClient is not open (use async with)")
        params: dict[str, str] = {}
        if label_selector:
            params["labelSelector"] = label_selector
        if field_selector:
            params["fieldSelector"] = field_selector
        items, version, _ = await self.transport.list_pages(
            resource.collection_url(namespace), params, page=LIST_PAGE
        )
        for item in items:  # lists leave kind and apiVersion out of their items
            item.setdefault("apiVersion", resource.api_version)
            item.setdefault("kind", resource.kind)
        return items, version

    async def watch(
        self,
        resource: Resource,
        namespace: str | None,
        *,
        resource_version: str,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int = 300,
    ) -> AsyncIterator[dict[str, Any]]:
        """The watch events (``type`` and ``object``) from ``resource_version`` on, with
        bookmarks, until the server ends the stream (after ``timeout_seconds``). An ``ERROR``
        event (e.g. 410 Expired) is yielded as it came; the caller decides."""
        if not self._open:
            raise RuntimeError("KubeClient is not open (use async with)")
        params = {"allowWatchBookmarks": "true", "resourceVersion": resource_version}
        if label_selector:
            params["labelSelector"] = label_selector
        if field_selector:
            params["fieldSelector"] = field_selector
        url = resource.collection_url(namespace)
        async for event in self.transport.watch(url, params, timeout_seconds=timeout_seconds):
            yield event

    async def served(self, resource: Resource) -> bool:
        """Whether the server serves ``resource`` (its CRD is installed), from discovery."""
        base = f"/apis/{resource.group}/{resource.version}" if resource.group else "/api/v1"
        try:
            result = await self._request("GET", base)
        except ApiError as exc:
            if exc.status == 404:
                return False
            raise
        return any(r.get("name") == resource.plural for r in result.get("resources") or [])

    async def apply(self, resource: Resource, obj: dict[str, Any]) -> Any:
        """Server-side apply of ``obj`` as the operator's field manager, taking ownership."""
        metadata = obj["metadata"]
        url = resource.object_url(metadata.get("namespace"), metadata["name"])
        params = {"fieldManager": FIELD_MANAGER, "force": "true"}
        return await self._request("PATCH", url, params=params, body=obj, content_type=APPLY)

    async def delete(
        self, resource: Resource, namespace: str | None, name: str, *, uid: str | None = None
    ) -> bool:
        """Delete (background propagation); False when it was already gone."""
        body: dict[str, Any] = {"propagationPolicy": "Background"}
        if uid is not None:
            body["preconditions"] = {"uid": uid}
        try:
            await self._request("DELETE", resource.object_url(namespace, name), body=body)
        except ApiError as exc:
            if exc.status == 404:
                return False
            raise
        return True

    async def patch(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        body: Any,
        *,
        subresource: str = "",
        json_patch: bool = False,
        strategic: bool = False,
    ) -> Any:
        url = resource.object_url(namespace, name, subresource)
        content_type = JSON_PATCH if json_patch else STRATEGIC if strategic else MERGE
        return await self._request("PATCH", url, body=body, content_type=content_type)

    async def create(self, resource: Resource, namespace: str | None, obj: dict[str, Any]) -> Any:
        return await self._request("POST", resource.collection_url(namespace), body=obj)

    async def replace(self, resource: Resource, namespace: str | None, obj: dict[str, Any]) -> Any:
        url = resource.object_url(namespace, obj["metadata"]["name"])
        return await self._request("PUT", url, body=obj)
