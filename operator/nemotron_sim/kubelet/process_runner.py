"""The kubelet's loop for one container that runs as a real process.

Start the instance, probe it (startup, then liveness and readiness), wait for it to exit or be
killed, and restart it per ``restartPolicy`` with the kubelet's crash back-off (the first restart
at once, then 10 s doubling to 5 min, reset after a run of twice the cap). Each instance logs to
its own file (``logs``, the current one last): what ``kubectl logs [--previous]`` reads.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from nemotron_sim.kubelet.events import now_rfc3339
from nemotron_sim.kubelet.images import ImagePrograms
from nemotron_sim.kubelet.pod_status import ContainerState
from nemotron_sim.kubelet.podenv import (
    ContainerConfigError,
    Lookup,
    container_env,
    expand,
)
from nemotron_sim.kubelet.podfiles import MOUNTS_ENV, PodFiles
from nemotron_sim.kubelet.probes import ProbeCounter, ProbeSpec, probe_once
from nemotron_sim.kubelet.process import ContainerProcess

POD_IP_ENV = "NEMOTRON_SIM_POD_IP"
# the container's containerPorts, JSON (read by sim_cluster/container_root.py)
PORTS_ENV = "NEMOTRON_SIM_PORTS"
OPERATOR_BIND_ENV = "NEMOTRON_OPERATOR_BIND_ADDRESS"
_PASSED_THROUGH = ("PATH", "PYTHONPATH", "VIRTUAL_ENV", "LANG", "LC_ALL", "TMPDIR")
# (reason, message, warning) → an Event on the pod
Recorder = Callable[[str, str, bool], None]


def go_duration(seconds: float) -> str:
    """How Go prints a time.Duration: ``10s``, ``2m40s``, ``5m0s``, ``200ms``."""
    if seconds < 1:
        return f"{round(seconds * 1000)}ms"
    minutes, rest = divmod(round(seconds, 3), 60)
    text = f"{rest:g}s"
    return f"{int(minutes)}m{text}" if minutes else text


@dataclass
class CrashBackoff:
    """The kubelet's per-container restart delay."""

    initial: float = 10.0
    cap: float = 300.0
    _next: float = 0.0

    def delay(self, ran_seconds: float) -> float:
        """The wait before the next start, after an instance that ran ``ran_seconds``."""
        if ran_seconds > 2 * self.cap:
            self._next = 0.0
        delay = self._next
        self._next = self.initial if delay == 0 else min(delay * 2, self.cap)
        return delay


def should_restart(policy: str, code: int) -> bool:
    if policy == "Never":
        return False
    return policy != "OnFailure" or code != 0


@dataclass(frozen=True)
class RunnerSettings:
    programs: ImagePrograms
    probe_time_scale: float
    crash_backoff_seconds: float
    crash_backoff_cap_seconds: float


class ProcessContainer:
    def __init__(
        self,
        pod: Mapping[str, Any],
        spec: Mapping[str, Any],
        state: ContainerState,
        *,
        files: PodFiles,
        lookup: Lookup,
        settings: RunnerSettings,
        write: Callable[[], None],
        record: Recorder,
        session: Callable[[], aiohttp.ClientSession],
    ) -> None:
        self.pod, self.spec, self.state = pod, spec, state
        self.files, self._lookup, self.settings = files, lookup, settings
        self._write, self._record, self._session = write, record, session
        self.logs: list[Path] = []  # one file per instance, the current one last
        self.process: ContainerProcess | None = None
        self.finished_code: int | None = None  # set when it will not be restarted
        self._stopping = False
        self._started_at = ""
        self._started_monotonic = 0.0
        md = pod.get("metadata") or {}
        self._pod_label = f"{md.get('name')}_{md.get('namespace')}({md.get('uid')})"
        self._backoff = CrashBackoff(
            settings.crash_backoff_seconds, settings.crash_backoff_cap_seconds
        )

    def stopping(self) -> bool:
        """Set by :meth:`terminate` while ``run`` awaits (a method, so a type checker does not
        assume the flag unchanged across the await)."""
        return self._stopping

    @property
    def name(self) -> str:
        return str(self.spec.get("name", ""))

    def instance_live(self, path: Path) -> bool:
        return (
            bool(self.logs)
            and path == self.logs[-1]
            and bool(self.process and self.process.running)
        )

    def _environment(self) -> tuple[list[str], dict[str, str]]:
        env = {k: os.environ[k] for k in _PASSED_THROUGH if k in os.environ}
        env.update(
            HOME=str(self.files.root / "home"),
            HOSTNAME=str((self.pod.get("metadata") or {}).get("name", "")),
            PYTHONUNBUFFERED="1",
        )
        declared = container_env(self.pod, self.spec, self._lookup)
        if self.files.kubeconfig is not None:
            env["KUBECONFIG"] = str(self.files.kubeconfig)
        env[MOUNTS_ENV] = self.files.mounts_json(self.spec)
        env[POD_IP_ENV] = str((self.pod.get("status") or {}).get("podIP", ""))
        # A real pod has a network namespace of its own, where the operator's servers bind every
        # address; here pods share the machine's, so its pod IP stands in for "every address of
        # the pod" (a container that sets the variable itself keeps its value).
        env[OPERATOR_BIND_ENV] = env[POD_IP_ENV]
        ports = [
            int(p["containerPort"]) for p in self.spec.get("ports") or [] if p.get("containerPort")
        ]
        env[PORTS_ENV] = json.dumps(ports)
        env.update(declared)
        command = [expand(str(w), declared) for w in self.spec.get("command") or []]
        args = [expand(str(w), declared) for w in self.spec.get("args") or []]
        return self.settings.programs.argv(self.spec, command, args), env

    async def run(self) -> None:
        restart_policy = str((self.pod.get("spec") or {}).get("restartPolicy") or "Always")
        while not self._stopping:
            try:
                argv, env = self._environment()
            except ContainerConfigError as error:
                self.state.wait("CreateContainerConfigError", str(error))
                self._write()
                self._record("Failed", f"Error: {error}", True)
                await asyncio.sleep(max(self.settings.crash_backoff_seconds, 0.05))
                continue
            code = await self._run_instance(argv, env)
            if self.stopping():
                return
            if not should_restart(restart_policy, code):
                self.finished_code = code
                self._write()
                return
            loop = asyncio.get_running_loop()
            delay = self._backoff.delay(loop.time() - self._started_monotonic)
            if delay > 0:
                self.state.wait(
                    "CrashLoopBackOff",
                    f"back-off {go_duration(delay)} restarting failed container={self.name} "
                    f"pod={self._pod_label}",
                )
                self._write()
                self._record(
                    "BackOff", f"Back-off restarting failed container {self.name} in pod "
                    f"{self._pod_label}", True,
                )  # fmt: skip
                await asyncio.sleep(delay)
            else:
                self._write()
            self.state.restart_count += 1

    async def _run_instance(self, argv: list[str], env: dict[str, str]) -> int:
        log_path = self.files.root / "logs" / self.name / f"{self.state.restart_count}.log"
        log_path.unlink(missing_ok=True)
        (self.files.root / "home").mkdir(parents=True, exist_ok=True)
        process = ContainerProcess(argv, env, self.files.root / "work", log_path)
        self._started_monotonic = asyncio.get_running_loop().time()
        self._started_at = now_rfc3339()
        self.logs.append(log_path)
        try:
            await process.start()
        except OSError as error:
            message = f'exec: "{argv[0]}": {error.strerror or error}'
            log_path.parent.mkdir(parents=True, exist_ok=True)
            log_path.write_text(message + "\n")
            self.state.exited(128, message, self._started_at, now_rfc3339())
            self.state.state["terminated"]["reason"] = "StartError"
            self._record("Failed", f"Error: {message}", True)
            return 128
        self.process = process
        self.state.restart(self._started_at)
        self.state.ready = False
        self._write()
        self._record("Started", f"Started container {self.name}", False)
        probing = asyncio.create_task(self._probe(process))
        try:
            code = await process.wait()
        finally:
            probing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await probing
        message = process.last_line() if code != 0 else ""
        if "SIGKILL" in process.signals and code == 137:
            message = message or "killed after the grace period"
        self.state.exited(code, message, self._started_at, now_rfc3339())
        return code

    # --- probes -----------------------------------------------------------------------------

    def _spec(self, kind: str) -> ProbeSpec | None:
        return ProbeSpec.parse(self.spec.get(kind), self.spec, self.settings.probe_time_scale)

    async def _probe(self, process: ContainerProcess) -> None:
        startup, liveness, readiness = (
            self._spec(k) for k in ("startupProbe", "livenessProbe", "readinessProbe")
        )
        for spec in (startup, liveness, readiness):
            if spec is not None and spec.kind == "unsupported":
                self._record("Unhealthy", "Probe not supported by the simulated kubelet "
                             "(exec): treated as succeeding", True)  # fmt: skip
        if startup is not None and not await self._until(process, startup, "Startup", True):
            return
        self.state.started = True
        self.state.ready = readiness is None
        self._write()
        tasks = (
            [asyncio.create_task(self._watch(liveness, "Liveness", process))] if liveness else []
        )
        if readiness is not None:
            tasks.append(asyncio.create_task(self._watch(readiness, "Readiness", None)))
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()

    async def _until(
        self, process: ContainerProcess, spec: ProbeSpec, label: str, kill: bool
    ) -> bool:
        """Probe until success (True) or ``failureThreshold`` failures (False; killed)."""
        counter = ProbeCounter(spec.success_threshold, spec.failure_threshold, result=False)
        failures = 0
        await asyncio.sleep(spec.initial_delay)
        while True:
            ok, message = await probe_once(spec, self._host(), self._session())
            if counter.record(ok):
                return True
            if not ok:
                failures += 1
                self._record("Unhealthy", f"{label} probe failed: {message}", True)
                if failures >= spec.failure_threshold and kill:
                    await self._kill(process, spec, label.lower())
                    return False
            await asyncio.sleep(spec.period)

    async def _watch(self, spec: ProbeSpec, label: str, kill: ContainerProcess | None) -> None:
        """Liveness (``kill`` given: it starts passing, and failing kills the process) or
        readiness (it starts failing; the container's ``ready`` follows each new verdict)."""
        passing = kill is not None
        counter = ProbeCounter(spec.success_threshold, spec.failure_threshold, result=passing)
        await asyncio.sleep(spec.initial_delay)
        while True:
            ok, message = await probe_once(spec, self._host(), self._session())
            if not ok:
                self._record("Unhealthy", f"{label} probe failed: {message}", True)
            verdict = counter.record(ok)
            if verdict is not None and kill is not None:  # liveness's only change: to failing
                await self._kill(kill, spec, label.lower())
                return
            if verdict is not None:
                self.state.ready = verdict
                self._write()
            await asyncio.sleep(spec.period)

    async def _kill(self, process: ContainerProcess, spec: ProbeSpec, which: str) -> None:
        self._record(
            "Killing", f"Container {self.name} failed {which} probe, will be restarted", False
        )
        grace = spec.grace if spec.grace is not None else self.pod_grace()
        await process.stop(grace)

    def _host(self) -> str:
        return str((self.pod.get("status") or {}).get("podIP", "127.0.0.1"))

    def pod_grace(self) -> int:
        return int((self.pod.get("spec") or {}).get("terminationGracePeriodSeconds", 30))

    async def terminate(self, grace: float, task: asyncio.Task[None] | None) -> None:
        """Pod deletion: SIGTERM, SIGKILL after ``grace``; the loop does not restart it."""
        self._stopping = True
        process = self.process
        if process is not None and process.running:
            self._record("Killing", f"Stopping container {self.name}", False)
            await process.stop(grace)
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
