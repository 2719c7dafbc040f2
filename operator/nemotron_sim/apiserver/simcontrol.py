"""``/_sim/``: the simulation's own control endpoints (faults, the request journal)."""

from __future__ import annotations

from collections import deque

from aiohttp import web

from nemotron_sim.apiserver.errors import bad_request
from nemotron_sim.apiserver.faults import Fault, FaultInjector
from nemotron_sim.apiserver.wire import json_response


async def sim_endpoint(
    request: web.Request, faults: FaultInjector, journal: deque[tuple[str, str, int]]
) -> web.Response:
    """``/_sim/faults`` (GET, POST, DELETE, DELETE ``/{id}``) and ``/_sim/requests``."""
    parts = [p for p in request.path.split("/") if p]
    if parts[1:] == ["requests"] and request.method == "GET":
        return json_response([{"method": m, "path": p, "status": s} for m, p, s in journal])
    if parts[1:2] != ["faults"]:
        raise web.HTTPNotFound()
    if request.method == "GET":
        return json_response([f.to_dict() for f in faults.active()])
    if request.method == "POST":
        try:
            fault = faults.add(Fault.from_dict(await request.json()))
        except (ValueError, TypeError) as exc:
            return json_response(bad_request(str(exc)).status(), 400)
        return json_response(fault.to_dict(), 201)
    if request.method == "DELETE" and len(parts) == 3 and parts[2].isdigit():
        found = faults.remove(int(parts[2]))
        return json_response({"removed": found}, 200 if found else 404)
    if request.method == "DELETE":
        faults.clear()
        return json_response({"removed": "all"})
    raise web.HTTPMethodNotAllowed(request.method, ["GET", "POST", "DELETE"])
