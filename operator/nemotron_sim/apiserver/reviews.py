"""Requests answered at once and never stored: TokenRequest and the review kinds.

``POST .../serviceaccounts/SA/token`` (``kubectl create token``) issues a token through
:class:`~nemotron_sim.apiserver.tokens.TokenAuthority`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from nemotron_sim.apiserver.errors import ApiError, ConflictError, InvalidError, NotFoundError
from nemotron_sim.apiserver.objects import meta
from nemotron_sim.apiserver.resources import CREATE_ONLY, ResourceInfo
from nemotron_sim.apiserver.store import Store
from nemotron_sim.apiserver.tokens import PODS, SERVICE_ACCOUNTS, TokenAuthority
from nemotron_sim.apiserver.wire import json_response, read_body

MIN_TOKEN_SECONDS = 600  # kube-apiserver refuses shorter TokenRequests
MAX_TOKEN_SECONDS = 2**32
DEFAULT_TOKEN_SECONDS = 3600


def is_review(info: ResourceInfo, subresource: str | None) -> bool:
    """Whether a POST to this resource is answered here rather than stored."""
    return info.verbs == CREATE_ONLY or (info.key == SERVICE_ACCOUNTS and subresource == "token")


def _timestamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Reviews:
    def __init__(self, store: Store, tokens: TokenAuthority) -> None:
        self.store, self.tokens = store, tokens

    async def answer(
        self, request: web.Request, info: ResourceInfo, namespace: str | None, name: str | None
    ) -> web.Response:
        if request.method != "POST":
            raise ApiError(405, "the server does not allow this method on the requested resource")
        body = await read_body(request)
        if not isinstance(body, dict):
            raise ApiError(400, "the request body must be a JSON object")
        if info.key == SERVICE_ACCOUNTS:
            return json_response(self.token_request(namespace or "", name or "", body), 201)
        raise ApiError(404, f"the server could not find the requested resource ({request.path})")

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
