"""The kubelet's part for pods with containers that run as real processes.

Per such pod: a directory (volumes, ServiceAccount files, kubeconfig, logs), one
:class:`ProcessContainer` loop per mapped container, graceful termination on delete
(kube-apiserver marks the pod with ``deletionTimestamp``; the kubelet stops the processes within
``deletionGracePeriodSeconds`` and then removes it), and the log files for ``pods/log``. Pods
without a mapped container never come here: the kubelet runs them without a process.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from nemotron_operator.kube.errors import ApiError
from nemotron_sim.kubeapi.kinds import CONFIGMAPS, PODS, SECRETS, SERVICEACCOUNTS
from nemotron_sim.kubeapi.store import ObjectStore
from nemotron_sim.kubelet.container_logs import LogRequestError, LogTarget
from nemotron_sim.kubelet.events import log
from nemotron_sim.kubelet.pod_status import PodModel
from nemotron_sim.kubelet.podfiles import (
    ApiAccess,
    MountError,
    PodFiles,
    PodFileWriter,
    automounts_token,
    service_account,
)
from nemotron_sim.kubelet.process_runner import ProcessContainer, Recorder, RunnerSettings

# (pod, expirationSeconds, audiences) → a bearer token for the pod's ServiceAccount
PodTokenSource = Callable[[Mapping[str, Any], int, tuple[str, ...]], Awaitable[str]]
_PROBE_TIMEOUT = aiohttp.ClientTimeout(total=5.0)


@dataclass
class _ProcessPod:
    pod: dict[str, Any]
    root: Path
    runners: dict[str, ProcessContainer] = field(default_factory=dict)
    tasks: dict[str, asyncio.Task[None]] = field(default_factory=dict)
    terminating: asyncio.Task[None] | None = None
    renewing: asyncio.Task[None] | None = None
    grace_ends: float = 0.0  # loop time when SIGKILL is due


class ProcessPods:
    def __init__(
        self,
        store: ObjectStore,
        settings: RunnerSettings,
        *,
        workdir: Path,
        api: ApiAccess,
        token_source: PodTokenSource,
        stop_grace_seconds: float = 5.0,
    ) -> None:
        self._store, self.settings = store, settings
        self.workdir, self.api, self.token_source = workdir, api, token_source
        self.stop_grace_seconds = stop_grace_seconds
        self._pods: dict[str, _ProcessPod] = {}
        self._session: aiohttp.ClientSession | None = None

    def wants(self, pod: Mapping[str, Any]) -> bool:
        containers = (pod.get("spec") or {}).get("containers") or []
        return any(self.settings.programs.runs(c) for c in containers)

    def _lookup(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        key = SECRETS if kind == "Secret" else CONFIGMAPS
        return self._store.peek(key, namespace, name)

    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=_PROBE_TIMEOUT)
        return self._session

    async def start(
        self,
        pod: dict[str, Any],
        model: PodModel,
        write: Callable[[], None],
        record: Recorder,
    ) -> list[asyncio.Task[None]]:
        """Set up the pod's files (retrying a failed mount) and start its process loops."""
        md = pod["metadata"]
        uid = md.get("uid", "")
        root = self.workdir / f"{md.get('namespace')}_{md['name']}_{uid[:8]}"
        entry = _ProcessPod(pod, root)
        self._pods[uid] = entry
        writer = self._writer(pod, root)
        files = await self._files(pod, writer, model, write, record)
        entry.renewing = asyncio.create_task(_renew(writer))
        specs = {c.get("name"): c for c in (pod.get("spec") or {}).get("containers") or []}
        for state in model.containers:
            spec = specs.get(state.name) or {}
            if not self.settings.programs.runs(spec):
                continue
            runner = ProcessContainer(
                pod, spec, state, files=files, lookup=self._lookup, settings=self.settings,
                write=write, record=record, session=self.session,
            )  # fmt: skip
            entry.runners[state.name] = runner
            task = asyncio.create_task(runner.run(), name=f"process-{md['name']}-{state.name}")
            task.add_done_callback(_log_failure)
            entry.tasks[state.name] = task
        return list(entry.tasks.values())

    def _writer(self, pod: dict[str, Any], root: Path) -> PodFileWriter:
        async def token(seconds: int, audiences: tuple[str, ...]) -> str:
            return await self.token_source(pod, seconds, audiences)

        return PodFileWriter(root, self.workdir / "claims", self._lookup, self.api, token)

    async def _files(
        self,
        pod: dict[str, Any],
        writer: PodFileWriter,
        model: PodModel,
        write: Callable[[], None],
        record: Recorder,
    ) -> PodFiles:
        md = pod["metadata"]
        account = self._store.peek(SERVICEACCOUNTS, md.get("namespace"), service_account(pod))
        delay = max(self.settings.crash_backoff_seconds, 0.05)
        while True:
            try:
                return await writer.prepare(pod, automount=automounts_token(pod, account))
            except MountError as error:
                for state in model.containers:
                    if self.settings.programs.runs({"image": state.image}):
                        state.wait("ContainerCreating", "")
                write()
                record("FailedMount", str(error), True)
            except ApiError as error:  # e.g. no such ServiceAccount for the token
                record("FailedMount", f"failed to fetch token: {error}", True)
            await asyncio.sleep(delay)

    def finished_phase(self, uid: str, model: PodModel) -> str | None:
        """Succeeded/Failed once every container has ended for good, else None."""
        entry = self._pods.get(uid)
        if entry is None or len(entry.runners) != len(model.containers):
            return None
        codes = [r.finished_code for r in entry.runners.values()]
        if any(code is None for code in codes):
            return None
        return "Succeeded" if all(code == 0 for code in codes) else "Failed"

    # --- deletion ---------------------------------------------------------------------------

    def begin_termination(self, uid: str, pod: dict[str, Any]) -> bool:
        """Called on a pod with deletionTimestamp; False if it has no processes here."""
        entry = self._pods.get(uid)
        if entry is None:
            return False
        grace = float(pod["metadata"].get("deletionGracePeriodSeconds") or 0)
        loop = asyncio.get_running_loop()
        if entry.terminating is None:
            entry.grace_ends = loop.time() + grace
            entry.terminating = asyncio.create_task(self._terminate(uid, entry, grace))
        elif loop.time() + grace < entry.grace_ends:
            # A second DELETE with a shorter grace period cuts the wait short.
            entry.grace_ends = loop.time() + grace
            loop.call_later(grace, _kill_all, entry)
        return True

    async def _terminate(self, uid: str, entry: _ProcessPod, grace: float) -> None:
        await asyncio.gather(
            *(r.terminate(grace, entry.tasks.get(n)) for n, r in entry.runners.items()),
            return_exceptions=True,
        )
        md = entry.pod["metadata"]
        current = self._store.peek(PODS, md.get("namespace"), md["name"])
        if current is not None and current["metadata"].get("uid") == uid:
            self._store.delete(
                PODS, md.get("namespace"), md["name"], grace_period=0, preconditions={"uid": uid}
            )

    def forget(self, uid: str) -> None:
        """The pod is gone from the store: kill what still runs, drop its files."""
        entry = self._pods.pop(uid, None)
        if entry is None:
            return
        for name, runner in entry.runners.items():
            if runner.process is not None:
                runner.process.kill_now()
            entry.tasks[name].cancel()
        if entry.renewing is not None:
            entry.renewing.cancel()
        shutil.rmtree(entry.root, ignore_errors=True)

    async def stop(self) -> None:
        """Cluster shutdown: SIGTERM every process, SIGKILL after ``stop_grace_seconds``."""
        entries = list(self._pods.values())
        await asyncio.gather(
            *(
                r.terminate(self.stop_grace_seconds, e.tasks.get(n))
                for e in entries
                for n, r in e.runners.items()
            ),
            return_exceptions=True,
        )
        for entry in entries:
            if entry.terminating is not None:
                entry.terminating.cancel()
        for uid in list(self._pods):
            self.forget(uid)
        if self._session is not None:
            await self._session.close()
            self._session = None

    # --- logs -------------------------------------------------------------------------------

    def log_target(self, pod: dict[str, Any], container: str, previous: bool) -> LogTarget:
        md = pod["metadata"]
        entry = self._pods.get(md.get("uid", ""))
        runner = None if entry is None else entry.runners.get(container)
        if runner is None:
            return LogTarget(None, lambda: False)
        name = md["name"]
        logs = runner.logs
        waiting = runner.state.state.get("waiting")
        if previous or waiting:
            if not runner.state.last_state.get("terminated") or not logs:
                if previous:
                    raise LogRequestError(
                        400,
                        f'previous terminated container "{container}" in pod "{name}" not found',
                    )
                reason = (waiting or {}).get("reason", "")
                raise LogRequestError(
                    400, f'container "{container}" in pod "{name}" is waiting to start: {reason}'
                )
            return LogTarget(logs[-1] if waiting else logs[-2], lambda: False)
        path = logs[-1]
        return LogTarget(path, lambda: path is not None and runner.instance_live(path))


async def _renew(writer: PodFileWriter) -> None:
    """Keep the pod's tokens fresh while it runs (the kubelet renews at 80 % of the lifetime)."""
    while writer.token_files:
        await asyncio.sleep(0.8 * min(seconds for _, seconds, _ in writer.token_files))
        await writer.renew_tokens()


def _log_failure(task: asyncio.Task[None]) -> None:
    """A bug in a container loop must show (the kubelet gathers them without raising)."""
    if not task.cancelled() and task.exception() is not None:
        log.error("kubelet: %s failed", task.get_name(), exc_info=task.exception())


def _kill_all(entry: _ProcessPod) -> None:
    for runner in entry.runners.values():
        if runner.process is not None and runner.process.running:
            runner.process.signals.append("SIGKILL")
            runner.process.kill_now()
