"""A deployment is planned and rendered again only when something a plan reads changed: its spec
(the parsed object), the GPU nodes (products, sizes), the kinds served — not a pod's step, not
GPUs taken or freed on a node (``controller/decide/plan_memo.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from nemotron_operator.controller.decide import desired
from nemotron_operator.controller.decide.plan_memo import PlanMemo
from nemotron_operator.controller.settings import OperatorConfig
from nemotron_operator.kube.resources import NEMOTRON_DEPLOYMENTS, NODES, PODS
from nemotron_operator.sizing import inventory_from_nodes
from tests.unit.controller.world import (
    CHILDREN,
    STATUS,
    World,
    deployment,
    new,
    node,
    other_pod,
    rolled_out,
    serving_pod,
)

EXAMPLES = sorted((Path(__file__).parents[3] / "examples").glob("*.yaml"))


@pytest.fixture
def plans(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the deployments planned and rendered, one entry per computation."""
    computed: list[str] = []
    real = desired.plan_and_render

    def counting(deployment: Any, *args: Any, **kwargs: Any) -> Any:
        computed.append(deployment.metadata.name)
        return real(deployment, *args, **kwargs)

    monkeypatch.setattr(desired, "plan_and_render", counting)
    return computed


async def created(plans: list[str]) -> World:
    w = await new()
    _, writes = await w.reconcile()
    assert writes == [*CHILDREN, STATUS]
    assert plans == ["nano"]
    return w


async def test_a_pod_step_or_gpus_used_elsewhere_are_not_planned_again(plans: list[str]) -> None:
    w = await created(plans)
    rolled_out(w)
    w.kube.put(PODS, serving_pod())
    w.kube.put(PODS, other_pod("h200-b", 4))  # someone else's GPUs: status reads them, no plan
    outcome, writes = await w.reconcile()
    assert outcome.status is not None
    assert outcome.status.phase == "Ready"
    assert writes == [STATUS]
    assert plans == ["nano"]


async def test_a_spec_change_is_planned_and_rendered_again(plans: list[str]) -> None:
    w = await created(plans)
    w.edit_spec(engine={"maxModelLen": 65536})
    _, writes = await w.reconcile()
    assert plans == ["nano", "nano"]
    assert "apply StatefulSet/nano" in writes  # the new flags reach the pods


async def test_a_node_of_another_size_is_planned_again(plans: list[str]) -> None:
    w = await created(plans)
    w.kube.put(NODES, node("h200-c", gpus=4))
    await w.reconcile()
    assert plans == ["nano", "nano"]
    w.kube.put(NEMOTRON_DEPLOYMENTS, w.nd())  # the same object again: nothing a plan reads
    await w.reconcile()
    assert plans == ["nano", "nano"]


async def test_a_kept_result_is_the_computed_one_and_equal_specs_share_one_plan(
    plans: list[str],
) -> None:
    """Kept compactly (the children as JSON, one plan per distinct spec), a kept result is what
    the computation returned; a changed spec, DRA or LWS served, or other nodes compute again."""
    memo = PlanMemo()
    nodes = inventory_from_nodes([node("h200-a"), node("h200-b")])
    config = OperatorConfig()

    async def plan(raw: dict[str, Any], *, nodes: Any = nodes, lws: bool = False) -> Any:
        parsed = desired.parse(raw, default_image=config.default_image)
        key = (raw["metadata"]["namespace"], raw["metadata"]["name"])
        return await memo.plan(
            key, raw, parsed, nodes, config=config, dra_served=False,
            leader_worker_set_served=lws,
        )  # fmt: skip

    first, second = _named("a"), _named("b")
    computed = [await plan(first), await plan(second)]
    again = [await plan(first), await plan(second)]
    assert plans == ["a", "b"]
    assert memo.hits == 2
    assert again == computed  # the same plan and children, parsed back from the kept JSON
    assert again[0].result is again[1].result  # one plan for the two equal specs
    await plan(first, lws=True)
    changed = _named("b")
    changed["spec"]["engine"] = {"maxModelLen": 65536}
    await plan(changed)
    assert plans == ["a", "b", "a", "b"]
    await plan(first, nodes=inventory_from_nodes([node("h200-a", gpus=4)]))
    assert plans == ["a", "b", "a", "b", "a"]
    assert len(memo) == 1  # other nodes: everything kept is forgotten, a's is kept anew
    memo.forget(("ai", "a"))
    assert len(memo) == 0


def _named(name: str) -> dict[str, Any]:
    raw = deployment()
    raw["metadata"] |= {"name": name, "uid": f"uid-{name}"}
    return raw


def _busy_cluster() -> list[dict[str, Any]]:
    """Nodes of every kind the examples ask for, each full, one not Ready, one cordoned."""
    nodes = []
    for product, gpus in (("NVIDIA-H200", 8), ("NVIDIA-B200", 8), ("NVIDIA-H100-80GB-HBM3", 8)):
        for i in range(3):
            item = node(f"{product.lower()}-{i}", gpus)
            item["metadata"]["labels"]["nvidia.com/gpu.product"] = product
            nodes.append(item)
    nodes[0]["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    nodes[1]["spec"] = {"unschedulable": True}
    return nodes


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_a_plan_never_reads_the_gpus_in_use(example: Path) -> None:
    """What the memo's key leaves out (GPUs in use, readiness, cordons) cannot change a plan:
    every example plans and renders the same on a full cluster as on the same nodes empty."""
    nodes = _busy_cluster()
    pods = [other_pod(str(item["metadata"]["name"]), 8) for item in nodes]
    for i, pod in enumerate(pods):
        pod["metadata"]["name"] = f"other-{i}"
    raw = yaml.safe_load(example.read_text())
    raw["metadata"] |= {"namespace": "ai", "uid": "u1", "generation": 1}
    deployment = desired.parse(raw, default_image="vllm/vllm-openai:v0.34.0")
    busy, empty = inventory_from_nodes(nodes, pods), inventory_from_nodes(nodes)
    assert busy != empty
    found = desired.plan_and_render(deployment, busy, allow_remote_code=False)
    assert found == desired.plan_and_render(deployment, empty, allow_remote_code=False)
