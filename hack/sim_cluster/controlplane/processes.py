"""Start and stop the control plane's processes: etcd, then kube-apiserver, then
kube-controller-manager and kube-scheduler, each waited for on its health endpoint.

Every process runs in its own session, dies with the process that started it
(``PR_SET_PDEATHSIG``: a test run killed with SIGKILL leaves no control plane behind), and logs
to ``logs/<component>.log`` under the control plane's directory.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import signal
import ssl
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

log = logging.getLogger("sim_cluster.controlplane")
_PR_SET_PDEATHSIG = 1
_POLL = 0.1
_STOP_GRACE = 10.0


class ControlPlaneError(RuntimeError):
    """A component did not start; the message has the end of its log."""


def _die_with_parent() -> None:  # runs in the child between fork and exec
    ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def tail(path: Path, lines: int = 25) -> str:
    if not path.exists():
        return "(no log)"
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


@dataclass
class Component:
    name: str
    argv: list[str]
    log_path: Path
    health_url: str
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    ready_seconds: float = 0.0  # from start to the first healthy answer
    history: list[int] = field(default_factory=list)  # exit codes of earlier runs

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as output:
            self.process = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent,  # noqa: PLW1509 (prctl only; no locks involved)
            )
        self.started_at = time.monotonic()

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, grace: float = _STOP_GRACE) -> None:
        """SIGTERM, then SIGKILL after ``grace`` seconds."""
        process = self.process
        if process is None:
            return
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
            try:
                process.wait(grace)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                process.wait(grace)
        self.history.append(process.returncode)
        self.process = None

    def kill(self) -> None:
        """SIGKILL at once (a crash, for fault tests)."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(_STOP_GRACE)
        self.stop(0.0)


async def wait_healthy(component: Component, context: ssl.SSLContext, seconds: float) -> None:
    """Poll the component's health URL until it answers 200 (bounded)."""
    deadline = time.monotonic() + seconds
    last = "no answer yet"
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2.0)) as session:
        while time.monotonic() < deadline:
            if not component.running:
                code = component.process.returncode if component.process else None
                raise ControlPlaneError(
                    f"{component.name} exited with {code} while starting; its log "
                    f"({component.log_path}) ends:\n{tail(component.log_path)}"
                )
            try:
                ssl_arg = context if component.health_url.startswith("https") else False
                async with session.get(component.health_url, ssl=ssl_arg) as response:
                    if response.status == 200:
                        component.ready_seconds = time.monotonic() - component.started_at
                        return
                    last = f"HTTP {response.status}: {(await response.text())[-300:]}"
            except (aiohttp.ClientError, OSError, TimeoutError) as error:
                last = str(error) or type(error).__name__
            await asyncio.sleep(_POLL)
    raise ControlPlaneError(
        f"{component.name} not healthy after {seconds:.0f} s ({last}); its log "
        f"({component.log_path}) ends:\n{tail(component.log_path)}"
    )


def stop_all(components: Sequence[Component]) -> None:
    """Stop in reverse start order (the API server before etcd)."""
    for component in reversed(components):
        try:
            component.stop()
        except Exception:
            log.exception("stopping %s failed", component.name)
