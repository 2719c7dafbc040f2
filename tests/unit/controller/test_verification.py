"""The Verifier against a stand-in vLLM on loopback and the in-memory API server: a failed pod
is re-checked only after its back-off, a fixed one then passes, and a worker follows its
leader."""

from __future__ import annotations

import copy
import os
from typing import Any, cast

from nemotron_operator.api.errors import parse_deployment
from nemotron_operator.controller.decide.desired import Planned, plan_and_render
from nemotron_operator.controller.pods.verifier import Verifier
from nemotron_operator.kube import KubeClient
from nemotron_operator.kube.resources import PODS
from nemotron_operator.sizing import GpuInventory
from nemotron_operator.sizing.inventory import GpuNode
from nemotron_operator.status.verification import GATE, VerifiedCondition
from nemotron_operator.telemetry.metrics import OperatorMetrics
from nemotron_sim.vllm import StubVllm
from nemotron_sim.vllm.parsers import OutputFault
from tests.unit.controller.fake_kube import FakeKube

NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
HOST = f"127.{150 + os.getpid() % 50}.9.1"
LATER = "2999-01-01T00:00:00Z"  # a container start after any gate write of the test


def nano() -> Any:
    return parse_deployment(
        {
            "apiVersion": "serving.nemotron.io/v1alpha1",
            "kind": "NemotronDeployment",
            "metadata": {"name": "nano", "namespace": "ai", "uid": "nd"},
            "spec": {"model": {"id": NANO}, "engine": {"maxModelLen": 131072}},
        }
    )


def pod(kube: FakeKube, name: str, role: str, ip: str) -> dict[str, Any]:
    return kube.put(
        PODS,
        {
            "metadata": {
                "name": name,
                "namespace": "ai",
                "labels": {"serving.nemotron.io/role": role, "serving.nemotron.io/replica": "0"},
            },
            "spec": {"readinessGates": [{"conditionType": GATE}]},
            "status": {"podIP": ip, "conditions": [{"type": "ContainersReady", "status": "True"}]},
        },
    )


def gate(kube: FakeKube, name: str) -> tuple[str, str]:
    for c in kube.stored(PODS, "ai", name)["status"]["conditions"]:
        if c["type"] == GATE:
            return c["status"], c["reason"]
    return "Unknown", ""


async def serving_with_a_fault() -> tuple[Any, Planned, StubVllm]:
    """The nano deployment's plan on one H200 node, and a stand-in vLLM started on HOST with its
    command line whose tool calls come back unparsed."""
    deployment = nano()
    inventory = GpuInventory(
        nodes=(GpuNode("gpu-0", "NVIDIA-H200", 8, 8, memory_mib=None, compute_capability=None),)
    )
    planned = plan_and_render(deployment, inventory, allow_remote_code=False)
    assert isinstance(planned, Planned)
    [sts] = [o for o in planned.desired if o["kind"] == "StatefulSet"]
    argv = sts["spec"]["template"]["spec"]["containers"][0]
    stub = StubVllm([*argv["command"], *argv["args"]],
                    output_faults=frozenset({OutputFault.TOOL_CALL_UNPARSED}))  # fmt: skip
    await stub.start(HOST, 0)
    return deployment, planned, stub


async def test_back_off_then_pass_and_the_worker_follows() -> None:
    deployment, planned, stub = await serving_with_a_fault()
    now = [0.0]
    kube = FakeKube()
    verifier = Verifier(cast(KubeClient, kube), OperatorMetrics(), port=stub.port or 0,
                        clock=lambda: now[0])  # fmt: skip
    key = ("ai", "nano")

    async def reconcile() -> VerifiedCondition | None:
        pods = [kube.stored(PODS, "ai", n) for n in ("nano-0", "nano-0-w-1")]
        found = await verifier.seen(key, deployment, planned, pods)
        await verifier._running.settled()
        return found

    try:
        pod(kube, "nano-0", "leader", HOST)
        pod(kube, "nano-0-w-1", "worker", "127.0.0.2")
        assert (await reconcile())[1] == "Verifying"  # type: ignore[index]
        assert gate(kube, "nano-0") == ("False", "CheckFailed")
        status, reason, message, _ = await reconcile()  # type: ignore[misc]
        assert (status, reason) == ("False", "CheckFailed")
        assert message.startswith("pod nano-0: check tool-call failed: the tool call was not ")
        assert gate(kube, "nano-0-w-1") == ("Unknown", "")  # the worker waits for its leader
        checks = len([w for w in kube.writes if w.subresource == "status"])
        now[0] = 29.0  # inside the 30 s back-off: no new check, no write
        await reconcile()
        assert len([w for w in kube.writes if w.subresource == "status"]) == checks
        stub.output_faults = frozenset()
        now[0] = 31.0
        await reconcile()
        assert gate(kube, "nano-0") == ("True", "Passed")
        assert (await reconcile())[:2] == ("True", "Passed")  # type: ignore[index]
        assert gate(kube, "nano-0-w-1") == ("True", "FollowingLeader")
    finally:
        await stub.stop()


async def test_a_written_result_is_not_checked_again_from_a_stale_cache_until_a_restart() -> None:
    """The pod as the watch cache still shows it before the gate write's event arrives starts
    no second check (it did: a reconcile in between checked a pod that had just passed, or
    had just failed, again); a container restart does."""
    deployment, planned, stub = await serving_with_a_fault()
    kube = FakeKube()
    verifier = Verifier(cast(KubeClient, kube), OperatorMetrics(), port=stub.port or 0,
                        clock=lambda: 1.0)  # fmt: skip
    key = ("ai", "nano")

    def gate_writes() -> int:
        return len([w for w in kube.writes if w.subresource == "status"])

    async def reconcile(seen_pod: dict[str, Any]) -> None:
        await verifier.seen(key, deployment, planned, [seen_pod])
        await verifier._running.settled()

    try:
        created = pod(kube, "nano-0", "leader", HOST)
        created["status"]["containerStatuses"] = [{"name": "vllm", "restartCount": 0}]
        stale = copy.deepcopy(created)  # what the cache holds until the write's event
        await reconcile(stale)
        assert gate(kube, "nano-0") == ("False", "CheckFailed")
        assert gate_writes() == 1
        await reconcile(stale)  # the failure is not in the cache yet: no check inside back-off
        assert gate_writes() == 1
        stub.output_faults = frozenset()
        restarted = copy.deepcopy(stale)
        restarted["status"]["containerStatuses"][0]["restartCount"] = 1
        await reconcile(restarted)  # a new process: checked, and it passes
        assert gate(kube, "nano-0") == ("True", "Passed")
        assert gate_writes() == 2
        await reconcile(restarted)  # the pass is not in the cache yet: not checked again
        assert gate_writes() == 2
        restarted["status"]["containerStatuses"][0]["restartCount"] = 2
        await reconcile(restarted)
        assert gate_writes() == 3
        # The pass in the cache, then vLLM restarts after it: checked again, once.
        shown = copy.deepcopy(kube.stored(PODS, "ai", "nano-0"))
        shown["status"]["containerStatuses"] = [
            {"name": "vllm", "restartCount": 3, "state": {"running": {"startedAt": LATER}}}
        ]
        await reconcile(shown)
        assert gate_writes() == 4
        await reconcile(shown)  # its own pass not in the cache yet
        assert gate_writes() == 4
    finally:
        await stub.stop()
