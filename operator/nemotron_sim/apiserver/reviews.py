"""Requests answered at once and never stored: TokenRequest and the review kinds.

``POST .../serviceaccounts/SA/token`` (``kubectl create token``) issues a token through
:class:`~nemotron_sim.apiserver.tokens.TokenAuthority`; SelfSubjectAccessReview (``kubectl auth
can-i``), SelfSubjectRulesReview (``can-i --list``), SelfSubjectReview (``auth whoami``),
TokenReview, SubjectAccessReview and LocalSubjectAccessReview answer for the requester (or the
subject they name) from :class:`~nemotron_sim.apiserver.authz.RbacAuthorizer`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from nemotron_sim.apiserver.authz import RbacAuthorizer
from nemotron_sim.apiserver.errors import (
    ApiError,
    ConflictError,
    InvalidError,
    NotFoundError,
    bad_request,
)
from nemotron_sim.apiserver.objects import meta
from nemotron_sim.apiserver.rbac import Attributes, Obj
from nemotron_sim.apiserver.resources import CREATE_ONLY, ResourceInfo
from nemotron_sim.apiserver.store import Store
from nemotron_sim.apiserver.tokens import (
    API_AUDIENCE,
    PODS,
    SERVICE_ACCOUNTS,
    TokenAuthority,
    UserInfo,
)
from nemotron_sim.apiserver.wire import json_response, read_body

MIN_TOKEN_SECONDS = 600  # kube-apiserver refuses shorter TokenRequests
MAX_TOKEN_SECONDS = 2**32
DEFAULT_TOKEN_SECONDS = 3600


def is_review(info: ResourceInfo, subresource: str | None) -> bool:
    """Whether a POST to this resource is answered here rather than stored."""
    return info.verbs == CREATE_ONLY or (info.key == SERVICE_ACCOUNTS and subresource == "token")


def _timestamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _user_info(user: UserInfo) -> dict[str, Any]:
    out: dict[str, Any] = {"username": user.username, "groups": list(user.groups)}
    if user.uid:
        out["uid"] = user.uid
    if user.extra:
        out["extra"] = {k: list(v) for k, v in user.extra.items()}
    return out


def _attributes(spec: dict[str, Any]) -> Attributes:
    resource = spec.get("resourceAttributes")
    if isinstance(resource, dict):
        return Attributes(
            verb=resource.get("verb") or "",
            api_group=resource.get("group") or "",
            api_version=resource.get("version") or "",
            resource=resource.get("resource") or "",
            subresource=resource.get("subresource") or "",
            name=resource.get("name") or "",
            namespace=resource.get("namespace") or "",
        )
    other = spec.get("nonResourceAttributes")
    if isinstance(other, dict):
        return Attributes(
            verb=other.get("verb") or "", resource_request=False, path=other.get("path") or ""
        )
    raise bad_request("spec: exactly one of resourceAttributes or nonResourceAttributes")


def _rule_infos(rules: list[Obj]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A rules review's resourceRules and nonResourceRules, split as kube-apiserver splits them."""
    resource_rules, url_rules = [], []
    for rule in rules:
        if rule.get("resources"):
            resource_rules.append(
                {
                    "verbs": list(rule.get("verbs") or []),
                    "apiGroups": list(rule.get("apiGroups") or []),
                    "resources": list(rule["resources"]),
                    **(
                        {"resourceNames": list(rule["resourceNames"])}
                        if rule.get("resourceNames")
                        else {}
                    ),
                }
            )
        if rule.get("nonResourceURLs"):
            url_rules.append(
                {
                    "verbs": list(rule.get("verbs") or []),
                    "nonResourceURLs": list(rule["nonResourceURLs"]),
                }
            )
    return resource_rules, url_rules


class Reviews:
    def __init__(self, store: Store, tokens: TokenAuthority, authorizer: RbacAuthorizer) -> None:
        self.store, self.tokens, self.authorizer = store, tokens, authorizer

    async def answer(
        self,
        request: web.Request,
        info: ResourceInfo,
        namespace: str | None,
        name: str | None,
        user: UserInfo,
    ) -> web.Response:
        if request.method != "POST":
            raise ApiError(405, "the server does not allow this method on the requested resource")
        body = await read_body(request)
        if not isinstance(body, dict):
            raise bad_request("the request body must be a JSON object")
        if info.key == SERVICE_ACCOUNTS:
            return json_response(self.token_request(namespace or "", name or "", body), 201)
        spec: dict[str, Any] = body["spec"] if isinstance(body.get("spec"), dict) else {}
        kind = info.kind
        if kind == "SelfSubjectReview":
            status = {"userInfo": _user_info(user)}
        elif kind == "TokenReview":
            status = self._token_review(spec)
        elif kind == "SelfSubjectRulesReview":
            status = self._rules_review(user, spec.get("namespace") or "")
        elif kind == "SelfSubjectAccessReview":
            status = self._access_review(user, _attributes(spec))
        else:  # SubjectAccessReview, LocalSubjectAccessReview
            attrs = _attributes(spec)
            if namespace is not None and attrs.namespace != namespace:
                raise bad_request(
                    f"spec.resourceAttributes.namespace must match the namespace of the "
                    f"request ({namespace!r})"
                )
            subject = UserInfo(
                spec.get("user") or "", tuple(spec.get("groups") or ()), spec.get("uid") or ""
            )
            status = self._access_review(subject, attrs)
        answer = {
            "kind": kind,
            "apiVersion": info.key.api_version,
            "metadata": {
                "creationTimestamp": None,
                **({"namespace": namespace} if namespace else {}),
            },
            "spec": spec,
            "status": status,
        }
        return json_response(answer, 201)

    def _access_review(self, user: UserInfo, attrs: Attributes) -> dict[str, Any]:
        decision = self.authorizer.authorize(user, attrs)
        status: dict[str, Any] = {"allowed": decision.allowed}
        if decision.reason:
            status["reason"] = decision.reason
        return status

    def _rules_review(self, user: UserInfo, namespace: str) -> dict[str, Any]:
        rules, errors = self.authorizer.rules(user, namespace)
        resource_rules, url_rules = _rule_infos(rules)
        status: dict[str, Any] = {
            "resourceRules": resource_rules,
            "nonResourceRules": url_rules,
            "incomplete": bool(errors),
        }
        if errors:
            status["evaluationError"] = ", ".join(errors)
        return status

    def _token_review(self, spec: dict[str, Any]) -> dict[str, Any]:
        user = self.tokens.authenticate(str(spec.get("token") or ""))
        if user is None:
            return {"authenticated": False, "error": "invalid bearer token"}
        return {"authenticated": True, "user": _user_info(user), "audiences": [API_AUDIENCE]}

    def token_request(self, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        """A TokenRequest for ServiceAccount ``namespace/name``, answered as kube-apiserver does."""
        if self.store.peek(SERVICE_ACCOUNTS, namespace, name) is None:
            raise NotFoundError("serviceaccounts", "", name)
        spec = dict(body.get("spec") or {})
        seconds = spec.get("expirationSeconds") or DEFAULT_TOKEN_SECONDS
        problem = None
        if not isinstance(seconds, int) or seconds < MIN_TOKEN_SECONDS:
            problem = "may not specify a duration less than 10 minutes"
        elif seconds > MAX_TOKEN_SECONDS:
            problem = "may not specify a duration larger than 2^32 seconds"
        if problem:
            raise InvalidError(
                "TokenRequest",
                "authentication.k8s.io",
                name,
                [("spec.expirationSeconds", f"Invalid value: {seconds}: {problem}")],
            )
        bound = spec.get("boundObjectRef") or None
        pod = self._bound_pod(namespace, bound) if bound else None
        issued = self.tokens.request(
            namespace,
            name,
            expiration_seconds=seconds,
            audiences=[a for a in spec.get("audiences") or [] if a],
            bound_pod=pod,
        )
        spec.update(audiences=list(issued.audiences), expirationSeconds=seconds)
        if not bound:
            spec.pop("boundObjectRef", None)
        return {
            "kind": "TokenRequest",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"name": name, "namespace": namespace, "creationTimestamp": None},
            "spec": spec,
            "status": {"token": issued.token, "expirationTimestamp": _timestamp(issued.expires)},
        }

    def _bound_pod(self, namespace: str, ref: dict[str, Any]) -> str:
        if ref.get("kind") != "Pod":
            raise ApiError(
                400,
                f"the simulated API server binds tokens to Pods only, not {ref.get('kind')!r}",
            )
        pod_name = ref.get("name") or ""
        pod = self.store.peek(PODS, namespace, pod_name)
        if pod is None:
            raise NotFoundError("pods", "", pod_name)
        if ref.get("uid") and ref["uid"] != meta(pod).get("uid"):
            raise ConflictError(
                "pods",
                "",
                pod_name,
                f"the UID in the bound object reference ({ref['uid']}) does not match the UID "
                "in record. The object might have been deleted and then recreated",
            )
        return pod_name
