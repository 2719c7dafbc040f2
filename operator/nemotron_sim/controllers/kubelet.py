"""The simulated kubelet: runs the pods bound to the simulated nodes, in-process.

Per pod: a loopback pod IP, init containers that complete after ``init_seconds`` (no image pull,
no network: the ``hf download`` weight fetch is only pretended), then the containers. A container
whose command is ``vllm serve ...`` runs a stand-in vLLM (:class:`StubVllm`) on ``podIP:port``;
its readiness comes from its ``readinessProbe``/``startupProbe`` ``httpGet`` (or ``/health``),
polled every ``probe_period`` seconds until it first succeeds — real probe periods are compressed.
A command line the stand-in refuses leaves the container in ``CrashLoopBackOff`` with vLLM's error
as the message, retried with the kubelet's doubling back-off. Any other container just "runs"
and is ready. A simulation: no processes, images or GPUs.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import shlex
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from nemotron_sim.apiserver.errors import ApiError
from nemotron_sim.apiserver.store import Store, WatchEvent
from nemotron_sim.controllers.ipam import LoopbackPool
from nemotron_sim.controllers.kinds import PODS, SECRETS
from nemotron_sim.controllers.pod_status import ContainerState, PodModel
from nemotron_sim.controllers.podenv import expanded_argv, missing_secret
from nemotron_sim.controllers.runtime import (
    EventRecorder,
    involved,
    log,
    now_rfc3339,
)
from nemotron_sim.vllm import StubVllm, StubVllmArgumentError, parse_serve_argv

COMPONENT = "kubelet"
# The kubelet's crash back-off: 10 s doubling to 5 min (kubelet's default MaxContainerBackOff).
CRASH_BACKOFF_CAP_SECONDS = 300.0
_BIND_ATTEMPTS = 20
_PROBE_TIMEOUT = aiohttp.ClientTimeout(total=2.0)


@dataclass(frozen=True)
class KubeletSettings:
    load_seconds: float = 0.0  # simulated model load of each stand-in vLLM
    init_seconds: float = 0.05  # how long each init container "runs"
    probe_period: float = 0.1  # seconds between readiness probes (real default: 10 s)
    crash_backoff_seconds: float = 10.0  # the first restart delay of a crashing container


def is_vllm_serve(argv: list[str]) -> bool:
    """``vllm serve ...`` directly, via a path, or via ``sh -c "[exec] vllm serve ..."``."""
    words = argv
    if len(words) >= 3 and os.path.basename(words[0]) in {"sh", "bash"} and words[1] == "-c":
        try:
            words = shlex.split(words[2])
        except ValueError:
            return False
        if words[:1] == ["exec"]:
            words = words[1:]
    return len(words) >= 2 and os.path.basename(words[0]) == "vllm" and words[1] == "serve"


def resolve_port(port: Any, container: Mapping[str, Any]) -> int | None:
    if isinstance(port, int):
        return port
    if isinstance(port, str) and port.isdigit():
        return int(port)
    for declared in container.get("ports") or []:
        if declared.get("name") == port:
            return int(declared["containerPort"])
    return None


def probe_target(container: Mapping[str, Any], stub: StubVllm) -> tuple[int, str] | None:
    """(port, path) the kubelet probes for readiness; None when only "started" counts."""
    for kind in ("readinessProbe", "startupProbe"):
        http = (container.get(kind) or {}).get("httpGet")
        if http:
            port = resolve_port(http.get("port"), container)
            return None if port is None else (port, http.get("path") or "/")
    if stub.is_worker:
        return None
    return (stub.config.port, "/health")


@dataclass
class _RunningPod:
    namespace: str
    name: str
    pod_ip: str
    task: asyncio.Task[None] | None = None
    stubs: list[StubVllm] = field(default_factory=list)


class Kubelet:
    """One kubelet for all simulated nodes (they share this process)."""

    def __init__(
        self,
        store: Store,
        recorder: EventRecorder,
        node_ips: dict[str, str],
        pod_ips: LoopbackPool,
        settings: KubeletSettings,
    ) -> None:
        self._store = store
        self._recorder = recorder
        self._node_ips = node_ips
        self._pod_ips = pod_ips
        self.settings = settings
        self._pods: dict[str, _RunningPod] = {}
        self._session: aiohttp.ClientSession | None = None

    def running_pods(self) -> int:
        return len(self._pods)

    def stub(self, namespace: str, name: str) -> StubVllm | None:
        """The stand-in vLLM of a pod (the first serving one), for tests and the demo."""
        for running in self._pods.values():
            if (running.namespace, running.name) == (namespace, name):
                return next((s for s in running.stubs if not s.is_worker), None)
        return None

    def observe(self, event: WatchEvent) -> None:
        if event.key != PODS:
            return
        pod = event.obj
        md = pod.get("metadata", {})
        uid = md.get("uid", "")
        if event.type == "DELETED" or md.get("deletionTimestamp"):
            self._forget(uid)
            return
        node = (pod.get("spec") or {}).get("nodeName")
        if node in self._node_ips and uid not in self._pods:
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                return
            running = _RunningPod(md.get("namespace", ""), md["name"], "")
            self._pods[uid] = running
            running.task = asyncio.create_task(self._run(running, pod, self._node_ips[node]))

    def _forget(self, uid: str) -> None:
        running = self._pods.pop(uid, None)
        if running is not None and running.task is not None:
            running.task.cancel()

    async def stop(self) -> None:
        tasks = [r.task for r in self._pods.values() if r.task is not None]
        self._pods.clear()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def _run(self, running: _RunningPod, pod: dict[str, Any], host_ip: str) -> None:
        containers = (pod.get("spec") or {}).get("containers") or []
        running.pod_ip = self._allocate_ip(_serving_ports(pod, containers))
        # The status fields a fieldRef may read, as the kubelet knows them when it starts them.
        seen = {**pod, "status": {**(pod.get("status") or {}), "podIP": running.pod_ip,
                                  "hostIP": host_ip}}  # fmt: skip
        stubs: dict[str, StubVllm | StubVllmArgumentError] = {}
        for container in containers:
            argv = expanded_argv(seen, container)
            if is_vllm_serve(argv):
                try:
                    stubs[container["name"]] = StubVllm(
                        argv, load_seconds=self.settings.load_seconds
                    )
                except StubVllmArgumentError as error:
                    stubs[container["name"]] = error
        model = PodModel.for_pod(pod, host_ip, running.pod_ip, now_rfc3339())
        try:
            await self._lifecycle(running, pod, model, stubs)
            await asyncio.Event().wait()  # the containers run until the pod is deleted
        except ApiError as error:
            log.debug("kubelet: pod %s/%s went away: %s", running.namespace, running.name, error)
        finally:
            for stub in running.stubs:
                with contextlib.suppress(Exception):
                    await stub.stop()
            self._pod_ips.release(running.pod_ip)

    def _allocate_ip(self, ports: list[int]) -> str:
        """A pod IP whose serving ports are free (another simulated cluster may hold some)."""
        for _ in range(_BIND_ATTEMPTS):
            address = self._pod_ips.allocate()
            if all(_can_bind(address, port) for port in ports):
                return address
            log.info("kubelet: %s is taken on this machine, trying another pod IP", address)
        raise RuntimeError("kubelet: no free loopback pod IP after several attempts")

    async def _lifecycle(
        self,
        running: _RunningPod,
        pod: dict[str, Any],
        model: PodModel,
        stubs: dict[str, StubVllm | StubVllmArgumentError],
    ) -> None:
        specs_init = (pod.get("spec") or {}).get("initContainers") or []
        for init, spec in zip(model.init_containers, specs_init, strict=False):
            await self._wait_for_secrets(running, model, init, spec)
            started = now_rfc3339()
            init.run(started)
            self._write(running, model)  # the first one also reports the pod IP
            await asyncio.sleep(self.settings.init_seconds)
            init.complete(started, now_rfc3339())
        model.phase = "Running"
        probes: list[asyncio.Task[None]] = []
        specs = {c.get("name"): c for c in (pod.get("spec") or {}).get("containers") or []}
        for state in model.containers:
            stub = stubs.get(state.name)
            if isinstance(stub, StubVllmArgumentError):
                probes.append(asyncio.create_task(self._crash_loop(running, model, state, stub)))
                continue
            await self._wait_for_secrets(running, model, state, specs[state.name])
            state.run(now_rfc3339())
            if stub is None:
                state.ready = True
                continue
            await stub.start(running.pod_ip, stub.config.port)
            running.stubs.append(stub)
            target = probe_target(specs[state.name], stub)
            if target is None:
                state.ready = True
            else:
                probes.append(asyncio.create_task(self._probe(running, model, state, target)))
        self._write(running, model)
        self._record(running, pod, "Started", "Started containers (simulated)")
        try:
            await asyncio.gather(*probes)
        finally:
            for task in probes:
                task.cancel()

    async def _wait_for_secrets(
        self, running: _RunningPod, model: PodModel, state: ContainerState, spec: Mapping[str, Any]
    ) -> None:
        """As the kubelet: a container whose Secret is missing waits, reported as
        ``CreateContainerConfigError``, and starts once the Secret exists."""
        reported = None
        while True:
            secrets = {
                str(s["metadata"]["name"]): s for s in self._store.scan(SECRETS, running.namespace)
            }
            problem = missing_secret(spec, running.namespace, secrets)
            if problem is None:
                return
            if problem != reported:
                state.state = {
                    "waiting": {"reason": "CreateContainerConfigError", "message": problem}
                }
                self._write(running, model)
                reported = problem
            await asyncio.sleep(max(0.1, self.settings.probe_period))

    async def _probe(
        self, running: _RunningPod, model: PodModel, state: ContainerState, target: tuple[int, str]
    ) -> None:
        port, path = target
        url = f"http://{running.pod_ip}:{port}{path}"
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=_PROBE_TIMEOUT)
        while not state.ready:
            with contextlib.suppress(aiohttp.ClientError, TimeoutError, OSError):
                async with self._session.get(url) as response:
                    state.ready = 200 <= response.status < 400
            if not state.ready:
                await asyncio.sleep(self.settings.probe_period)
        self._write(running, model)

    async def _crash_loop(
        self,
        running: _RunningPod,
        model: PodModel,
        state: ContainerState,
        error: StubVllmArgumentError,
    ) -> None:
        backoff = self.settings.crash_backoff_seconds
        while True:
            started = now_rfc3339()
            state.crash(str(error), started, now_rfc3339())
            self._write(running, model)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, CRASH_BACKOFF_CAP_SECONDS)
            state.restart_count += 1

    def _write(self, running: _RunningPod, model: PodModel) -> None:
        status = model.render(now_rfc3339())
        self._store.merge_patch(
            PODS, running.namespace, running.name, {"status": status}, subresource="status"
        )

    def _record(self, running: _RunningPod, pod: dict[str, Any], reason: str, text: str) -> None:
        with contextlib.suppress(ApiError):
            self._recorder.record(COMPONENT, involved(pod, "v1", "Pod"), reason, text)


def _serving_ports(pod: dict[str, Any], containers: list[dict[str, Any]]) -> list[int]:
    """Ports the pod's stand-in vLLMs will listen on (checked free before the IP is taken)."""
    ports = []
    for container in containers:
        argv = expanded_argv(pod, container)
        if not is_vllm_serve(argv):
            continue
        with contextlib.suppress(StubVllmArgumentError):
            config = parse_serve_argv(argv)
            if not config.is_worker:
                ports.append(config.port)
    return ports


def _can_bind(address: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((address, port))
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                return False
            raise
    return True
