"""The REST front: Kubernetes paths, verbs and content types, mapped onto :class:`Store`."""

from __future__ import annotations

import base64
import json
import logging
from collections import deque
from dataclasses import dataclass
from typing import Any

import yaml
from aiohttp import web

from nemotron_operator.sim.apiserver import admission, discovery, openapi, patches, tables
from nemotron_operator.sim.apiserver.errors import ApiError, NotFoundError, bad_request
from nemotron_operator.sim.apiserver.faults import Fault, FaultInjector, sleep_for
from nemotron_operator.sim.apiserver.objects import meta
from nemotron_operator.sim.apiserver.resources import ResourceInfo, ResourceKey
from nemotron_operator.sim.apiserver.scale import scale_of, with_scale
from nemotron_operator.sim.apiserver.store import Store
from nemotron_operator.sim.apiserver.watch import Watches

log = logging.getLogger(__name__)

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"


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


def _json(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    body = json.dumps(data, separators=(",", ":"))
    return web.Response(text=body, status=status, content_type="application/json", headers=headers)


def _versioned(obj: dict[str, Any], key: ResourceKey) -> dict[str, Any]:
    if obj.get("apiVersion") == key.api_version:
        return obj
    return {**obj, "apiVersion": key.api_version}


def _wants_table(request: web.Request) -> bool:
    return "as=Table" in request.headers.get("Accept", "")


class ApiHandler:
    """Answers every request: faults first, then discovery, then resources."""

    def __init__(self, store: Store, faults: FaultInjector, watches: Watches) -> None:
        self.store, self.faults, self.watches = store, faults, watches
        self.journal: deque[tuple[str, str, int]] = deque(maxlen=10_000)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if request.path.startswith("/_sim/"):
            return await self._sim(request)
        is_watch = request.query.get("watch") in ("true", "1") or "/watch/" in request.path
        fault = self.faults.take(request.method, request.path_qs, watch=is_watch)
        if fault is not None and not fault.watch_only:
            await sleep_for(fault)
            if fault.reset:
                self.journal.append((request.method, request.path_qs, 0))
                return _reset(request)
            if fault.status:
                self.journal.append((request.method, request.path_qs, fault.status))
                return _fault_response(fault)
        mode = request.query.get("fieldValidation") or "Warn"
        if mode not in ("Strict", "Warn", "Ignore"):
            return _json(bad_request(f"invalid fieldValidation {mode!r}").status(), 400)
        admission.field_validation.set(mode)
        warned: list[str] = []
        admission.warnings.set(warned)
        try:
            response = await self._route(request, is_watch, fault)
            for text in warned if not response.prepared else []:
                response.headers.add("Warning", f'299 - "{_quote(text)}"')
        except ApiError as exc:
            response = _json(exc.status(), exc.code)
        except Exception as exc:  # a bug in the stand-in: say so, like a real 500 would
            log.exception("simulated API server failed on %s %s", request.method, request.path)
            response = _json(ApiError(500, f"simulated API server error: {exc!r}").status(), 500)
        self.journal.append((request.method, request.path_qs, response.status))
        return response

    async def _route(
        self, request: web.Request, is_watch: bool, fault: Fault | None
    ) -> web.StreamResponse:
        path = request.path.rstrip("/") or "/"
        static = self._static(path)
        if static is not None:
            return static
        if path.startswith("/openapi/"):
            doc = openapi.document(self.store.resources, path, request.query.get("hash"))
            if doc is None:
                raise _no_such_path(path)
            return _json(doc)
        target = resolve(self.store, path)
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
            return _json(discovery.version())
        if path in ("/healthz", "/livez", "/readyz"):
            return web.Response(text="ok")
        if path == "/api":
            return _json(discovery.core_versions())
        if path == "/apis":
            return _json(discovery.group_list(registry))
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
        return _json(doc)

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
            return _json(scale_of(info, obj))
        if target.subresource not in (None, "status"):
            raise _no_such_path(request.path)
        return self._object(request, info, obj)

    def _object(
        self, request: web.Request, info: ResourceInfo, obj: dict[str, Any], status: int = 200
    ) -> web.Response:
        if _wants_table(request):
            include = request.query.get("includeObject", "Metadata")
            return _json(tables.table(info, [obj], include_object=include), status)
        return _json(_versioned(obj, info.key), status)

    def _list(self, request: web.Request, target: Target) -> web.Response:
        query, info = request.query, target.info
        items = self.store.scan(
            info.key, target.namespace, query.get("labelSelector"), query.get("fieldSelector")
        )
        list_meta: dict[str, Any] = {"resourceVersion": str(self.store.resource_version)}
        items = _paginate(items, query, list_meta)
        if _wants_table(request):
            include = query.get("includeObject", "Metadata")
            return _json(tables.table(info, items, include_object=include, list_meta=list_meta))
        return _json(
            {
                "kind": info.list_kind,
                "apiVersion": info.key.api_version,
                "metadata": list_meta,
                "items": [_versioned(o, info.key) for o in items],
            }
        )

    async def _post(self, request: web.Request, target: Target) -> web.Response:
        info, body = target.info, await _body(request)
        if target.name is not None:
            return self._pod_action(request, target, body)
        obj = self._with_namespace(body, target)
        created = self.store.create(info.key, obj, dry_run=_dry_run(request))
        return self._object(request, info, created, 201)

    async def _put(self, request: web.Request, target: Target) -> web.Response:
        info, body = target.info, await _body(request)
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
            updated = self.store.update(info, old, new, dry_run=_dry_run(request))
            return _json(scale_of(info, updated))
        replaced = self.store.replace(
            info.key, obj, subresource=target.subresource, dry_run=_dry_run(request)
        )
        return self._object(request, info, replaced)

    async def _patch(self, request: web.Request, target: Target) -> web.Response:
        info, ctype, body = target.info, request.content_type, await _body(request)
        if target.name is None:
            raise ApiError(405, "PATCH needs an object name")
        dry_run = _dry_run(request)
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
                dry_run=dry_run,
            )
            return self._object(request, info, applied)
        old = self._existing(target)
        base = scale_of(info, old) if target.subresource == "scale" else old
        new = _apply_patch(info, ctype, base, body)
        if target.subresource == "scale":
            updated = self.store.update(info, old, with_scale(info, old, new), dry_run=dry_run)
            return _json(scale_of(info, updated))
        if ctype != JSON_PATCH and "resourceVersion" not in meta(body):
            new["metadata"] = {**meta(new), "resourceVersion": meta(old)["resourceVersion"]}
        updated = self.store.update(info, old, new, subresource=target.subresource, dry_run=dry_run)
        return self._object(request, info, updated)

    async def _delete(self, request: web.Request, target: Target) -> web.Response:
        info, query = target.info, request.query
        options = await _body(request) if request.can_read_body else None
        options = options if isinstance(options, dict) else {}
        policy = options.get("propagationPolicy") or query.get("propagationPolicy")
        if options.get("orphanDependents") is True or query.get("orphanDependents") == "true":
            policy = "Orphan"
        dry_run = _dry_run(request) or "All" in (options.get("dryRun") or [])
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
                dry_run=dry_run,
            )
            if obj is None and target.name is not None:
                raise NotFoundError(info.key.plural, info.key.group, name)
            if obj is not None:
                deleted.append(obj)
        if target.name is not None:
            return self._object(request, info, deleted[0])
        return _json(
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

    def _pod_action(self, request: web.Request, target: Target, body: Any) -> web.Response:
        info, name = target.info, target.name or ""
        if info.key != ResourceKey("", "v1", "pods"):
            raise ApiError(405, f"POST is not supported on {info.key.plural}/{name}")
        pod = self._existing(target)
        if target.subresource == "binding":
            node = ((body or {}).get("target") or {}).get("name")
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
        return _json({"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201}, 201)

    async def _sim(self, request: web.Request) -> web.Response:
        """``/_sim/faults`` (GET, POST, DELETE, DELETE ``/{id}``) and ``/_sim/requests``."""
        parts = [p for p in request.path.split("/") if p]
        if parts[1:] == ["requests"] and request.method == "GET":
            return _json([{"method": m, "path": p, "status": s} for m, p, s in self.journal])
        if parts[1:2] != ["faults"]:
            raise web.HTTPNotFound()
        if request.method == "GET":
            return _json([f.to_dict() for f in self.faults.active()])
        if request.method == "POST":
            try:
                fault = self.faults.add(Fault.from_dict(await request.json()))
            except (ValueError, TypeError) as exc:
                return _json(bad_request(str(exc)).status(), 400)
            return _json(fault.to_dict(), 201)
        if request.method == "DELETE" and len(parts) == 3 and parts[2].isdigit():
            found = self.faults.remove(int(parts[2]))
            return _json({"removed": found}, 200 if found else 404)
        if request.method == "DELETE":
            self.faults.clear()
            return _json({"removed": "all"})
        raise web.HTTPMethodNotAllowed(request.method, ["GET", "POST", "DELETE"])


async def _body(request: web.Request) -> Any:
    ctype = request.content_type
    if "protobuf" in ctype or "cbor" in ctype:
        raise ApiError(
            415,
            f"the body of the request was in an unknown format - accepted media "
            f"types include: application/json, application/yaml, {MERGE}, "
            f"{JSON_PATCH}, {STRATEGIC}, {APPLY} (simulated API server: no {ctype})",
        )
    raw = await request.read()
    if not raw:
        return None
    try:
        if ctype in (APPLY, "application/yaml"):
            return yaml.safe_load(raw)
        return json.loads(raw)
    except (ValueError, yaml.YAMLError) as exc:
        raise bad_request(f"the request body is not valid {ctype}: {exc}") from None


def _apply_patch(info: ResourceInfo, ctype: str, old: dict[str, Any], body: Any) -> Any:
    if ctype == MERGE:
        if not isinstance(body, dict):
            raise bad_request("a merge patch must be a JSON object")
        return patches.merge_patch(old, body)
    if ctype == JSON_PATCH:
        return patches.json_patch(old, body)
    if ctype == STRATEGIC:
        if info.crd_name is not None:
            raise ApiError(
                415,
                "the body of the request was in an unknown format - accepted media types "
                f"include: {JSON_PATCH}, {MERGE}, {APPLY}",
            )
        if not isinstance(body, dict):
            raise bad_request("a strategic merge patch must be a JSON object")
        return patches.strategic_merge_patch(old, body)
    raise ApiError(415, f"unsupported patch type {ctype!r}")


def _dry_run(request: web.Request) -> bool:
    values = request.query.getall("dryRun", [])
    unknown = [v for v in values if v != "All"]
    if unknown:
        raise bad_request(f"unsupported dryRun value {unknown[0]!r}: only All is allowed")
    return bool(values)


def _paginate(
    items: list[dict[str, Any]], query: Any, list_meta: dict[str, Any]
) -> list[dict[str, Any]]:
    start = 0
    token = query.get("continue")
    if token:
        try:
            start = int(json.loads(base64.urlsafe_b64decode(token))["start"])
        except (ValueError, KeyError, TypeError):
            raise ApiError(400, "invalid continue token") from None
    limit = int(query.get("limit") or 0)
    if limit <= 0:
        return items[start:]
    end = start + limit
    if end < len(items):
        list_meta["continue"] = base64.urlsafe_b64encode(
            json.dumps({"start": end}).encode()
        ).decode()
        list_meta["remainingItemCount"] = len(items) - end
    return items[start:end]


def _fault_response(fault: Fault) -> web.Response:
    status = fault.status or 500
    headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else None
    return _json(ApiError(status, fault.message).status(), status, headers)


def _quote(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _reset(request: web.Request) -> web.Response:
    transport = request.transport
    if transport is not None:
        transport.abort()
    return web.Response(status=503)
