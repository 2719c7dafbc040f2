"""The ``/metrics`` guard: only callers kube-apiserver authenticates (TokenReview) and authorizes
for ``get`` on the non-resource URL ``/metrics`` (SubjectAccessReview) are answered, as
controller-runtime's ``filters.WithAuthenticationAndAuthorization`` and kube-rbac-proxy do.

- no ``Authorization: Bearer …`` header, or a token kube-apiserver does not accept: **401**;
- a user RBAC does not allow ``get`` on ``/metrics``: **403**;
- the API server not answering the review: **500**, not cached (the next scrape asks again).

Answers are cached per token (its SHA-256, never the token itself): an allowed caller for
``allowed_seconds`` (60 s), a refused one for ``denied_seconds`` (10 s), so a Prometheus
scraping every 15 s costs at most one TokenReview and one SubjectAccessReview a minute, and a
grant or a revocation takes effect within a minute. Concurrent requests with the same token
share one review. The cache holds at most ``max_entries`` tokens (the oldest go first).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from nemotron_operator.kube.client import KubeClient
from nemotron_operator.kube.errors import ApiError
from nemotron_operator.kube.reviews import ReviewedUser, review_access, review_token

logger = logging.getLogger(__name__)

TokenReviewer = Callable[[str], Awaitable[ReviewedUser | None]]
AccessReviewer = Callable[[ReviewedUser, str, str], Awaitable[bool]]


@dataclass(frozen=True)
class Decision:
    status: int  # 200, 401, 403 or 500
    reason: str


ALLOWED = Decision(200, "allowed")
NO_TOKEN = Decision(401, "Unauthorized: a bearer token is required (Authorization: Bearer …)")


class MetricsGuard:
    def __init__(
        self,
        review_token: TokenReviewer,
        review_access: AccessReviewer,
        *,
        allowed_seconds: float = 60.0,
        denied_seconds: float = 10.0,
        max_entries: int = 1024,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._review_token = review_token
        self._review_access = review_access
        self._allowed_seconds = allowed_seconds
        self._denied_seconds = denied_seconds
        self._max_entries = max_entries
        self._clock = clock
        self._cache: OrderedDict[tuple[str, str, str], tuple[float, Decision]] = OrderedDict()
        self._pending: dict[tuple[str, str, str], asyncio.Task[Decision]] = {}

    @classmethod
    def for_cluster(cls, kube: KubeClient) -> MetricsGuard:
        async def access(user: ReviewedUser, path: str, verb: str) -> bool:
            return await review_access(kube, user, path=path, verb=verb)

        return cls(lambda token: review_token(kube, token), access)

    async def decide(self, authorization: str | None, *, path: str, method: str) -> Decision:
        scheme, _, token = (authorization or "").strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return NO_TOKEN
        verb = method.lower()  # an HTTP GET is the RBAC verb get (non-resource requests)
        key = (hashlib.sha256(token.encode()).hexdigest(), path, verb)
        cached = self._cache.get(key)
        if cached is not None and cached[0] > self._clock():
            return cached[1]
        task = self._pending.get(key)
        if task is None:
            task = asyncio.create_task(self._review(token, path, verb), name="metrics review")
            self._pending[key] = task
            task.add_done_callback(lambda _: self._pending.pop(key, None))
        decision = await asyncio.shield(task)
        if decision.status != 500:
            ttl = self._allowed_seconds if decision.status == 200 else self._denied_seconds
            self._cache[key] = (self._clock() + ttl, decision)
            self._cache.move_to_end(key)
            while len(self._cache) > self._max_entries:
                self._cache.popitem(last=False)
        return decision

    async def _review(self, token: str, path: str, verb: str) -> Decision:
        try:
            user = await self._review_token(token)
            if user is None:
                return Decision(401, "Unauthorized: the token was not accepted (TokenReview)")
            if not await self._review_access(user, path, verb):
                return Decision(
                    403,
                    f'Forbidden: user "{user.username}" cannot {verb} path "{path}" '
                    "(grant the non-resource URL with a ClusterRole: the chart's "
                    "metrics-reader)",
                )
        except ApiError as exc:
            logger.warning("cannot review a /metrics caller: %s", exc)
            return Decision(500, f"cannot review the caller: {exc.reason}")
        return ALLOWED
