"""The simulated kubelet: runs the pods kube-scheduler binds to the simulated nodes.

Per pod: its DRA claims allocated and reserved for it (claims.py), a loopback pod IP, init
containers that complete after ``init_seconds`` (no image pull, no network: the ``hf download``
is pretended, its LoRA adapters written as files: stand_in_volumes.py), then the containers. A
``vllm serve ...`` container runs a stand-in vLLM (:class:`StubVllm`) on ``podIP:port``;
its readiness comes from its ``readinessProbe``/``startupProbe`` ``httpGet`` (or ``/health``),
polled every ``probe_period`` seconds until it first succeeds — real probe periods are compressed.
A command line the stand-in refuses, or a ``--lora-modules`` adapter it cannot load, leaves the
container in ``CrashLoopBackOff`` with vLLM's error as the message (restarted with the doubling
back-off, failing the same way). Any other container just "runs" and is ready. Mapped images run as
local processes (process_pods.py). No images, GPUs or runtime.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from nemotron_operator.kube.errors import ApiError
from nemotron_sim.kubeapi.kinds import PODS, SECRETS
from nemotron_sim.kubeapi.resources import WatchEvent
from nemotron_sim.kubeapi.store import ObjectStore
from nemotron_sim.kubelet.batch_pods import (
    run_init_download,
    run_to_completion,
    runs_to_completion,
)
from nemotron_sim.kubelet.claims import wait_for_claims
from nemotron_sim.kubelet.events import EventRecorder, involved, log, now_rfc3339
from nemotron_sim.kubelet.ipam import AddressPool, allocate_bindable
from nemotron_sim.kubelet.pod_status import ContainerState, PodModel
from nemotron_sim.kubelet.podenv import container_env, expanded_argv, missing_secret
from nemotron_sim.kubelet.podfiles import ApiAccess
from nemotron_sim.kubelet.process_pods import PodTokenSource, ProcessPods
from nemotron_sim.kubelet.settings import KubeletSettings
from nemotron_sim.kubelet.stand_in_volumes import StandInVolumes, stand_in_volumes
from nemotron_sim.kubelet.stand_ins import (
    is_vllm_serve,
    node_gpu_product,
    probe_target,
    serving_ports,
    stand_in_vllm,
)
from nemotron_sim.vllm import StubVllm, StubVllmArgumentError
from nemotron_sim.vllm.startup import CompileCaches

COMPONENT = "kubelet"
_PROBE_TIMEOUT = aiohttp.ClientTimeout(total=2.0)


@dataclass
class _RunningPod:
    namespace: str
    name: str
    pod_ip: str
    pool: AddressPool | None = None  # where pod_ip came from
    task: asyncio.Task[None] | None = None
    stubs: list[StubVllm] = field(default_factory=list)
    model: PodModel | None = None  # its status model, once the pod runs
    volumes: StandInVolumes | None = None  # its emptyDir and claim directories

    def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
        if self.volumes is not None:
            self.volumes.remove()  # its emptyDirs


class Kubelet:
    """One kubelet for all simulated nodes (they share this process)."""

    def __init__(
        self,
        store: ObjectStore,
        recorder: EventRecorder,
        node_ips: dict[str, str],
        pod_ips: Callable[[str], AddressPool],
        settings: KubeletSettings,
        *,
        api: ApiAccess,
        token_source: PodTokenSource,
    ) -> None:
        self.processes = ProcessPods(
            store,
            settings.runner_settings(),
            workdir=settings.workdir,
            api=api,
            token_source=token_source,
            stop_grace_seconds=settings.stop_grace_seconds,
        )
        self._store = store
        self._recorder = recorder
        self._node_ips = node_ips
        self._pod_ips = pod_ips
        self.settings = settings
        self.compile_caches = CompileCaches()  # what the stand-ins compiled, by cache location
        self._pods: dict[str, _RunningPod] = {}
        self._session: aiohttp.ClientSession | None = None

    def stub(self, namespace: str, name: str) -> StubVllm | None:
        """The stand-in vLLM of a pod (the first serving one), for tests and the demo."""
        for running in self._pods.values():
            if (running.namespace, running.name) == (namespace, name):
                return next((s for s in running.stubs if not s.is_worker), None)
        return None

    def kill_container(self, namespace: str, name: str, container: str = "vllm") -> bool:
        """A container's process dies (SIGKILL, exit 137) and the kubelet starts it again at
        once (a first restart has no back-off): ``restartCount`` + 1, the instance that died in
        ``lastState``. A stand-in vLLM keeps its server (its probe decides readiness); what the
        other ranks of a multi-node replica do about it is up to their controllers."""
        for running in self._pods.values():
            if (running.namespace, running.name) != (namespace, name) or running.model is None:
                continue
            for state in running.model.containers:
                if state.name == container and "running" in state.state:
                    now = now_rfc3339()
                    started = state.state["running"].get("startedAt", now)
                    ready = state.ready
                    state.exited(137, "killed (simulated fault)", started, now)
                    state.restart_count += 1
                    state.restart(now)
                    state.started, state.ready = True, ready
                    self._write(running, running.model)
                    return True
        return False

    def observe(self, event: WatchEvent) -> None:
        if event.key != PODS:
            return
        pod = event.obj
        md = pod.get("metadata", {})
        uid = md.get("uid", "")
        if event.type == "DELETED":
            self._forget(uid)
            return
        node = (pod.get("spec") or {}).get("nodeName")
        if md.get("deletionTimestamp"):
            if not self.processes.begin_termination(uid, pod):
                self._forget(uid)
                if node in self._node_ips:
                    # Nothing runs that needs a grace period: confirm the deletion, as a
                    # kubelet does once the containers are gone (kube-apiserver only marks
                    # pods bound to a node).
                    self._store.delete(
                        PODS, md.get("namespace"), md["name"], grace_period=0,
                        preconditions={"uid": uid},
                    )  # fmt: skip
            return
        running = self._pods.get(uid)
        if running is not None and running.model is not None:
            # A readiness gate's condition changed (Ready is recomputed), or another writer
            # changed Ready (kube-controller-manager marks a node's pods NotReady when its Lease
            # lapses): report again, as a kubelet's status manager does when the server's status
            # differs from its own.
            gates_changed = running.model.observe_gates(pod)
            if gates_changed or running.model.ready_overwritten(pod):
                self._write(running, running.model)
                return
        if node in self._node_ips and uid not in self._pods:
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                return
            running = _RunningPod(md.get("namespace", ""), md["name"], "")
            self._pods[uid] = running
            running.task = asyncio.create_task(self._run(running, pod, self._node_ips[node]))

    def _forget(self, uid: str) -> None:
        self.processes.forget(uid)
        running = self._pods.pop(uid, None)
        if running is not None:
            running.stop()

    async def stop(self) -> None:
        await self.processes.stop()
        tasks = [r.task for r in self._pods.values() if r.task is not None]
        for running in self._pods.values():
            running.stop()
        self._pods.clear()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def _run(self, running: _RunningPod, pod: dict[str, Any], host_ip: str) -> None:
        await wait_for_claims(self._store, pod, self.settings.probe_period)  # DRA: prepared?
        containers = (pod.get("spec") or {}).get("containers") or []
        declared = [
            int(port["containerPort"])
            for c in containers
            if self.settings.programs.runs(c)
            for port in c.get("ports") or []
            if port.get("containerPort")
        ]
        running.pool = self._pod_ips(str((pod.get("spec") or {}).get("nodeName")))
        running.pod_ip = allocate_bindable(
            running.pool, [*serving_ports(pod, containers), *declared]
        )
        # The status fields a fieldRef may read, as the kubelet knows them when it starts them.
        seen = {**pod, "status": {**(pod.get("status") or {}), "podIP": running.pod_ip,
                                  "hostIP": host_ip}}  # fmt: skip
        stubs: dict[str, StubVllm | StubVllmArgumentError] = {}
        workdir = self.processes.workdir
        volumes = stand_in_volumes(
            pod, workdir / "stand-in-pods", workdir / "claims", workdir / "nodes"
        )
        running.volumes = volumes
        gpu_product = node_gpu_product(self._store, (pod.get("spec") or {}).get("nodeName"))
        for container in containers:
            if self.settings.programs.runs(container):
                continue
            argv = expanded_argv(seen, container)
            if is_vllm_serve(argv):
                try:
                    stubs[container["name"]] = stand_in_vllm(
                        argv, seen, container, self.settings, gpu_product=gpu_product,
                        caches=self.compile_caches, mounts=volumes.mounts(container),
                    )  # fmt: skip
                except StubVllmArgumentError as error:
                    stubs[container["name"]] = error
        model = PodModel.for_pod(pod, host_ip, running.pod_ip, now_rfc3339())
        running.model = model
        try:
            await self._lifecycle(running, seen, model, stubs, volumes)
            await asyncio.Event().wait()  # the containers run until the pod is deleted
        except ApiError as error:
            log.debug("kubelet: pod %s/%s went away: %s", running.namespace, running.name, error)
        finally:
            for stub in running.stubs:
                with contextlib.suppress(Exception):
                    await stub.stop()
            if running.pool is not None:
                running.pool.release(running.pod_ip)

    async def _lifecycle(
        self,
        running: _RunningPod,
        pod: dict[str, Any],
        model: PodModel,
        stubs: dict[str, StubVllm | StubVllmArgumentError],
        volumes: StandInVolumes,
    ) -> None:
        specs_init = (pod.get("spec") or {}).get("initContainers") or []
        for init, spec in zip(model.init_containers, specs_init, strict=False):
            await self._wait_for_secrets(running, model, init, spec)
            started = now_rfc3339()
            init.run(started)
            self._write(running, model)  # the first one also reports the pod IP
            await run_init_download(  # the download step: weights, adapters (batch_pods)
                container_env(pod, spec), volumes.mounts(spec),
                init_seconds=self.settings.init_seconds,
                download=self.settings.download_seconds,
            )  # fmt: skip
            init.exited(0, "", started, now_rfc3339())
        if runs_to_completion(pod) and not stubs and not self.processes.wants(pod):  # a Job's
            write = lambda: self._write(running, model)  # noqa: E731
            await run_to_completion(pod, model, volumes, write, self.settings.download_seconds)
            return
        model.phase = "Running"
        probes: list[asyncio.Task[None]] = []
        specs = {c.get("name"): c for c in (pod.get("spec") or {}).get("containers") or []}
        if self.processes.wants(pod):
            probes.extend(await self._start_processes(running, pod, model))
        for state in model.containers:
            if self.settings.programs.runs(specs.get(state.name) or {}):
                continue
            stub = stubs.get(state.name)
            if isinstance(stub, StubVllmArgumentError):
                probes.append(asyncio.create_task(self._crash_loop(running, model, state, stub)))
                continue
            await self._wait_for_secrets(running, model, state, specs[state.name])
            state.run(now_rfc3339())
            if stub is None:
                state.ready = True
                continue
            follow = await self._start_stand_in(running, model, state, stub, specs[state.name])
            probes.extend([] if follow is None else [follow])
        self._write(running, model)
        if not all(self.settings.programs.runs(c) for c in specs.values()):
            self._record(running, pod, "Started", "Started containers (simulated)")
        try:
            await asyncio.gather(*probes, return_exceptions=True)
        finally:
            for task in probes:
                task.cancel()

    async def _start_stand_in(
        self,
        running: _RunningPod,
        model: PodModel,
        state: ContainerState,
        stub: StubVllm,
        spec: Mapping[str, Any],
    ) -> asyncio.Task[None] | None:
        """Start one stand-in vLLM; the task that follows it: its readiness probe, or its crash
        loop when it exits at start (a ``--lora-modules`` adapter that does not load)."""
        try:
            await stub.start(running.pod_ip, stub.config.port)
        except RuntimeError as error:
            return asyncio.create_task(self._crash_loop(running, model, state, error))
        running.stubs.append(stub)
        target = probe_target(spec, stub)
        if target is None:
            state.ready = True
            return None
        return asyncio.create_task(self._probe(running, model, state, target))

    async def _start_processes(
        self, running: _RunningPod, pod: dict[str, Any], model: PodModel
    ) -> list[asyncio.Task[None]]:
        uid = pod["metadata"].get("uid", "")

        def write() -> None:
            phase = self.processes.finished_phase(uid, model)
            if phase is not None:
                model.phase = phase
            with contextlib.suppress(ApiError):
                self._write(running, model)

        def record(reason: str, message: str, warning: bool) -> None:
            with contextlib.suppress(ApiError):
                ref = involved(pod, "v1", "Pod")
                self._recorder.record(COMPONENT, ref, reason, message, warning=warning)

        return await self.processes.start(pod, model, write, record)

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
        error: StubVllmArgumentError | RuntimeError,
    ) -> None:
        backoff = self.settings.crash_backoff_seconds
        while True:
            started = now_rfc3339()
            # It exits with vLLM's error; the kubelet backs off before the next start.
            state.exited(1, str(error), started, now_rfc3339())
            state.wait("CrashLoopBackOff", str(error))
            self._write(running, model)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, self.settings.crash_backoff_cap_seconds)
            state.restart_count += 1

    def _write(self, running: _RunningPod, model: PodModel) -> None:
        running.model = model
        status = model.render(now_rfc3339())
        self._store.merge_patch(
            PODS,
            running.namespace,
            running.name,
            {"status": status},
            subresource="status",
        )

    def _record(self, running: _RunningPod, pod: dict[str, Any], reason: str, text: str) -> None:
        with contextlib.suppress(ApiError):
            self._recorder.record(COMPONENT, involved(pod, "v1", "Pod"), reason, text)
