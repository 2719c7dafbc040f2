"""ServiceAccount tokens: who a bearer token belongs to (a simulation of bound SA tokens).

``SimApiServer.tokens`` is the cluster's :class:`TokenAuthority`. The TokenRequest API
(``POST /api/v1/namespaces/NS/serviceaccounts/SA/token``, what ``kubectl create token`` sends)
issues through it, and so does an in-process kubelet for the pods it starts::

    token = api.tokens.issue("ai", "nemotron-operator", expiration_seconds=3600,
                             bound_pod="nemotron-operator-5d9c-abcde")
    api.tokens.authenticate(token)
    # UserInfo(username="system:serviceaccount:ai:nemotron-operator",
    #          groups=("system:serviceaccounts", "system:serviceaccounts:ai",
    #                  "system:authenticated"), uid=<the ServiceAccount's uid>, extra={...})

``admin_token`` authenticates as :data:`ADMIN` (``system:admin`` in ``system:masters``), the
identity of the kubeconfig the simulator writes. Both methods are synchronous and only read
the store: call them from the server's event loop (in-process controllers already run there;
``ServerThread.call`` from other threads). A client sends the token as ``Authorization: Bearer
<token>`` over HTTPS (``SimApiServer.secure_url``; kubectl sends no token over HTTP, so write
its kubeconfig with ``SimApiServer.kubeconfig(path, token=...)``); the API answers 401 when
:meth:`TokenAuthority.authenticate` returns ``None``.

As kube-apiserver does for bound tokens, a token stops authenticating when it expires, when the
ServiceAccount it was issued for (if it existed then) is deleted or recreated, when the pod it is
bound to is deleted, or when none of its audiences is the API server's. Unlike kube-apiserver,
:meth:`TokenAuthority.issue` does not require the ServiceAccount to exist (the simulated cluster
has no ServiceAccount controller creating ``default`` in each namespace); the HTTP TokenRequest
API does (404). Tokens are opaque random strings, not signed JWTs, and live in memory only.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from nemotron_sim.apiserver.objects import meta
from nemotron_sim.kubeapi.resources import ResourceKey

if TYPE_CHECKING:
    from nemotron_sim.apiserver.store import Store

API_AUDIENCE = "https://kubernetes.default.svc.cluster.local"  # kube-apiserver's default
SERVICE_ACCOUNTS = ResourceKey("", "v1", "serviceaccounts")
PODS = ResourceKey("", "v1", "pods")
AUTHENTICATED = "system:authenticated"
SA_PREFIX = "system:serviceaccount:"
_TOKEN_PREFIX = "sim-sa-token."  # noqa: S105 - a prefix, not a secret


@dataclass(frozen=True)
class UserInfo:
    """An authenticated identity, as ``user.Info`` in k8s.io/apiserver."""

    username: str
    groups: tuple[str, ...] = (AUTHENTICATED,)
    uid: str = ""
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def service_account(self) -> tuple[str, str] | None:
        """(namespace, name) when this user is a ServiceAccount."""
        if not self.username.startswith(SA_PREFIX):
            return None
        namespace, _, name = self.username[len(SA_PREFIX) :].partition(":")
        return (namespace, name) if namespace and name else None


# The cluster admin: kube-apiserver lets the system:masters group do anything, before RBAC.
SUPERUSERS = "system:masters"
ADMIN = UserInfo("system:admin", (SUPERUSERS, AUTHENTICATED))


def service_account_user(
    namespace: str, name: str, *, uid: str = "", extra: Mapping[str, tuple[str, ...]] | None = None
) -> UserInfo:
    return UserInfo(
        username=f"{SA_PREFIX}{namespace}:{name}",
        groups=("system:serviceaccounts", f"system:serviceaccounts:{namespace}", AUTHENTICATED),
        uid=uid,
        extra=dict(extra or {}),
    )


@dataclass(frozen=True)
class _Grant:
    namespace: str
    service_account: str
    sa_uid: str | None  # the ServiceAccount's uid when it existed at issue time
    expires: float
    audiences: tuple[str, ...]
    pod: tuple[str, str | None] | None  # (name, uid) of the bound pod


@dataclass(frozen=True)
class IssuedToken:
    token: str
    expires: float  # seconds since the epoch
    audiences: tuple[str, ...]


class TokenAuthority:
    """Issues bearer tokens for ServiceAccounts and tells whose a token is."""

    def __init__(
        self, store: Store | None = None, *, clock: Callable[[], float] = time.time
    ) -> None:
        self._store, self._clock = store, clock
        self._grants: dict[str, _Grant] = {}
        # A static token for ADMIN (as a --token-auth-file entry): over HTTPS kubectl prompts for
        # a password when the kubeconfig has no credentials at all.
        self.admin_token = _TOKEN_PREFIX + "admin." + secrets.token_urlsafe(32)

    def issue(
        self,
        namespace: str,
        service_account: str,
        *,
        expiration_seconds: int = 3600,
        audiences: Sequence[str] = (),
        bound_pod: str | None = None,
    ) -> str:
        """A bearer token for ``system:serviceaccount:NAMESPACE:SERVICE_ACCOUNT``."""
        return self.request(
            namespace,
            service_account,
            expiration_seconds=expiration_seconds,
            audiences=audiences,
            bound_pod=bound_pod,
        ).token

    def request(
        self,
        namespace: str,
        service_account: str,
        *,
        expiration_seconds: int = 3600,
        audiences: Sequence[str] = (),
        bound_pod: str | None = None,
    ) -> IssuedToken:
        """As :meth:`issue`, with the expiry and audiences a TokenRequest reports."""
        if expiration_seconds <= 0:
            raise ValueError(f"expiration_seconds must be positive, got {expiration_seconds}")
        sa = self._peek(SERVICE_ACCOUNTS, namespace, service_account)
        pod = None
        if bound_pod is not None:
            pod_obj = self._peek(PODS, namespace, bound_pod)
            pod = (bound_pod, None if pod_obj is None else meta(pod_obj).get("uid"))
        grant = _Grant(
            namespace=namespace,
            service_account=service_account,
            sa_uid=None if sa is None else meta(sa).get("uid"),
            expires=self._clock() + expiration_seconds,
            audiences=tuple(audiences) or (API_AUDIENCE,),
            pod=pod,
        )
        token = _TOKEN_PREFIX + secrets.token_urlsafe(32)
        self._grants[token] = grant
        return IssuedToken(token, grant.expires, grant.audiences)

    def authenticate(self, token: str) -> UserInfo | None:
        """The token's user, or ``None`` if it is unknown, expired or no longer bound."""
        grant = self._grants.get(token)
        if grant is None:
            return ADMIN if token == self.admin_token else None
        if self._clock() >= grant.expires:
            del self._grants[token]
            return None
        if API_AUDIENCE not in grant.audiences:
            return None
        sa_uid = ""
        if grant.sa_uid is not None:
            sa = self._peek(SERVICE_ACCOUNTS, grant.namespace, grant.service_account)
            if sa is None or meta(sa).get("uid") != grant.sa_uid:
                return None
            sa_uid = grant.sa_uid
        extra: dict[str, tuple[str, ...]] = {}
        if grant.pod is not None:
            name, uid = grant.pod
            pod = self._peek(PODS, grant.namespace, name)
            if uid is not None and (pod is None or meta(pod).get("uid") != uid):
                return None
            extra["authentication.kubernetes.io/pod-name"] = (name,)
            if uid:
                extra["authentication.kubernetes.io/pod-uid"] = (uid,)
        return service_account_user(grant.namespace, grant.service_account, uid=sa_uid, extra=extra)

    def _peek(self, key: ResourceKey, namespace: str, name: str) -> dict[str, object] | None:
        return None if self._store is None else self._store.peek(key, namespace, name)
