"""Moving a deployment's image from vLLM v0.31.0 to v0.34.0 on the real control plane: it gets
the 0.34 plan (hybrid blocks in multiples of 64, the extensible KV cache's pool) and a rollout to
new pods, which the stand-in vLLM sizes as 0.34 does (PlanAccurate); a deployment whose image
does not change keeps its plan and its pods, with no container restarted."""

from __future__ import annotations

from typing import Any

from tests.integration.operator.helpers import (
    NAMESPACE,
    PODS,
    apply,
    children,
    condition,
    deployment,
    status,
    wait_ready,
)
from tests.integration.operator_process import OperatorProcess, ensure_namespace

H200 = {"gpu": {"products": ["NVIDIA-H200"]}}


def image(version: str) -> dict[str, Any]:
    return {"image": f"vllm/vllm-openai:v{version}"}


def serving(operator: OperatorProcess, name: str) -> dict[str, tuple[str, int]]:
    """Each serving pod of ``name``: (uid, container restarts)."""
    found = {}
    for pod in children(operator.cluster, PODS, name):
        if pod["metadata"].get("deletionTimestamp"):
            continue
        statuses = pod.get("status", {}).get("containerStatuses", [])
        found[pod["metadata"]["name"]] = (
            pod["metadata"]["uid"],
            sum(c.get("restartCount", 0) for c in statuses),
        )
    return found


def test_a_new_vllm_image_replans_and_rolls_an_unchanged_one_keeps_plan_and_pods(
    operator_process: OperatorProcess,
) -> None:
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    for name in ("moving", "staying"):
        apply(cluster, deployment(name, engine=image("0.31.0"), capacity=H200))
    for name in ("moving", "staying"):
        wait_ready(cluster, name, seconds=120)
    before = {name: status(cluster, name)["plan"] for name in ("moving", "staying")}
    assert {p["engineVersion"] for p in before.values()} == {"0.31"}
    pods_before = {name: serving(operator_process, name) for name in ("moving", "staying")}

    apply(cluster, deployment("moving", engine=image("0.34.0"), capacity=H200))
    cluster.wait_until(
        lambda: status(cluster, "moving").get("plan", {}).get("engineVersion") == "0.34",
        seconds=60,
        what="the 0.34 plan",
    )
    moved = status(cluster, "moving")["plan"]
    assert moved["blockSizeTokens"] % 64 == 0
    assert moved["blockSizeTokens"] != before["moving"]["blockSizeTokens"]
    assert moved["kvCacheBlocks"] != before["moving"]["kvCacheBlocks"]

    def rolled() -> bool:
        pods = serving(operator_process, "moving")
        old = {uid for uid, _ in pods_before["moving"].values()}
        return bool(pods) and not old & {uid for uid, _ in pods.values()}

    cluster.wait_until(rolled, seconds=120, what="new pods of the moving deployment")
    wait_ready(cluster, "moving", seconds=120)
    for pod in children(cluster, PODS, "moving"):
        (vllm,) = [c for c in pod["spec"]["containers"] if c["name"] == "vllm"]
        assert vllm["image"] == "vllm/vllm-openai:v0.34.0"
        assert "--gpu-memory-utilization" not in vllm["args"]  # 0.34: vLLM's own default
    # The stand-in sized its pool as 0.34 does: the plan check agrees with the new plan.
    cluster.wait_until(
        lambda: condition(cluster, "PlanAccurate", "moving").get("status") == "True",
        seconds=90,
        what="PlanAccurate on the 0.34 plan",
    )

    # The deployment that kept its image: same plan, same pods, nothing restarted.
    assert status(cluster, "staying")["plan"] == before["staying"]
    assert serving(operator_process, "staying") == pods_before["staying"]
    assert status(cluster, "staying")["phase"] == "Ready"
