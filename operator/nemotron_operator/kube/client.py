"""``KubeClient``: the only place the operator talks to the API server (besides kopf's watches).

Reads (get, list, watch, discovery) and the write verbs: server-side apply with ``fieldManager:
nemotron-operator`` and ``force``, delete with a uid precondition, merge and JSON patches, create
and replace. The write verbs are called by ``kube/writes.py`` only, which names each write the
operator makes and builds its body.
Every failure is an :class:`ApiError`; a 404 on a read is ``None``. Nothing retries here: the
controller re-queues the object with a delay, so no handler ever sleeps. Bodies are never
logged (a pod template names Secrets; Events and logs must not carry more than that).
"""

from __future__ import annotations

import builtins
import json
import re
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp

from nemotron_operator.kube.config import Connection
from nemotron_operator.kube.errors import ApiError, parse_retry_after
from nemotron_operator.kube.resources import Resource

FIELD_MANAGER = "nemotron-operator"
APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
_UNPRINTABLE = re.compile(r"[^\x00-\x7e]")  # json.dumps escapes the C0 controls itself


def apply_body(obj: Any) -> str:
    """An apply body kube-apiserver's YAML decoder reads back unchanged: JSON's syntax, all
    ASCII, with YAML's escapes (the content type is YAML; no JSON parser reads it).

    ``json.dumps`` writes a character beyond U+FFFF as a UTF-16 surrogate pair
    (``\\ud83d\\ude80``), which JSON allows and YAML does not: kube-apiserver answers
    ``400 error decoding patch: ... yaml: found invalid Unicode character escape code`` (found by
    the property-based bad-input test with a ``spec.model.servedName`` outside the BMP, which
    ends up in the StatefulSet's arguments). YAML's own escapes are used instead, ``\\U`` and
    eight hex digits beyond the BMP and ``\\u`` below it (raw, U+0085, U+2028 and U+2029 would be
    line breaks to a YAML 1.1 parser), and for DEL, which YAML does not allow raw. These
    characters occur only inside JSON strings, so escaping each of them keeps every value as
    it was."""

    def escape(match: re.Match[str]) -> str:
        code = ord(match.group())
        return f"\\U{code:08x}" if code > 0xFFFF else f"\\u{code:04x}"

    return _UNPRINTABLE.sub(escape, json.dumps(obj, ensure_ascii=False))


LIST_PAGE = 500  # items per page of a list (client-go's informers use 500)


class KubeClient:
    def __init__(
        self, connection: Connection, *, request_timeout: float = 30.0, user_agent: str = ""
    ) -> None:
        """``user_agent``: sent with every request, so kube-apiserver's audit log tells which
        operator process made it (two replicas share one ServiceAccount)."""
        self._connection = connection
        self._user_agent = user_agent
        self._timeout = aiohttp.ClientTimeout(total=request_timeout, sock_connect=10.0)
        self._session: aiohttp.ClientSession | None = None
        self._watch_session: aiohttp.ClientSession | None = None
        # Called with (method, HTTP status) after every answer: the API request metrics.
        self.on_response: Callable[[str, int], None] | None = None

    async def __aenter__(self) -> KubeClient:
        ssl = self._connection.ssl_context()
        connector = aiohttp.TCPConnector(ssl=ssl, limit=16)
        self._session = aiohttp.ClientSession(connector=connector, timeout=self._timeout)
        # Watches hold their connection for minutes: a pool of their own, without a limit, so
        # that they never starve requests (nor one another). An event is one line: room for
        # the largest objects.
        self._watch_session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=ssl, limit=0), read_bufsize=2**22
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        for session in (self._session, self._watch_session):
            if session is not None:
                await session.close()
        self._session = self._watch_session = None

    def _agent(self) -> dict[str, str]:
        return {"User-Agent": self._user_agent} if self._user_agent else {}

    async def _request(
        self,
        method: str,
        url: str,
        *,
        params: dict[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
    ) -> Any:
        if self._session is None:
            raise RuntimeError("KubeClient is not open (use async with)")
        headers = {"Accept": "application/json", **self._agent()}
        authorization = self._connection.authorization()
        if authorization:
            headers["Authorization"] = authorization
        data = None
        if body is not None:
            headers["Content-Type"] = content_type
            data = apply_body(body) if content_type == APPLY else json.dumps(body)
        try:
            async with self._session.request(
                method, self._connection.server + url, params=params, data=data, headers=headers
            ) as response:
                text = await response.text()
                if self.on_response is not None:
                    self.on_response(method, response.status)
                if response.status >= 400:
                    raise _error(method, url, response.status, text, response.headers)
                return json.loads(text) if text else {}
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise ApiError(0, "Unreachable", repr(exc), method, url) from exc

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
        params = {"limit": str(LIST_PAGE)}
        if label_selector:
            params["labelSelector"] = label_selector
        if field_selector:
            params["fieldSelector"] = field_selector
        items: builtins.list[dict[str, Any]] = []
        version = ""
        while True:
            result = await self._request("GET", resource.collection_url(namespace), params=params)
            items += result.get("items") or []
            metadata = result.get("metadata") or {}
            version = version or str(metadata.get("resourceVersion") or "")
            token = metadata.get("continue")
            if not token:
                break
            params = {**params, "continue": str(token)}
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
        if self._watch_session is None:
            raise RuntimeError("KubeClient is not open (use async with)")
        params = {
            "watch": "true",
            "allowWatchBookmarks": "true",
            "resourceVersion": resource_version,
            "timeoutSeconds": str(timeout_seconds),
        }
        if label_selector:
            params["labelSelector"] = label_selector
        if field_selector:
            params["fieldSelector"] = field_selector
        headers = {"Accept": "application/json", **self._agent()}
        authorization = self._connection.authorization()
        if authorization:
            headers["Authorization"] = authorization
        url = resource.collection_url(namespace)
        timeout = aiohttp.ClientTimeout(total=timeout_seconds + 30.0, sock_connect=10.0)
        try:
            async with self._watch_session.get(
                self._connection.server + url, params=params, headers=headers, timeout=timeout
            ) as response:
                if self.on_response is not None:
                    self.on_response("WATCH", response.status)
                if response.status >= 400:
                    text = await response.text()
                    raise _error("GET", url, response.status, text, response.headers)
                async for line in response.content:
                    if line.strip():
                        yield json.loads(line)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise ApiError(0, "Unreachable", repr(exc), "GET", url) from exc

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


def _error(method: str, url: str, status: int, text: str, headers: Any) -> ApiError:
    reason, message = "", text[:500]
    try:
        body = json.loads(text)
        reason = str(body.get("reason") or "")
        message = str(body.get("message") or message)
    except (ValueError, AttributeError):
        pass
    return ApiError(
        status,
        reason or f"HTTP{status}",
        message,
        method,
        url,
        retry_after=parse_retry_after(headers.get("Retry-After")),
    )
