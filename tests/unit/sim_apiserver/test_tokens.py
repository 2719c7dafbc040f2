"""ServiceAccount tokens: who a token is, and when it stops being anyone."""

from __future__ import annotations

import pytest

from nemotron_sim.apiserver import Store
from nemotron_sim.apiserver.resources import NAMESPACE_KEY
from nemotron_sim.apiserver.tokens import PODS, SERVICE_ACCOUNTS, TokenAuthority, UserInfo


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _ns(store: Store, name: str) -> None:
    store.create(NAMESPACE_KEY, {"metadata": {"name": name}})


def test_a_token_authenticates_as_its_service_account() -> None:
    store = Store()
    _ns(store, "ai")
    sa = store.create(SERVICE_ACCOUNTS, {"metadata": {"name": "op", "namespace": "ai"}})
    tokens = TokenAuthority(store)
    user = tokens.authenticate(tokens.issue("ai", "op"))
    assert user == UserInfo(
        username="system:serviceaccount:ai:op",
        groups=("system:serviceaccounts", "system:serviceaccounts:ai", "system:authenticated"),
        uid=sa["metadata"]["uid"],
        extra={},
    )
    assert user.service_account == ("ai", "op")


def test_unknown_and_expired_tokens_authenticate_nobody() -> None:
    clock = Clock()
    tokens = TokenAuthority(clock=clock)
    token = tokens.issue("ai", "op", expiration_seconds=60)
    assert tokens.authenticate("sim-sa-token.forged") is None
    clock.now += 59
    assert tokens.authenticate(token) is not None
    clock.now += 1
    assert tokens.authenticate(token) is None


def test_a_token_dies_with_its_service_account_and_is_not_revived_by_a_new_one() -> None:
    store = Store()
    _ns(store, "ai")
    store.create(SERVICE_ACCOUNTS, {"metadata": {"name": "op", "namespace": "ai"}})
    tokens = TokenAuthority(store)
    token = tokens.issue("ai", "op")
    store.delete(SERVICE_ACCOUNTS, "ai", "op")
    assert tokens.authenticate(token) is None
    store.create(SERVICE_ACCOUNTS, {"metadata": {"name": "op", "namespace": "ai"}})
    assert tokens.authenticate(token) is None


def test_a_pod_bound_token_names_its_pod_and_dies_with_it() -> None:
    store = Store()
    _ns(store, "ai")
    pod = store.create(PODS, {"metadata": {"name": "p", "namespace": "ai"}, "spec": {}})
    tokens = TokenAuthority(store)
    token = tokens.issue("ai", "default", bound_pod="p")  # no ServiceAccount object: allowed
    user = tokens.authenticate(token)
    assert user is not None
    assert user.extra == {
        "authentication.kubernetes.io/pod-name": ("p",),
        "authentication.kubernetes.io/pod-uid": (pod["metadata"]["uid"],),
    }
    store.delete(PODS, "ai", "p")
    assert tokens.authenticate(token) is None


def test_a_token_for_another_audience_is_not_accepted_by_the_api() -> None:
    tokens = TokenAuthority()
    assert tokens.authenticate(tokens.issue("ai", "op", audiences=["vault"])) is None
    both = tokens.issue(
        "ai", "op", audiences=["vault", "https://kubernetes.default.svc.cluster.local"]
    )
    assert tokens.authenticate(both) is not None


def test_a_non_positive_lifetime_is_refused() -> None:
    with pytest.raises(ValueError, match="expiration_seconds"):
        TokenAuthority().issue("ai", "op", expiration_seconds=0)
