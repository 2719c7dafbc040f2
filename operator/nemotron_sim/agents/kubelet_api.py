"""The kubelet API of each simulated node: HTTPS on the node's InternalIP, port 10250.

kube-apiserver proxies ``kubectl logs`` here (``GET /containerLogs/{namespace}/{pod}/{container}``
with ``previous``, ``tailLines``, ``limitBytes``, ``follow``), as it does to a real kubelet. The
certificate is signed by the cluster CA for the node's address; the API server is started
without ``--kubelet-certificate-authority`` and does not check it, as with kubeadm's defaults.
Client certificates are not checked either (a real kubelet authorizes the API server's
``kube-apiserver-kubelet-client`` identity through a SubjectAccessReview).
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from typing import Any

from aiohttp import web

from nemotron_sim.kubeapi.kinds import PODS
from nemotron_sim.kubeapi.store import ObjectStore
from nemotron_sim.kubelet import container_logs
from nemotron_sim.kubelet.container_logs import LogRequestError, LogTarget

KUBELET_PORT = 10250  # the kubelet API's port on each node, as a real kubelet's

# (pod, container, previous) → where that container's log is (LogRequestError if there is none)
LogLookup = Callable[[dict[str, Any], str, bool], LogTarget]


def _flag(request: web.Request, name: str) -> bool:
    return request.query.get(name) in ("true", "1")


def _number(request: web.Request, name: str) -> int | None:
    text = request.query.get(name)
    return int(text) if text else None


class KubeletApi:
    """One HTTPS server per node address; a request is answered only for pods on that node."""

    def __init__(self, store: ObjectStore, logs: LogLookup, context: ssl.SSLContext) -> None:
        self._store, self._logs, self._context = store, logs, context
        self._runners: list[web.AppRunner] = []

    async def serve(self, node: str, address: str) -> None:
        app = web.Application()

        async def container_log(request: web.Request) -> web.StreamResponse:
            return await self._container_log(request, node)

        app.router.add_get("/containerLogs/{namespace}/{pod}/{container}", container_log)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, address, KUBELET_PORT, ssl_context=self._context).start()
        self._runners.append(runner)

    async def stop(self) -> None:
        for runner in self._runners:
            await runner.cleanup()
        self._runners = []

    async def _container_log(self, request: web.Request, node: str) -> web.StreamResponse:
        namespace, name = request.match_info["namespace"], request.match_info["pod"]
        container = request.match_info["container"]
        pod = self._store.peek(PODS, namespace, name)
        if pod is None or (pod.get("spec") or {}).get("nodeName") != node:
            return web.Response(status=404, text=f'pod "{name}" not found on node {node}')
        try:
            target = self._logs(pod, container, _flag(request, "previous"))
        except LogRequestError as error:
            return web.Response(status=error.code, text=error.message)
        data = container_logs.read(
            target, _number(request, "tailLines"), _number(request, "limitBytes")
        )
        if not _flag(request, "follow") or target.path is None:
            return web.Response(body=data, content_type="text/plain")
        return await container_logs.stream(request, target, data)
