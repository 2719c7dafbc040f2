"""Bodies and answers on the wire: content types, JSON responses, list pages, injected faults."""

from __future__ import annotations

import base64
import json
from typing import Any

import yaml
from aiohttp import web

from nemotron_sim.apiserver import patches
from nemotron_sim.apiserver.errors import ApiError, bad_request
from nemotron_sim.apiserver.faults import Fault
from nemotron_sim.apiserver.protobuf import decode_object
from nemotron_sim.apiserver.resources import ResourceInfo

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"
PROTOBUF = "application/vnd.kubernetes.protobuf"


def json_response(
    data: Any, status: int = 200, headers: dict[str, str] | None = None
) -> web.Response:
    body = json.dumps(data, separators=(",", ":"))
    return web.Response(text=body, status=status, content_type="application/json", headers=headers)


async def read_body(request: web.Request) -> Any:
    ctype = request.content_type
    if ctype == PROTOBUF:
        return decode_object(await request.read())
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
            return load_yaml(raw)
        return json.loads(raw)
    except (ValueError, yaml.YAMLError) as exc:
        raise bad_request(f"the request body is not valid {ctype}: {exc}") from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def load_yaml(raw: bytes) -> Any:
    """A YAML body. Clients (kubectl, kopf, client-go) send apply patches as JSON, which is
    YAML too: it is read as JSON (as the API server does), anything else with libyaml."""
    if raw.lstrip()[:1] in (b"{", b"["):
        try:
            return json.loads(raw, parse_constant=_no_constant)
        except ValueError:
            pass  # flow-style YAML, or JSON's NaN/Infinity, which YAML reads as strings
    return yaml.load(raw, Loader=_LOADER)  # noqa: S506 - a safe loader


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def patched(info: ResourceInfo, ctype: str, old: dict[str, Any], body: Any) -> Any:
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


def dry_run(request: web.Request) -> bool:
    values = request.query.getall("dryRun", [])
    unknown = [v for v in values if v != "All"]
    if unknown:
        raise bad_request(f"unsupported dryRun value {unknown[0]!r}: only All is allowed")
    return bool(values)


def paginate(
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


def fault_response(fault: Fault) -> web.Response:
    status = fault.status or 500
    headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else None
    return json_response(ApiError(status, fault.message).status(), status, headers)


def quote(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def reset(request: web.Request) -> web.Response:
    transport = request.transport
    if transport is not None:
        transport.abort()
    return web.Response(status=503)
