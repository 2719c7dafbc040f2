"""One container instance as a real child process, in its own session (process group).

stdout and stderr go to one log file per instance (what ``kubectl logs`` serves). Stopping sends
SIGTERM to the whole group, then SIGKILL after the grace period; once the main process is gone
the rest of its group is killed too, as a container runtime tears down a container's cgroup.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Mapping
from pathlib import Path

_TAIL_BYTES = 4096


def exit_code(returncode: int) -> int:
    """A process killed by a signal reports 128 + signal, as container runtimes do."""
    return 128 - returncode if returncode < 0 else returncode


class ContainerProcess:
    def __init__(self, argv: list[str], env: Mapping[str, str], cwd: Path, log_path: Path) -> None:
        self.argv, self.env, self.cwd, self.log_path = argv, dict(env), cwd, log_path
        self._process: asyncio.subprocess.Process | None = None
        self.signals: list[str] = []  # what the kubelet sent, for events and status

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.returncode is None

    async def start(self) -> None:
        """Raises OSError when the program cannot be executed."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.cwd.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log_file:
            self._process = await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log_file,
                stderr=asyncio.subprocess.STDOUT,
                env=self.env,
                cwd=self.cwd,
                start_new_session=True,
            )

    async def wait(self) -> int:
        if self._process is None:
            raise RuntimeError("the process was not started")
        returncode = await self._process.wait()
        self._kill_group(signal.SIGKILL)
        return exit_code(returncode)

    def _kill_group(self, signum: int) -> None:
        if self._process is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._process.pid, signum)

    async def stop(self, grace_seconds: float) -> int | None:
        """SIGTERM, then SIGKILL after ``grace_seconds``; the exit code, None if never started."""
        if self._process is None:
            return None
        if self._process.returncode is None:
            self.signals.append("SIGTERM")
            self._kill_group(signal.SIGTERM)
            try:
                await asyncio.wait_for(asyncio.shield(self._process.wait()), grace_seconds)
            except TimeoutError:
                self.signals.append("SIGKILL")
                self._kill_group(signal.SIGKILL)
        return await self.wait()

    def kill_now(self) -> None:
        """For a cluster going away without awaiting (last resort)."""
        self._kill_group(signal.SIGKILL)

    def last_line(self) -> str:
        """The last non-empty line of the instance's output (for the termination message)."""
        try:
            with self.log_path.open("rb") as log_file:
                log_file.seek(0, os.SEEK_END)
                size = log_file.tell()
                log_file.seek(max(0, size - _TAIL_BYTES))
                tail = log_file.read().decode(errors="replace")
        except OSError:
            return ""
        lines = [line.strip() for line in tail.splitlines() if line.strip()]
        return lines[-1] if lines else ""
