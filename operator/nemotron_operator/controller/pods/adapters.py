"""LoRA adapters in the running pods: load and unload at run time, and what each pod serves.

The reconcile hands the serving pods here (``seen``), beside the scraper and the behavioural
check. For each leader whose vLLM is up (``ContainersReady``) a background task reads
``GET /v1/models`` (adapters are the entries with a ``parent``) and, when the deployment loads
adapters at run time (``engine.lora.runtimeUpdates``, render/adapters.py), makes the served set
the wanted one: ``POST /v1/unload_lora_adapter`` for each adapter served but not wanted (or
served from another path), ``POST /v1/load_lora_adapter`` for each wanted one missing, then
reads ``/v1/models`` again. Without runtime updates the adapters are ``--lora-modules`` of the
command line (a change rolls the pods) and the task only reads. What it read becomes
``status.adapters``.

Mind the reconcile's fingerprint (``controller/reconcile/unchanged.py``): ``revision`` changes
whenever a task recorded a different served set or a failure, and lists the pods due for another
look — a failed load after its back-off, any pod after ``RECHECK_SECONDS`` (an adapter unloaded
behind the operator's back) — so a reconcile skipped on unchanged inputs still acts while the served
set differs from the wanted one. A task that changed what status shows queues the deployment.
Nothing here talks to the API server.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp

from nemotron_operator.api import NemotronDeployment
from nemotron_operator.controller.pods.tasks import PodTasks, backoff
from nemotron_operator.controller.queue import Key, WorkQueue
from nemotron_operator.render import names as n
from nemotron_operator.render.adapters import (
    WantedAdapter,
    loadable_in_pod,
    lora_enabled,
    runtime_updates,
    wanted_adapters,
)
from nemotron_operator.render.engine import SERVE_PORT
from nemotron_operator.status import verification as v

logger = logging.getLogger(__name__)
REQUEST_TIMEOUT_SECONDS = 30.0  # a Hub adapter is fetched inside the load request
BACKOFF_FIRST = 15.0
BACKOFF_CAP = 600.0
RECHECK_SECONDS = 300.0
MAX_MESSAGE = 256
# A pod's identity for what its vLLM holds: a restarted container has lost runtime loads.
PodKey = tuple[str, str, str]  # name, uid, the vllm container's startedAt
Served = tuple[tuple[str, str], ...]  # (adapter name, path), sorted


@dataclass(frozen=True)
class _Seen:
    served: Served
    next_look: float  # monotonic: look again from then on
    tried: Served | None = None  # the wanted set the last look converged to (None: only read)
    failures: int = 0
    message: str | None = None  # the last failure, for status


def _pod_key(pod: Mapping[str, Any]) -> PodKey:
    md = pod.get("metadata") or {}
    started = ""
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        if status.get("name") == "vllm":
            started = str(((status.get("state") or {}).get("running") or {}).get("startedAt", ""))
    return str(md.get("name", "")), str(md.get("uid", "")), started


class AdapterSync:
    def __init__(
        self,
        queue: WorkQueue,
        *,
        port: int = SERVE_PORT,
        timeout: float = REQUEST_TIMEOUT_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.queue = queue
        self.port = port
        self.timeout = timeout
        self.clock = clock
        self._seen: dict[Key, dict[PodKey, _Seen]] = {}
        self._running = PodTasks()  # at most one check (or sync) per pod
        self._revision: dict[Key, int] = {}

    async def seen(
        self,
        key: Key,
        deployment: NemotronDeployment | None,
        pods: Sequence[Mapping[str, Any]],
    ) -> tuple[tuple[str, tuple[str, ...], str | None], ...] | None:
        """Start the syncs these pods need; return what each serving pod serves (for
        ``status.adapters``), or None when LoRA is off."""
        if deployment is None or not lora_enabled(deployment):
            self.forget(key)
            return None
        wanted: tuple[WantedAdapter, ...] | None = None
        if runtime_updates(deployment):
            wanted = wanted_adapters(deployment)
        targets = {
            _pod_key(p): p
            for p in pods
            if v.role(p) != n.ROLE_WORKER  # workers of a multi-node replica run no API server
            and v.containers_ready(p)
            and (p.get("status") or {}).get("podIP")
            and not (p.get("metadata") or {}).get("deletionTimestamp")
        }
        known = self._seen.setdefault(key, {})
        for gone in [pk for pk in known if pk not in targets]:
            del known[gone]
        for pk, pod in targets.items():
            seen = known.get(pk)
            # Per pod: an adapter of the download step only where that pod's download step
            # fetched it (render/adapters.py loadable_in_pod).
            loadable: Served | None = None
            if wanted is not None:
                loadable = tuple(sorted((a.name, a.path) for a in loadable_in_pod(wanted, pod)))
            # A new pod, a changed wanted set (a spec edit) or a look that is due; a failed
            # load of the same set waits for its back-off.
            if pk not in self._running and (
                seen is None or seen.tried != loadable or self.clock() >= seen.next_look
            ):
                self._start(key, pk, pod, loadable)
        return tuple(
            sorted((pk[0], tuple(n for n, _ in s.served), s.message) for pk, s in known.items())
        )

    def revision(self, key: Key) -> tuple[int, tuple[PodKey, ...]]:
        """For the reconcile's fingerprint: bumped when a task recorded something new, and the
        pods whose next look is due."""
        now = self.clock()
        due = tuple(sorted(pk for pk, s in self._seen.get(key, {}).items() if now >= s.next_look))
        return self._revision.get(key, 0), due

    def forget(self, key: Key) -> None:
        self._seen.pop(key, None)

    def _start(self, key: Key, pk: PodKey, pod: Mapping[str, Any], wanted: Served | None) -> None:
        url = f"http://{(pod.get('status') or {}).get('podIP')}:{self.port}"
        self._running.start(pk, self._sync(key, pk, url, wanted))

    async def _sync(self, key: Key, pk: PodKey, url: str, wanted: Served | None) -> None:
        before = self._seen.get(key, {}).get(pk)
        try:
            served, problem = await self._converge(url, wanted)
        except (aiohttp.ClientError, TimeoutError, OSError, ValueError) as exc:
            served, problem = (before.served if before else ()), repr(exc)[:MAX_MESSAGE]
        except Exception:  # a background task: log, the next look tries again
            logger.exception("%s/%s: adapter sync of %s", *key, pk[0])
            served, problem = (before.served if before else ()), "unexpected error"
        failures = 0 if problem is None else (before.failures if before else 0) + 1
        delay = RECHECK_SECONDS
        if problem is not None:
            delay = backoff(failures, BACKOFF_FIRST, BACKOFF_CAP)
            logger.warning(
                "%s/%s: LoRA adapters of %s (again in %.0f s): %s", *key, pk[0], delay, problem
            )
        seen = _Seen(served, self.clock() + delay, wanted, failures, problem)
        known = self._seen.get(key)
        if known is None:
            return  # forgotten meanwhile
        known[pk] = seen
        if before is None or (before.served, before.message) != (served, problem):
            self._revision[key] = self._revision.get(key, 0) + 1
            self.queue.add(key)

    async def _converge(self, url: str, wanted: Served | None) -> tuple[Served, str | None]:
        timeout = aiohttp.ClientTimeout(total=self.timeout)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            served = await _served(session, url)
            if wanted is None or served == wanted:
                return served, None
            want, have = dict(wanted), dict(served)
            problems = []
            for name, path in have.items():
                if want.get(name) != path:
                    problems += await _post(session, f"{url}/v1/unload_lora_adapter", name, None)
            for name, path in want.items():
                if have.get(name) != path:
                    problems += await _post(session, f"{url}/v1/load_lora_adapter", name, path)
            served = await _served(session, url)
        if not problems and served != wanted:
            problems.append(f"serves {[n for n, _ in served]} after loading {list(want)}")
        return served, ("; ".join(problems)[:MAX_MESSAGE] if problems else None)


async def _served(session: aiohttp.ClientSession, url: str) -> Served:
    """The adapters vLLM lists in /v1/models (the entries with a parent), with their paths."""
    async with session.get(f"{url}/v1/models") as response:
        response.raise_for_status()
        body = await response.json(content_type=None)
    data = body.get("data") if isinstance(body, dict) else None
    found = [
        (str(m.get("id")), str(m.get("root")))
        for m in data or []
        if isinstance(m, dict) and m.get("parent")
    ]
    return tuple(sorted(found))


async def _post(session: aiohttp.ClientSession, url: str, name: str, path: str | None) -> list[str]:
    body = {"lora_name": name} if path is None else {"lora_name": name, "lora_path": path}
    async with session.post(url, json=body) as response:
        if response.status < 300:
            return []
        text = (await response.text())[:MAX_MESSAGE]
    return [f"{name}: {response.status} {text}"]
