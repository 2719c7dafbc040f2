"""The /metrics guard: 401 without an accepted token, 403 without the RBAC grant, the reviews
cached so a scrape every 15 s costs one TokenReview and one SubjectAccessReview a minute, and
the two review requests as kube-apiserver receives them."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import aiohttp

from nemotron_operator.controller.runtime.health import HealthState, start_servers
from nemotron_operator.controller.runtime.metrics_auth import MetricsGuard
from nemotron_operator.kube import ApiError, KubeClient
from nemotron_operator.kube.resources import SUBJECT_ACCESS_REVIEWS, TOKEN_REVIEWS
from nemotron_operator.kube.reviews import ReviewedUser, review_access, review_token

PROMETHEUS = ReviewedUser(
    "system:serviceaccount:monitoring:prometheus",
    uid="u-1",
    groups=("system:serviceaccounts", "system:authenticated"),
)


class Reviews:
    """Answers like kube-apiserver's: ``users`` maps a token to its user, ``allowed`` the
    usernames RBAC lets GET /metrics. Counts the calls."""

    def __init__(self) -> None:
        self.users = {"good": PROMETHEUS, "nobody": ReviewedUser("system:serviceaccount:x:y")}
        self.allowed = {PROMETHEUS.username}
        self.token_reviews = 0
        self.access_reviews: list[tuple[str, str, str]] = []
        self.fail: ApiError | None = None
        self.held: asyncio.Event | None = None  # set: the review answers

    async def token(self, token: str) -> ReviewedUser | None:
        self.token_reviews += 1
        if self.held is not None:
            await self.held.wait()
        if self.fail is not None:
            raise self.fail
        return self.users.get(token)

    async def access(self, user: ReviewedUser, path: str, verb: str) -> bool:
        self.access_reviews.append((user.username, path, verb))
        return user.username in self.allowed and path == "/metrics" and verb == "get"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def guard_with(reviews: Reviews, clock: Clock) -> MetricsGuard:
    return MetricsGuard(reviews.token, reviews.access, clock=clock)


async def test_no_token_is_401_without_asking_the_api_server() -> None:
    reviews = Reviews()
    guard = guard_with(reviews, Clock())
    for header in (None, "", "Basic dXNlcjpwYXNz", "Bearer ", "Bearer"):
        decision = await guard.decide(header, path="/metrics", method="GET")
        assert decision.status == 401, header
    assert reviews.token_reviews == 0
    assert reviews.access_reviews == []


async def test_unknown_token_401_unauthorized_user_403_authorized_200() -> None:
    reviews = Reviews()
    guard = guard_with(reviews, Clock())
    unknown = await guard.decide("Bearer stolen", path="/metrics", method="GET")
    forbidden = await guard.decide("Bearer nobody", path="/metrics", method="GET")
    allowed = await guard.decide("bearer good", path="/metrics", method="GET")
    assert (unknown.status, forbidden.status, allowed.status) == (401, 403, 200)
    assert 'user "system:serviceaccount:x:y" cannot get path "/metrics"' in forbidden.reason
    # The SubjectAccessReview asks for the HTTP method as the lower-case RBAC verb.
    assert reviews.access_reviews == [
        ("system:serviceaccount:x:y", "/metrics", "get"),
        (PROMETHEUS.username, "/metrics", "get"),
    ]


async def test_a_scrape_every_15_s_costs_two_reviews_a_minute() -> None:
    reviews, clock = Reviews(), Clock()
    guard = guard_with(reviews, clock)
    statuses = []
    for _ in range(8):  # two minutes of scrapes
        statuses.append((await guard.decide("Bearer good", path="/metrics", method="GET")).status)
        clock.now += 15
    assert statuses == [200] * 8
    assert reviews.token_reviews == 2
    assert len(reviews.access_reviews) == 2


async def test_a_refusal_is_cached_briefly_and_a_new_grant_is_seen() -> None:
    reviews, clock = Reviews(), Clock()
    guard = guard_with(reviews, clock)
    assert (await guard.decide("Bearer nobody", path="/metrics", method="GET")).status == 403
    reviews.allowed.add("system:serviceaccount:x:y")  # RBAC granted meanwhile
    clock.now += 5
    assert (await guard.decide("Bearer nobody", path="/metrics", method="GET")).status == 403
    clock.now += 6
    assert (await guard.decide("Bearer nobody", path="/metrics", method="GET")).status == 200
    assert reviews.token_reviews == 2


async def test_an_unreachable_api_server_is_500_and_not_cached() -> None:
    reviews = Reviews()
    reviews.fail = ApiError(0, "Unreachable", "connection refused")
    guard = guard_with(reviews, Clock())
    assert (await guard.decide("Bearer good", path="/metrics", method="GET")).status == 500
    reviews.fail = None
    assert (await guard.decide("Bearer good", path="/metrics", method="GET")).status == 200
    assert reviews.token_reviews == 2


async def test_concurrent_requests_with_one_token_share_one_review() -> None:
    reviews = Reviews()
    reviews.held = asyncio.Event()  # the first review is under way while the others arrive
    guard = guard_with(reviews, Clock())
    asked = asyncio.gather(
        *(guard.decide("Bearer good", path="/metrics", method="GET") for _ in range(5))
    )
    for _ in range(10):
        await asyncio.sleep(0)
    reviews.held.set()
    decisions = await asked
    assert [d.status for d in decisions] == [200] * 5
    assert reviews.token_reviews == 1
    assert len(reviews.access_reviews) == 1


async def test_the_cache_is_bounded() -> None:
    reviews, clock = Reviews(), Clock()
    guard = MetricsGuard(reviews.token, reviews.access, clock=clock, max_entries=3)
    for i in range(5):
        await guard.decide(f"Bearer t{i}", path="/metrics", method="GET")
    await guard.decide("Bearer t0", path="/metrics", method="GET")  # evicted: asked again
    await guard.decide("Bearer t4", path="/metrics", method="GET")  # kept: not asked
    assert reviews.token_reviews == 6


class RecordingClient:
    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers
        self.created: list[tuple[str, str | None, dict[str, Any]]] = []

    async def create(self, resource: Any, namespace: str | None, obj: dict[str, Any]) -> Any:
        self.created.append((resource.plural, namespace, obj))
        return self.answers[resource.plural]


async def test_the_review_requests_kube_apiserver_receives() -> None:
    user = {"username": PROMETHEUS.username, "uid": "u-1", "groups": list(PROMETHEUS.groups),
            "extra": {"authentication.kubernetes.io/pod-name": ["prometheus-0"]}}  # fmt: skip
    client = RecordingClient(
        {
            "tokenreviews": {"status": {"authenticated": True, "user": user}},
            "subjectaccessreviews": {"status": {"allowed": True}},
        }
    )
    kube = cast(KubeClient, client)
    reviewed = await review_token(kube, "tok")
    assert reviewed is not None
    assert reviewed.username == PROMETHEUS.username
    assert await review_access(kube, reviewed, path="/metrics", verb="get")
    (_, ns1, token_body), (_, ns2, access_body) = client.created
    assert ns1 is None
    assert ns2 is None
    assert token_body == {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview",
        "spec": {"token": "tok"},
    }
    assert access_body == {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": PROMETHEUS.username,
            "uid": "u-1",
            "groups": list(PROMETHEUS.groups),
            "extra": {"authentication.kubernetes.io/pod-name": ["prometheus-0"]},
            "nonResourceAttributes": {"path": "/metrics", "verb": "get"},
        },
    }
    assert (TOKEN_REVIEWS.plural, SUBJECT_ACCESS_REVIEWS.plural) == (
        "tokenreviews",
        "subjectaccessreviews",
    )
    refused = RecordingClient({"tokenreviews": {"status": {"authenticated": False}}})
    assert await review_token(cast(KubeClient, refused), "expired") is None


async def test_the_server_guards_metrics_but_not_healthz() -> None:
    reviews = Reviews()
    state = HealthState(stale_after=60, expected_watchers=0)
    state.resynced()
    runner, health, metrics = await start_servers(
        state,
        host="127.0.0.1",
        health_port=0,
        metrics_port=0,
        guard=guard_with(reviews, Clock()),
    )
    try:
        async with aiohttp.ClientSession() as session:
            base = f"http://127.0.0.1:{metrics}/metrics"
            async with session.get(base) as response:
                assert response.status == 401
                assert response.headers["WWW-Authenticate"] == "Bearer"
            async with session.get(base, headers={"Authorization": "Bearer nobody"}) as response:
                assert response.status == 403
            async with session.get(base, headers={"Authorization": "Bearer good"}) as response:
                assert response.status == 200
                assert "# TYPE" in await response.text()
            async with session.get(f"http://127.0.0.1:{health}/healthz") as response:
                assert response.status == 200
    finally:
        await runner.cleanup()
