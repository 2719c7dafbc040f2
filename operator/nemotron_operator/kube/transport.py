"""``Transport``: HTTP to kube-apiserver by path, the one client every part of the repository uses.

The operator's typed :class:`~nemotron_operator.kube.client.KubeClient` sits on it; the simulated
cluster, the test harness and the benchmarks use it as it is (an import contract lets the
simulator import this module, ``listwatch`` and ``errors`` and nothing else of the operator, so
it imports nothing else of the operator either). It sends a request to a path and decodes the
answer; pages a list; streams a watch. Every failure is one :class:`ApiError`: kube-apiserver's
``Status`` (``status``, ``reason``, ``message``), or status 0 when the server was not reached.
Nothing retries here and no body is logged.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import re
import ssl
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp

from nemotron_operator.kube import json_text
from nemotron_operator.kube.errors import ApiError, parse_retry_after

JSON = "application/json"
APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
LIST_PAGE = 500  # items per page of a list (client-go's informers use 500)
_UNPRINTABLE = re.compile(r"[^\x00-\x7e]")  # json.dumps escapes the C0 controls itself
_WATCH_LINE = 2**22  # a watch event is one line: room for the largest objects


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


@dataclass(frozen=True)
class Answer:
    """An answer as it came: the status, the decoded JSON body (the text when it is not JSON,
    None when empty) and the ``Warning`` headers."""

    status: int
    body: Any
    warnings: tuple[str, ...] = ()


class Transport:
    """Requests to one API server. ``tls``: an SSL context (a client certificate is the
    identity), False for plain HTTP or no verification, None for aiohttp's default.
    ``authorization``: called before each request for the Authorization header (tokens
    rotate). Sessions open at the first request (inside the event loop that uses them)."""

    def __init__(
        self,
        server: str,
        tls: ssl.SSLContext | bool | None = None,
        *,
        authorization: Callable[[], str | None] | None = None,
        user_agent: str = "",
        request_timeout: float | None = 30.0,
        connections: int = 16,
    ) -> None:
        self.server = server.rstrip("/")
        self._tls = tls
        self._authorization = authorization
        self._user_agent = user_agent
        self._timeout = aiohttp.ClientTimeout(total=request_timeout, sock_connect=10.0)
        self._connections = connections
        self._session: aiohttp.ClientSession | None = None
        self._watch_session: aiohttp.ClientSession | None = None
        # Called with (method, HTTP status) after every answer: e.g. request metrics.
        self.on_response: Callable[[str, int], None] | None = None

    async def __aenter__(self) -> Transport:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        for session in (self._session, self._watch_session):
            if session is not None:
                await session.close()
        self._session = self._watch_session = None

    def _requests(self) -> aiohttp.ClientSession:
        if self._session is None:
            connector = aiohttp.TCPConnector(ssl=self._tls_arg(), limit=self._connections)
            self._session = aiohttp.ClientSession(connector=connector, timeout=self._timeout)
        return self._session

    def _watches(self) -> aiohttp.ClientSession:
        # Watches hold their connection for minutes: a pool of their own, without a limit, so
        # that they never starve requests (nor one another).
        if self._watch_session is None:
            self._watch_session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(ssl=self._tls_arg(), limit=0),
                read_bufsize=_WATCH_LINE,
            )
        return self._watch_session

    def _tls_arg(self) -> ssl.SSLContext | bool:
        return True if self._tls is None else self._tls

    def headers(self) -> dict[str, str]:
        headers = {"Accept": JSON}
        if self._user_agent:
            headers["User-Agent"] = self._user_agent
        authorization = self._authorization() if self._authorization is not None else None
        if authorization:
            headers["Authorization"] = authorization
        return headers

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = JSON,
    ) -> Any:
        """One request; the decoded JSON answer ({} when empty), or :class:`ApiError`."""
        status, text, headers = await self._exchange(method, path, params, body, content_type)
        if status >= 400:
            raise status_error(method, path, status, text, headers)
        return json_text.loads(text) if text else {}

    async def answer(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = JSON,
    ) -> Answer:
        """One request whose answer is returned whatever its status (what a test of the
        server's own words reads); :class:`ApiError` only when the server was not reached."""
        status, text, headers = await self._exchange(method, path, params, body, content_type)
        try:
            decoded = json.loads(text) if text else None
        except ValueError:
            decoded = text
        return Answer(status, decoded, tuple(headers.getall("Warning", ())))

    async def _exchange(
        self,
        method: str,
        path: str,
        params: Mapping[str, str] | None,
        body: Any,
        content_type: str,
    ) -> tuple[int, str, Any]:
        """Send; the status, the body's text and the headers. ``body``: a str or bytes is sent
        as it is, anything else as JSON (an apply as :func:`apply_body`)."""
        headers = self.headers()
        data = None
        if body is not None:
            headers["Content-Type"] = content_type
            if isinstance(body, (str, bytes)):
                data = body
            else:
                data = apply_body(body) if content_type == APPLY else json.dumps(body)
        try:
            async with self._requests().request(
                method, self.server + path, params=params, data=data, headers=headers
            ) as response:
                text = await response.text()
                if self.on_response is not None:
                    self.on_response(method, response.status)
                return response.status, text, response.headers
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise ApiError(0, "Unreachable", repr(exc), method, path) from exc

    async def list_pages(
        self, path: str, params: Mapping[str, str] | None = None, *, page: int = LIST_PAGE
    ) -> tuple[builtins.list[dict[str, Any]], str, str]:
        """Every item of a list, its ``resourceVersion`` (where a watch of it starts) and the
        items' kind (the list's, without ``List``).

        In pages of ``page`` items, as client-go's informers list: one answer of 3,000
        deployments' pods is tens of MiB held at once by both sides. The pages are one snapshot
        (the server's ``continue`` token carries its version); a token that expired (410) fails
        the list, and the caller lists again from the start."""
        query = {**(params or {}), "limit": str(page)}
        items: builtins.list[dict[str, Any]] = []
        version = kind = ""
        while True:
            result = await self.request("GET", path, params=query)
            items += result.get("items") or []
            kind = kind or str(result.get("kind") or "").removesuffix("List")
            metadata = result.get("metadata") or {}
            version = version or str(metadata.get("resourceVersion") or "")
            token = metadata.get("continue")
            if not token:
                return items, version, kind
            query = {**query, "continue": str(token)}

    async def watch(
        self, path: str, params: Mapping[str, str], *, timeout_seconds: int = 300
    ) -> AsyncIterator[dict[str, Any]]:
        """The events (``type`` and ``object``) of one watch of ``path`` until the server ends
        the stream (after ``timeout_seconds``). An ``ERROR`` event (e.g. 410 Expired) is
        yielded as it came; the caller decides. A line that is not JSON raises ValueError."""
        async with self.stream(path, params, timeout_seconds=timeout_seconds) as events:
            async for event in events:
                yield event

    @contextlib.asynccontextmanager
    async def stream(
        self, path: str, params: Mapping[str, str], *, timeout_seconds: int = 300
    ) -> AsyncIterator[AsyncIterator[dict[str, Any]]]:
        """:meth:`watch` with the stream opened on entry (the server has answered), its events
        read from what it yields: for a caller that opens streams before it makes changes."""
        query = {**params, "watch": "true", "timeoutSeconds": str(timeout_seconds)}
        timeout = aiohttp.ClientTimeout(total=timeout_seconds + 30.0, sock_connect=10.0)
        try:
            async with self._watches().get(
                self.server + path, params=query, headers=self.headers(), timeout=timeout
            ) as response:
                if self.on_response is not None:
                    self.on_response("WATCH", response.status)
                if response.status >= 400:
                    text = await response.text()
                    raise status_error("GET", path, response.status, text, response.headers)
                yield _events(response, path)
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise ApiError(0, "Unreachable", repr(exc), "GET", path) from exc


async def _events(response: aiohttp.ClientResponse, path: str) -> AsyncIterator[dict[str, Any]]:
    try:
        async for line in response.content:
            if line.strip():
                yield json_text.loads(line)  # every watch event: orjson, several times faster
    except (aiohttp.ClientError, OSError, TimeoutError) as exc:
        raise ApiError(0, "Unreachable", repr(exc), "GET", path) from exc


def status_error(method: str, path: str, status: int, text: str, headers: Any) -> ApiError:
    """The :class:`ApiError` of an answer ``status`` ≥ 400 with body ``text`` (a ``Status``)."""
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
        path,
        retry_after=parse_retry_after(headers.get("Retry-After")),
    )
