"""AdapterSync against a stand-in vLLM on loopback, started from the command line the operator
renders: adapters added to and removed from the spec reach the running server without a restart,
what it serves is reported, a failed load backs off and the fingerprint's revision moves."""

from __future__ import annotations

import os
from typing import Any

from nemotron_operator.api.errors import parse_deployment
from nemotron_operator.controller.pods.adapters import AdapterSync
from nemotron_operator.controller.queue import WorkQueue
from nemotron_operator.render import RenderOptions, render_all
from nemotron_operator.sizing import plan_deployment
from nemotron_sim.vllm import StubVllm

HOST = f"127.{150 + os.getpid() % 50}.11.1"
KEY = ("ai", "nano")


def deployment(adapters: list[dict[str, Any]], **lora: Any) -> Any:
    return parse_deployment(
        {
            "apiVersion": "serving.nemotron.io/v1alpha1",
            "kind": "NemotronDeployment",
            "metadata": {"name": "nano", "namespace": "ai", "uid": "nd"},
            "spec": {
                "model": {"id": "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"},
                "engine": {"maxModelLen": 131072, "lora": {"maxLoras": 2, **lora}},
                "capacity": {"gpu": {"products": ["NVIDIA-H200"]}},
                "adapters": adapters,
            },
        }
    )


def hf(name: str, rank: int = 8) -> dict[str, Any]:
    return {"name": name, "rank": rank, "source": {"huggingFace": {"id": f"org/{name}"}}}


def pod(started: str = "t0") -> dict[str, Any]:
    return {
        "metadata": {"name": "nano-0", "uid": "p1", "labels": {}},
        "status": {
            "podIP": HOST,
            "conditions": [{"type": "ContainersReady", "status": "True"}],
            "containerStatuses": [{"name": "vllm", "state": {"running": {"startedAt": started}}}],
        },
    }


async def stand_in(d: Any) -> StubVllm:
    objects = render_all(d, plan_deployment(d.spec), RenderOptions())
    [sts] = [o for o in objects if o["kind"] == "StatefulSet"]
    container = sts["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    stub = StubVllm([*container["command"], *container["args"]], env=env)
    await stub.start(HOST, 0)
    return stub


async def test_runtime_add_remove_and_report() -> None:
    first = deployment([hf("sql")])
    stub = await stand_in(first)
    now = [0.0]
    queue = WorkQueue()
    sync = AdapterSync(queue, port=stub.port or 0, clock=lambda: now[0])

    async def look(d: Any, started: str = "t0") -> Any:
        await sync.seen(KEY, d, [pod(started)])
        await sync._running.settled()
        return await sync.seen(KEY, d, [pod(started)])

    try:
        before = sync.revision(KEY)
        assert await look(first) == (("nano-0", ("sql",), None),)
        assert sorted(stub.lora.loaded) == ["sql"]
        assert sync.revision(KEY) != before  # the reconcile will not be skipped
        # Added in the spec: loaded into the same running server (no new StubVllm).
        second = deployment([hf("sql"), hf("law")])
        assert await look(second) == (("nano-0", ("law", "sql"), None),)
        # Removed: unloaded.
        assert await look(deployment([hf("law")])) == (("nano-0", ("law",), None),)
        assert sorted(stub.lora.loaded) == ["law"]
        # A container restart loses runtime loads; the new container gets them again.
        stub.lora.loaded.clear()
        assert await look(deployment([hf("law")]), started="t1") == (("nano-0", ("law",), None),)
        # Behind the operator's back: seen again when the look is due.
        stub.lora.unload("law")
        settled = sync.revision(KEY)
        now[0] = 301.0
        assert sync.revision(KEY) != settled  # a due look changes the fingerprint
        assert await look(deployment([hf("law")]), started="t1") == (("nano-0", ("law",), None),)
    finally:
        await stub.stop()


async def test_a_failed_load_is_reported_and_backs_off() -> None:
    d = deployment([hf("sql")])
    stub = await stand_in(d)
    stub.lora._env["HF_HUB_OFFLINE"] = "1"  # the Hub cannot be reached
    now = [0.0]
    sync = AdapterSync(WorkQueue(), port=stub.port or 0, clock=lambda: now[0])
    try:
        await sync.seen(KEY, d, [pod()])
        await sync._running.settled()
        [(name, served, message)] = await sync.seen(KEY, d, [pod()])
        assert (name, served) == ("nano-0", ())
        assert message is not None
        assert "sql: 400" in message
        assert not sync._running  # inside the back-off: no new attempt
        stub.lora._env["HF_HUB_OFFLINE"] = "0"
        now[0] = 16.0
        await sync.seen(KEY, d, [pod()])
        await sync._running.settled()
        assert await sync.seen(KEY, d, [pod()]) == (("nano-0", ("sql",), None),)
    finally:
        await stub.stop()


async def test_without_runtime_updates_only_reads() -> None:
    d = deployment([hf("sql")], runtimeUpdates=False)
    stub = await stand_in(d)  # --lora-modules: served from the start
    sync = AdapterSync(WorkQueue(), port=stub.port or 0)
    try:
        await sync.seen(KEY, d, [pod()])
        await sync._running.settled()
        assert await sync.seen(KEY, d, [pod()]) == (("nano-0", ("sql",), None),)
        assert await sync.seen(KEY, deployment([]), []) == ()
    finally:
        await stub.stop()


async def test_lora_off_reports_nothing() -> None:
    d = parse_deployment(
        {
            "apiVersion": "serving.nemotron.io/v1alpha1",
            "kind": "NemotronDeployment",
            "metadata": {"name": "nano", "namespace": "ai"},
            "spec": {"model": {"id": "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"}},
        }
    )
    assert await AdapterSync(WorkQueue()).seen(KEY, d, [pod()]) is None
