"""A list is read in pages (``limit`` and ``continue``, as client-go's informers list), and the
version a watch starts from is the snapshot's, from the first page."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from nemotron_operator.kube import KubeClient, load_connection
from nemotron_operator.kube import client as kube_client
from nemotron_operator.kube.resources import PODS


class PagedServer:
    """Seven pods served three at a time; each page names the snapshot's version 40."""

    def __init__(self) -> None:
        self.queries: list[dict[str, str]] = []

    async def pods(self, request: web.Request) -> web.Response:
        query = dict(request.query)
        self.queries.append(query)
        limit = int(query["limit"])
        start = int(query.get("continue", "0"))
        names = [f"p{i}" for i in range(7)][start : start + limit]
        metadata = {"resourceVersion": "40" if start == 0 else "41"}
        if start + limit < 7:
            metadata["continue"] = str(start + limit)
        return web.json_response(
            {"metadata": metadata, "items": [{"metadata": {"name": n}} for n in names]}
        )


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[tuple[PagedServer, Path]]:
    paged = PagedServer()
    app = web.Application()
    app.router.add_get("/api/v1/namespaces/ai/pods", paged.pods)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    config = tmp_path / "kubeconfig"
    config.write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters: [{{name: c, cluster: {{server: 'http://127.0.0.1:{port}'}}}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"
    )
    try:
        yield paged, config
    finally:
        await runner.cleanup()


async def test_a_list_is_read_page_by_page_from_one_snapshot(
    server: tuple[PagedServer, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    paged, config = server
    monkeypatch.setattr(kube_client, "LIST_PAGE", 3)
    async with KubeClient(load_connection(str(config))) as kube:
        items, version = await kube.list_versioned(PODS, "ai", label_selector="app=x")
    assert [item["metadata"]["name"] for item in items] == [f"p{i}" for i in range(7)]
    assert {item["kind"] for item in items} == {"Pod"}
    assert version == "40"  # the first page's: the snapshot the pages belong to
    assert [q.get("continue") for q in paged.queries] == [None, "3", "6"]
    assert {q["limit"] for q in paged.queries} == {"3"}
    assert {q["labelSelector"] for q in paged.queries} == {"app=x"}
