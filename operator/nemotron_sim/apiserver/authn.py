"""Who is asking, and may they: the gate every HTTP request passes before it is served.

- ``Authorization: Bearer TOKEN``: the token's ServiceAccount (:mod:`.tokens`), or 401
  ``Unauthorized`` if the token is unknown, expired or no longer bound.
- ``tokens.admin_token`` (in the kubeconfig the simulator writes) and no ``Authorization``
  header at all (tests and raw HTTP clients send none): the cluster admin, ``system:admin`` in
  ``system:masters``. A real cluster would treat a request without credentials as
  ``system:anonymous``.
- ``Impersonate-User`` / ``Impersonate-Group`` / ``Impersonate-Uid``: act as someone else, if the
  requester may ``impersonate`` them (the admin may), as kube-apiserver's impersonation filter.

The admitted user is stored on the request under :data:`USER`. The admin without impersonation
headers costs two header lookups.
"""

from __future__ import annotations

from aiohttp import web

from nemotron_sim.apiserver import rbac
from nemotron_sim.apiserver.authz import RbacAuthorizer
from nemotron_sim.apiserver.errors import ApiError
from nemotron_sim.apiserver.rbac import Attributes
from nemotron_sim.apiserver.tokens import ADMIN, AUTHENTICATED, SA_PREFIX, TokenAuthority, UserInfo

USER = web.RequestKey("nemotron_sim.user", UserInfo)
UNAUTHENTICATED = "system:unauthenticated"
_IMPERSONATE = ("Impersonate-User", "Impersonate-Group", "Impersonate-Uid")


def forbidden(attrs: Attributes, username: str, reason: str = "") -> ApiError:
    return ApiError(
        403,
        rbac.forbidden_message(attrs, username, reason),
        reason="Forbidden",
        details=rbac.forbidden_details(attrs),
    )


class Gate:
    def __init__(self, tokens: TokenAuthority, authorizer: RbacAuthorizer) -> None:
        self.tokens, self.authorizer = tokens, authorizer

    def admit(self, request: web.Request) -> UserInfo:
        """The request's user, if it may do what it asks; else a 401 or 403 ``ApiError``."""
        headers = request.headers
        header = headers.get("Authorization")
        if header is None:
            user = ADMIN
        else:
            scheme, _, token = header.partition(" ")
            found = self.tokens.authenticate(token.strip()) if scheme.lower() == "bearer" else None
            if found is None:
                raise ApiError(401, "Unauthorized", reason="Unauthorized")
            user = found
        if any(name in headers for name in _IMPERSONATE):
            user = self._impersonate(user, request)
        if user is not ADMIN:
            attrs = rbac.request_attributes(request.method, request.path, request.query)
            decision = self.authorizer.authorize(user, attrs)
            if not decision.allowed:
                raise forbidden(attrs, user.username, decision.reason)
        return user

    def _impersonate(self, actor: UserInfo, request: web.Request) -> UserInfo:
        headers = request.headers
        username = headers.get("Impersonate-User", "")
        groups = headers.getall("Impersonate-Group", [])
        uid = headers.get("Impersonate-Uid", "")
        if not username:
            raise ApiError(
                400, "requested impersonation of groups or uid without impersonating a user"
            )
        checks: list[Attributes] = []
        if username.startswith(SA_PREFIX):
            namespace, _, name = username[len(SA_PREFIX) :].partition(":")
            checks.append(_impersonation("serviceaccounts", name, namespace))
            if not groups:
                groups = ["system:serviceaccounts", f"system:serviceaccounts:{namespace}"]
        else:
            checks.append(_impersonation("users", username))
        checks += [
            _impersonation("groups", group) for group in headers.getall("Impersonate-Group", [])
        ]
        if uid:
            checks.append(_impersonation("uids", uid, api_group="authentication.k8s.io"))
        for attrs in checks:
            decision = self.authorizer.authorize(actor, attrs)
            if not decision.allowed:
                raise forbidden(attrs, actor.username, decision.reason)
        if username != "system:anonymous" and not {AUTHENTICATED, UNAUTHENTICATED} & set(groups):
            groups = [*groups, AUTHENTICATED]
        return UserInfo(username, tuple(groups), uid)


def _impersonation(
    resource: str, name: str, namespace: str = "", api_group: str = ""
) -> Attributes:
    return Attributes(
        verb="impersonate",
        api_group=api_group,
        api_version="v1",
        resource=resource,
        name=name,
        namespace=namespace,
    )
