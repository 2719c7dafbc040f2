"""``GET .../pods/NAME/log``: container output, as kube-apiserver proxies it from the kubelet.

Query parameters: ``container``, ``previous``, ``tailLines``, ``limitBytes``, ``follow`` (stream
until the container instance ends or the client goes away), ``timestamps`` (not recorded: the
lines are sent without). The kubelet that knows the files is a :class:`LogSource`; without one
every container's log is empty.
"""

from __future__ import annotations

from typing import Any, Protocol

from aiohttp import web

from nemotron_sim.apiserver.errors import bad_request
from nemotron_sim.controllers import container_logs
from nemotron_sim.controllers.container_logs import LogTarget


class LogSource(Protocol):
    def log_target(
        self, pod: dict[str, Any], container: str, previous: bool
    ) -> LogTarget: ...  # raises ApiError (400) as the kubelet would refuse


def _container(pod: dict[str, Any], requested: str | None) -> str:
    names = [c.get("name", "") for c in (pod.get("spec") or {}).get("containers") or []]
    init = [c.get("name", "") for c in (pod.get("spec") or {}).get("initContainers") or []]
    name = pod["metadata"]["name"]
    if not requested:
        if len(names) == 1:
            return str(names[0])
        raise bad_request(
            f"a container name must be specified for pod {name}, choose one of: "
            f"[{' '.join(names)}]"
            + (f" or one of the init containers: [{' '.join(init)}]" if init else "")
        )
    if requested not in names and requested not in init:
        raise bad_request(f"container {requested} is not valid for pod {name}")
    return requested


async def serve(
    request: web.Request, pod: dict[str, Any], source: LogSource | None
) -> web.StreamResponse:
    query = request.query
    container = _container(pod, query.get("container"))
    previous = query.get("previous") in ("true", "1")
    follow = query.get("follow") in ("true", "1")
    tail = int(query["tailLines"]) if query.get("tailLines") else None
    limit = int(query["limitBytes"]) if query.get("limitBytes") else None
    target = (
        source.log_target(pod, container, previous)
        if source is not None
        else LogTarget(None, lambda: False)
    )
    data = container_logs.read(target, tail, limit)
    if not follow or target.path is None:
        return web.Response(body=data, content_type="text/plain")
    return await container_logs.stream(request, target, data)
