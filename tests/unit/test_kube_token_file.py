"""A kubeconfig's ``tokenFile`` is followed when it is rewritten: the next request the operator
makes carries the new token, without a restart (the Kubernetes client alone reads it once)."""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from nemotron_operator.kube import KubeClient, load_connection
from nemotron_operator.kube.config import Connection, TokenFile
from nemotron_operator.kube.resources import NODES


def kubeconfig(server: str, user: str) -> str:
    return f"""\
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {{server: "{server}"}}
users:
- name: u
  user: {user}
contexts:
- name: x
  context: {{cluster: c, user: u}}
current-context: x
"""


class Recorder:
    """An API server on 127.0.0.1 that remembers each request's Authorization header."""

    def __init__(self) -> None:
        self.headers: list[str | None] = []

    async def node(self, request: web.Request) -> web.Response:
        self.headers.append(request.headers.get("Authorization"))
        return web.json_response({"kind": "Node", "metadata": {"name": request.match_info["n"]}})


@pytest.fixture
async def api_server() -> AsyncIterator[tuple[Recorder, str]]:
    recorder = Recorder()
    app = web.Application()
    app.router.add_get("/api/v1/nodes/{n}", recorder.node)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield recorder, f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


async def sent_header(connection: Connection, recorder: Recorder) -> str | None:
    async with KubeClient(connection) as client:
        assert await client.get(NODES, None, "gpu-0") is not None
    return recorder.headers[-1]


def replace(path: Path, text: str) -> None:
    """As the kubelet writes a projected token: a new file renamed over the old one."""
    staged = path.with_suffix(".new")
    staged.write_text(text)
    os.replace(staged, path)


async def test_a_rotated_token_file_is_sent_on_the_next_request(
    tmp_path: Path, api_server: tuple[Recorder, str]
) -> None:
    recorder, server = api_server
    (tmp_path / "token").write_text("first-token\n")  # as `kubectl create token > token` writes
    config = tmp_path / "kubeconfig"
    config.write_text(kubeconfig(server, "{tokenFile: token}"))  # relative to the kubeconfig
    connection = load_connection(str(config))

    assert await sent_header(connection, recorder) == "Bearer first-token"
    replace(tmp_path / "token", "second-token\n")
    assert await sent_header(connection, recorder) == "Bearer second-token"
    (tmp_path / "token").write_text("third-token-rewritten-in-place")
    assert await sent_header(connection, recorder) == "Bearer third-token-rewritten-in-place"
    assert connection.token == "third-token-rewritten-in-place"  # what kopf logs in with


async def test_a_missing_or_empty_token_file_keeps_the_last_token_and_warns_once(
    tmp_path: Path, api_server: tuple[Recorder, str], caplog: pytest.LogCaptureFixture
) -> None:
    recorder, server = api_server
    token = tmp_path / "token"
    token.write_text("kept-token")
    config = tmp_path / "kubeconfig"
    config.write_text(kubeconfig(server, f"{{tokenFile: {token}}}"))
    connection = load_connection(str(config))
    assert await sent_header(connection, recorder) == "Bearer kept-token"

    token.unlink()
    with caplog.at_level(logging.WARNING, logger="nemotron_operator.kube.config"):
        assert await sent_header(connection, recorder) == "Bearer kept-token"
        assert await sent_header(connection, recorder) == "Bearer kept-token"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings
    assert str(token) in warnings[0]
    assert "keeping the last token" in warnings[0]

    token.write_text("")  # caught between truncation and write
    assert await sent_header(connection, recorder) == "Bearer kept-token"
    token.write_text("back-token")
    assert await sent_header(connection, recorder) == "Bearer back-token"


async def test_an_inline_token_wins_over_a_token_file_as_in_the_client(
    tmp_path: Path, api_server: tuple[Recorder, str]
) -> None:
    recorder, server = api_server
    token = tmp_path / "token"
    token.write_text("file-token")
    config = tmp_path / "kubeconfig"
    config.write_text(kubeconfig(server, f"{{token: inline-token, tokenFile: {token}}}"))
    connection = load_connection(str(config))
    token.write_text("rotated-file-token")
    assert await sent_header(connection, recorder) == "Bearer inline-token"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Configuration:
    def __init__(self) -> None:
        self.api_key: dict[str, str] = {}


def test_a_rewrite_the_file_stat_cannot_see_is_read_within_max_age(tmp_path: Path) -> None:
    """Same inode, same size, modification time put back: only the age check catches it."""
    path = tmp_path / "token"
    path.write_text("token-aaaa")
    clock, configuration = Clock(), Configuration()
    follow = TokenFile(str(path), max_age=60.0, clock=clock)
    follow(configuration)
    assert configuration.api_key["BearerToken"] == "Bearer token-aaaa"

    before = path.stat()
    path.write_text("token-bbbb")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    clock.now += 59.0
    follow(configuration)
    assert configuration.api_key["BearerToken"] == "Bearer token-aaaa"  # no read: stat unchanged
    clock.now += 1.0
    follow(configuration)
    assert configuration.api_key["BearerToken"] == "Bearer token-bbbb"
