"""Fixtures for the API stand-in: a SIMULATED Kubernetes API server on loopback.

``api`` runs :class:`SimApiServer` in a background thread (for kubectl and kopf subprocesses);
``server`` and ``http`` run it on the test's own event loop (for request-level checks).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
import pytest

from nemotron_sim.apiserver import ServerThread, SimApiServer, Store, serve_in_thread
from tests.integration.conftest import run_kubectl

T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[3]
CRD_FILE = ROOT / "crds" / "serving.nemotron.io_nemotrondeployments.yaml"
WIDGET_CRD = Path(__file__).with_name("widget_crd.yaml")


class ApiHandle:
    """The threaded server as a test sees it: kubectl, raw HTTP and the store (via its loop)."""

    def __init__(self, thread: ServerThread, workdir: Path) -> None:
        self.thread = thread
        self.url = thread.url
        self.workdir = workdir
        self.kubeconfig = thread.call(lambda: thread._require().kubeconfig(workdir / "kubeconfig"))
        self.env = {
            **os.environ,
            "KUBECONFIG": str(self.kubeconfig),
            "KUBECACHEDIR": str(workdir / "kubecache"),  # no stale discovery between tests
        }

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        return run_kubectl(self.env, *args, input=input, check=check)

    def store(self, fn: Callable[[Store], T]) -> T:
        """Run ``fn(store)`` on the server's loop: the store is single-threaded."""
        return self.thread.call(lambda: fn(self.thread._require().store))

    def request(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(  # noqa: S310 - loopback URL of the stand-in
            self.url + path, data=data, method=method, headers={"Content-Type": content_type}
        )
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:  # noqa: S310
                return resp.status, json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read() or b"null")


def wait_until(check: Callable[[], T], *, seconds: float = 15.0, what: str = "") -> T:
    """Poll ``check`` every 50 ms, at most ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {seconds}s waiting for {what or check}")
        time.sleep(0.05)


@pytest.fixture
def api(tmp_path: Path) -> Iterator[ApiHandle]:
    with serve_in_thread(bookmark_interval=0.5) as thread:
        yield ApiHandle(thread, tmp_path)


@pytest.fixture
async def server() -> AsyncIterator[SimApiServer]:
    async with SimApiServer(bookmark_interval=0.2) as started:
        yield started


@pytest.fixture
async def http(server: SimApiServer) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(base_url=server.url) as session:
        yield session
