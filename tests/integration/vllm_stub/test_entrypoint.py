"""`python -m nemotron_sim.vllm serve ...` starts, answers, refuses, stops on SIGTERM."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.vllm_stub.conftest import MODEL, loopback_host

pytestmark = pytest.mark.integration

STARTUP_SECONDS = 15.0  # generous: importing the package on a busy 2-core CI machine
# Loopback traffic must never go through an HTTP proxy from the environment.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def module_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "nemotron_sim.vllm", *args]


def free_port(host: str) -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def stub_process(repo_root: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    host = loopback_host()
    port = free_port(host)
    process = subprocess.Popen(
        module_command(
            "serve", MODEL, "--served-model-name", "super",
            "--host", host, "--port", str(port), "--sim-load-seconds", "0.2",
        ),
        cwd=repo_root,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        yield process, f"http://{host}:{port}"
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=10)


def wait_healthy(process: subprocess.Popen[str], url: str) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        assert process.poll() is None, "the stand-in exited while starting"
        try:
            with _OPENER.open(f"{url}/health", timeout=1) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError):
            pass  # not bound yet (connection refused) or still loading (503)
        time.sleep(0.05)
    pytest.fail("the stand-in did not become healthy in time")


def test_module_entry_point_serves_and_stops_on_sigterm(
    stub_process: tuple[subprocess.Popen[str], str],
) -> None:
    process, url = stub_process
    wait_healthy(process, url)
    request = urllib.request.Request(  # noqa: S310 - a loopback URL built above
        f"{url}/v1/completions",
        data=json.dumps({"model": "super", "prompt": "Hello", "max_tokens": 4}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with _OPENER.open(request, timeout=5) as response:
        answer = json.load(response)
    assert answer["usage"]["completion_tokens"] == 4
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=10)
    assert process.returncode == 0
    assert "simulated" in stderr


def test_module_entry_point_refuses_a_removed_flag_with_argparse_status(repo_root: Path) -> None:
    result = subprocess.run(
        module_command("serve", MODEL, "--swap-space", "16"),
        cwd=repo_root,
        capture_output=True,
        text=True,
        timeout=STARTUP_SECONDS,
        check=False,
    )
    assert result.returncode == 2
    assert "unrecognized arguments: --swap-space" in result.stderr
