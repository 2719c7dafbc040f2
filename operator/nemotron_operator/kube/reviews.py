"""The two questions the ``/metrics`` guard asks kube-apiserver, one named function each.

A TokenReview ("whose token is this?") and a SubjectAccessReview ("may this user GET the
non-resource URL /metrics?") are creates that store nothing: they change no cluster state, but
like every other request with a body they are built here, in ``kube/``, and nowhere else. The
same two reviews are what controller-runtime's ``filters.WithAuthenticationAndAuthorization``
and kube-rbac-proxy send. The chart grants ``create`` on both (``metrics.auth.enabled``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nemotron_operator.kube.client import KubeClient
from nemotron_operator.kube.resources import SUBJECT_ACCESS_REVIEWS, TOKEN_REVIEWS


@dataclass(frozen=True)
class ReviewedUser:
    """Who a token belongs to (TokenReview ``status.user``)."""

    username: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: dict[str, list[str]] = field(default_factory=dict)


async def review_token(kube: KubeClient, token: str) -> ReviewedUser | None:
    """The user a bearer token authenticates as, or None when kube-apiserver does not accept
    it (unknown, expired, revoked). The token is sent only in the body, never logged."""
    body = {
        "apiVersion": TOKEN_REVIEWS.api_version,
        "kind": TOKEN_REVIEWS.kind,
        "spec": {"token": token},
    }
    answer: Any = await kube.create(TOKEN_REVIEWS, None, body)
    status = (answer or {}).get("status") or {}
    if not status.get("authenticated"):
        return None
    user = status.get("user") or {}
    return ReviewedUser(
        username=str(user.get("username") or ""),
        uid=str(user.get("uid") or ""),
        groups=tuple(str(g) for g in user.get("groups") or ()),
        extra={str(k): [str(x) for x in v] for k, v in (user.get("extra") or {}).items()},
    )


async def review_access(kube: KubeClient, user: ReviewedUser, *, path: str, verb: str) -> bool:
    """Whether ``user`` may ``verb`` the non-resource URL ``path`` (RBAC ``nonResourceURLs``)."""
    spec: dict[str, Any] = {
        "user": user.username,
        "groups": list(user.groups),
        "nonResourceAttributes": {"path": path, "verb": verb},
    }
    if user.uid:
        spec["uid"] = user.uid
    if user.extra:
        spec["extra"] = user.extra
    body = {
        "apiVersion": SUBJECT_ACCESS_REVIEWS.api_version,
        "kind": SUBJECT_ACCESS_REVIEWS.kind,
        "spec": spec,
    }
    answer: Any = await kube.create(SUBJECT_ACCESS_REVIEWS, None, body)
    return bool(((answer or {}).get("status") or {}).get("allowed"))
