"""The REST front: Kubernetes paths, verbs and content types, mapped onto :class:`Store`."""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from nemotron_sim.apiserver import admission, discovery, openapi, podlogs, tables
from nemotron_sim.apiserver.authn import USER, Gate
from nemotron_sim.apiserver.errors import ApiError, NotFoundError, bad_request
from nemotron_sim.apiserver.faults import Fault, FaultInjector, sleep_for
from nemotron_sim.apiserver.objects import meta
from nemotron_sim.apiserver.resources import CRD_KEY, ResourceInfo
from nemotron_sim.apiserver.reviews import Reviews, is_review
from nemotron_sim.apiserver.scale import scale_of, with_scale
from nemotron_sim.apiserver.simcontrol import RequestCounts, sim_endpoint
from nemotron_sim.apiserver.store import Store
from nemotron_sim.apiserver.tokens import ADMIN
from nemotron_sim.apiserver.watch import Watches
from nemotron_sim.apiserver.wire import (
    APPLY,
    JSON_PATCH,
    dry_run,
    fault_response,
    json_response,
    paginate,
    patched,
    quote,
    read_body,
    reset,
)
from nemotron_sim.kubeapi.resources import ResourceKey

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Target:
    info: ResourceInfo
    namespace: str | None
    name: str | None
    subresource: str | None
    legacy_watch: bool = False


def resolve(store: Store, path: str) -> Target:
    parts = [p for p in path.split("/") if p]
    if parts[0] == "api" and len(parts) >= 3:
        group, version, rest = "", parts[1], parts[2:]
    elif parts[0] == "apis" and len(parts) >= 4:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        raise _no_such_path(path)
    legacy_watch = rest[0] == "watch"
    rest = rest[1:] if legacy_watch else rest
    namespace = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        candidate = store.resources.get(ResourceKey(group, version, rest[2]))
        if candidate is not None and candidate.namespaced:
            namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        raise _no_such_path(path)
    info = store.resources.get(ResourceKey(group, version, rest[0]))
    if info is None:
        raise _no_such_path(path)
    name = rest[1] if len(rest) > 1 else None
    if info.namespaced and name is not None and namespace is None:
        raise _no_such_path(path)
    subresource = rest[2] if len(rest) > 2 else None
    return Target(info, namespace, name, subresource, legacy_watch)


def _no_such_path(path: str) -> ApiError:
    return ApiError(404, f"the server could not find the requested resource ({path})")


def _versioned(obj: dict[str, Any], key: ResourceKey) -> dict[str, Any]:
    if obj.get("apiVersion") == key.api_version:
        return obj
    return {**obj, "apiVersion": key.api_version}


async def _options(request: web.Request) -> dict[str, Any]:
    """DeleteOptions, Eviction, Binding: a protobuf body (typed clients) we cannot read is
    taken as the defaults, since only a few of its fields matter here."""
    if not request.can_read_body:
        return {}
    try:
        body = await read_body(request)
    except ApiError as exc:
        if exc.code != 415:
            raise
        return {}
    return body if isinstance(body, dict) else {}


def _wants_table(request: web.Request) -> bool:
    return "as=Table" in request.headers.get("Accept", "")


class ApiHandler:
    """Answers every request: faults first, then discovery, then resources."""

    def __init__(
        self, store: Store, faults: FaultInjector, watches: Watches, reviews: Reviews, gate: Gate
    ) -> None:
        self.store, self.faults, self.watches, self.reviews = store, faults, watches, reviews
        self.gate = gate
        self.journal: deque[tuple[str, str, int]] = deque(maxlen=10_000)
        self.counts = RequestCounts()
        self.logs: podlogs.LogSource | None = None  # the kubelet's log files, for pods/log

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if request.path.startswith("/_sim/"):
            return await sim_endpoint(request, self.faults, self.journal, self.counts)
        is_watch = request.query.get("watch") in ("true", "1") or "/watch/" in request.path
        self.counts.record(request, watch=is_watch)
        fault = self.faults.take(request.method, request.path_qs, watch=is_watch)
        if fault is not None and not fault.watch_only:
            await sleep_for(fault)
            if fault.reset:
                self.journal.append((request.method, request.path_qs, 0))
                return reset(request)
            if fault.status:
                self.journal.append((request.method, request.path_qs, fault.status))
                return fault_response(fault)
        mode = request.query.get("fieldValidation") or "Warn"
        if mode not in ("Strict", "Warn", "Ignore"):
            return json_response(bad_request(f"invalid fieldValidation {mode!r}").status(), 400)
        admission.field_validation.set(mode)
        warned: list[str] = []
        admission.warnings.set(warned)
        try:
            response = await self._route(request, is_watch, fault)
            for text in warned if not response.prepared else []:
                response.headers.add("Warning", f'299 - "{quote(text)}"')
        except ApiError as exc:
            response = json_response(exc.status(), exc.code)
        except Exception as exc:  # a bug in the stand-in: say so, like a real 500 would
            log.exception("simulated API server failed on %s %s", request.method, request.path)
            response = json_response(
                ApiError(500, f"simulated API server error: {exc!r}").status(), 500
            )
        self.journal.append((request.method, request.path_qs, response.status))
        return response

    async def _route(
        self, request: web.Request, is_watch: bool, fault: Fault | None
    ) -> web.StreamResponse:
        request[USER] = self.gate.admit(request)  # 401/403 before anything is read or served
        path = request.path.rstrip("/") or "/"
        static = self._static(path)
        if static is not None:
            return static
        if path.startswith("/openapi/"):
            doc = openapi.document(
                self.store.resources,
                path,
                request.query.get("hash"),
                lambda name: self.store.peek(CRD_KEY, None, name),
            )
            if doc is None:
                raise _no_such_path(path)
            return json_response(doc)
        target = resolve(self.store, path)
        if is_review(target.info, target.subresource):
            user = request.get(USER, ADMIN)
            return await self.reviews.answer(
                request, target.info, target.namespace, target.name, user
            )
        if request.method == "GET":
            return await self._get(request, target, is_watch, fault)
        verbs = {"POST": self._post, "PUT": self._put, "PATCH": self._patch, "DELETE": self._delete}
        verb = verbs.get(request.method)
        if verb is None:
            raise ApiError(405, f"method {request.method} is not supported")
        return await verb(request, target)

    def _static(self, path: str) -> web.Response | None:
        registry = self.store.resources
        if path == "/version":
            return json_response(discovery.version())
        if path in ("/healthz", "/livez", "/readyz"):
            return web.Response(text="ok")
        if path == "/api":
            return json_response(discovery.core_versions())
        if path == "/apis":
            return json_response(discovery.group_list(registry))
        parts = [p for p in path.split("/") if p]
        doc = None
        if len(parts) == 2 and parts[0] == "api":
            doc = discovery.resource_list(registry, "", parts[1])
        elif len(parts) == 2 and parts[0] == "apis":
            doc = discovery.group(registry, parts[1])
        elif len(parts) == 3 and parts[0] == "apis":
            doc = discovery.resource_list(registry, parts[1], parts[2])
        else:
            return None
        if doc is None:
            raise _no_such_path(path)
        return json_response(doc)

    # --- verbs ------------------------------------------------------------------------------

    async def _get(
        self, request: web.Request, target: Target, is_watch: bool, fault: Fault | None
    ) -> web.StreamResponse:
        info = target.info
        if target.name is None:
            if is_watch or target.legacy_watch:
                return await self.watches.serve(
                    request, info, target.namespace, fault, _wants_table(request)
                )
            return self._list(request, target)
        obj = self.store.peek(info.key, target.namespace, target.name)
        if obj is None:
            raise NotFoundError(info.key.plural, info.key.group, target.name)
        if target.subresource == "scale":
            return json_response(scale_of(info, obj))
        if target.subresource == "log" and info.key == ResourceKey("", "v1", "pods"):
            return await podlogs.serve(request, obj, self.logs)
        if target.subresource not in (None, "status"):
            raise _no_such_path(request.path)
        return self._object(request, info, obj)

    def _object(
        self, request: web.Request, info: ResourceInfo, obj: dict[str, Any], status: int = 200
    ) -> web.Response:
        if _wants_table(request):
            include = request.query.get("includeObject", "Metadata")
            return json_response(tables.table(info, [obj], include_object=include), status)
        return json_response(_versioned(obj, info.key), status)

    def _list(self, request: web.Request, target: Target) -> web.Response:
        query, info = request.query, target.info
        items = self.store.scan(
            info.key, target.namespace, query.get("labelSelector"), query.get("fieldSelector")
        )
        list_meta: dict[str, Any] = {"resourceVersion": str(self.store.resource_version)}
        items = paginate(items, query, list_meta)
        if _wants_table(request):
            include = query.get("includeObject", "Metadata")
            return json_response(
                tables.table(info, items, include_object=include, list_meta=list_meta)
            )
        return json_response(
            {
                "kind": info.list_kind,
                "apiVersion": info.key.api_version,
                "metadata": list_meta,
                "items": [_versioned(o, info.key) for o in items],
            }
        )

    async def _post(self, request: web.Request, target: Target) -> web.Response:
        info = target.info
        if target.name is not None:
            return self._pod_action(request, target, await _options(request))
        obj = self._with_namespace(await read_body(request), target)
        created = self.store.create(info.key, obj, dry_run=dry_run(request), copy=False)
        return self._object(request, info, created, 201)

    async def _put(self, request: web.Request, target: Target) -> web.Response:
        info, body = target.info, await read_body(request)
        if target.name is None:
            raise ApiError(405, "PUT needs an object name")
        obj = self._with_namespace(body, target)
        if meta(obj).get("name") != target.name:
            raise bad_request(
                f"the name of the object ({meta(obj).get('name')}) does not match the name "
                f"on the URL ({target.name})"
            )
        if target.subresource == "scale":
            old = self._existing(target)
            new = with_scale(info, old, body)
            updated = self.store.update(info, old, new, dry_run=dry_run(request))
            return json_response(scale_of(info, updated))
        replaced = self.store.replace(
            info.key, obj, subresource=target.subresource, dry_run=dry_run(request)
        )
        return self._object(request, info, replaced)

    async def _patch(self, request: web.Request, target: Target) -> web.Response:
        info, ctype, body = target.info, request.content_type, await read_body(request)
        if target.name is None:
            raise ApiError(405, "PATCH needs an object name")
        is_dry_run = dry_run(request)
        if ctype == APPLY:
            if not isinstance(body, dict):
                raise bad_request("an apply patch must be an object")
            obj = self._with_namespace(body, target)
            obj["metadata"]["name"] = obj["metadata"].get("name") or target.name
            applied = self.store.apply(
                info.key,
                obj,
                field_manager=request.query.get("fieldManager", ""),
                force=request.query.get("force") in ("true", "1"),
                subresource=target.subresource,
                dry_run=is_dry_run,
                copy=False,  # only serialized
            )
            return self._object(request, info, applied)
        old = self._existing(target)
        base = scale_of(info, old) if target.subresource == "scale" else old
        new = patched(info, ctype, base, body)
        if target.subresource == "scale":
            updated = self.store.update(info, old, with_scale(info, old, new), dry_run=is_dry_run)
            return json_response(scale_of(info, updated))
        if ctype != JSON_PATCH and "resourceVersion" not in meta(body):
            new["metadata"] = {**meta(new), "resourceVersion": meta(old)["resourceVersion"]}
        updated = self.store.update(
            info, old, new, subresource=target.subresource, dry_run=is_dry_run, copy=False
        )
        return self._object(request, info, updated)

    async def _delete(self, request: web.Request, target: Target) -> web.Response:
        info, query = target.info, request.query
        options = await _options(request)
        policy = options.get("propagationPolicy") or query.get("propagationPolicy")
        if options.get("orphanDependents") is True or query.get("orphanDependents") == "true":
            policy = "Orphan"
        is_dry_run = dry_run(request) or "All" in (options.get("dryRun") or [])
        grace = options.get("gracePeriodSeconds", query.get("gracePeriodSeconds"))
        names = (
            [target.name]
            if target.name is not None
            else [
                meta(o)["name"]
                for o in self.store.scan(
                    info.key,
                    target.namespace,
                    query.get("labelSelector"),
                    query.get("fieldSelector"),
                )
            ]
        )
        deleted = []
        for name in names:
            obj = self.store.delete(
                info.key,
                target.namespace,
                name,
                propagation=policy,
                preconditions=options.get("preconditions"),
                dry_run=is_dry_run,
                grace_period=None if grace is None else int(grace),
            )
            if obj is None and target.name is not None:
                raise NotFoundError(info.key.plural, info.key.group, name)
            if obj is not None:
                deleted.append(obj)
        if target.name is not None:
            return self._object(request, info, deleted[0])
        return json_response(
            {
                "kind": info.list_kind,
                "apiVersion": info.key.api_version,
                "metadata": {"resourceVersion": str(self.store.resource_version)},
                "items": deleted,
            }
        )

    # --- helpers ----------------------------------------------------------------------------

    def _existing(self, target: Target) -> dict[str, Any]:
        key = target.info.key
        obj = self.store.peek(key, target.namespace, target.name or "")
        if obj is None:
            raise NotFoundError(key.plural, key.group, target.name or "")
        return obj

    def _with_namespace(self, body: Any, target: Target) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise bad_request("the request body must be a JSON object")
        md = body.get("metadata")
        md = dict(md) if isinstance(md, dict) else {}
        if target.info.namespaced:
            if md.get("namespace") not in (None, "", target.namespace):
                raise bad_request(
                    "the namespace of the provided object does not match the namespace sent "
                    "on the request"
                )
            md["namespace"] = target.namespace
        return {**body, "metadata": md}

    def _pod_action(
        self, request: web.Request, target: Target, body: dict[str, Any]
    ) -> web.Response:
        info, name = target.info, target.name or ""
        if info.key != ResourceKey("", "v1", "pods"):
            raise ApiError(405, f"POST is not supported on {info.key.plural}/{name}")
        pod = self._existing(target)
        if target.subresource == "binding":
            node = (body.get("target") or {}).get("name")
            if not node:
                raise bad_request("a Binding needs target.name")
            if (pod.get("spec") or {}).get("nodeName"):
                raise ApiError(
                    409,
                    f'pod {name} is already assigned to node "{pod["spec"]["nodeName"]}"',
                    reason="Conflict",
                )
            new = {**pod, "spec": {**pod.get("spec", {}), "nodeName": node}}
            self.store.update(info, pod, new)
        elif target.subresource == "eviction":
            self.store.delete(info.key, target.namespace, name)
        else:
            raise _no_such_path(request.path)
        return json_response(
            {"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201}, 201
        )
