from __future__ import annotations

import random
from collections import Counter
from fractions import Fraction
from typing import Any

from nemotron_sim.controllers.nodes import GpuFacts, NodeGroup, build_node
from nemotron_sim.controllers.scheduler import (
    add_usage,
    filter_node,
    node_usage,
    pod_requests,
    schedule,
    unschedulable_message,
)

H200 = GpuFacts(memory_mib=143771, compute_major=9, compute_minor=0, family="hopper")
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def gpu_node(index: int = 0, product: str = "NVIDIA-H200", gpus: int = 8) -> dict[str, Any]:
    return build_node(NodeGroup(product, gpus, 1), index, H200, f"127.9.0.{index + 1}")


def gpu_pod(
    gpus: int, *, node_name: str | None = None, tolerate: bool = True, **spec: Any
) -> dict[str, Any]:
    container = {"name": "vllm", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}
    pod_spec: dict[str, Any] = {"containers": [container], **spec}
    if tolerate:
        pod_spec["tolerations"] = [GPU_TOLERATION]
    if node_name:
        pod_spec["nodeName"] = node_name
    return {"metadata": {"name": "p", "namespace": "ai"}, "spec": pod_spec}


def test_requests_take_limits_when_missing_and_the_largest_init_container() -> None:
    pod = {
        "spec": {
            "containers": [
                {"resources": {"requests": {"cpu": "500m"}, "limits": {"nvidia.com/gpu": 2}}},
                {"resources": {"requests": {"cpu": "1", "memory": "1Gi"}}},
            ],
            "initContainers": [{"resources": {"requests": {"cpu": "4"}}}],
        }
    }
    assert pod_requests(pod) == {
        "cpu": Fraction(4),
        "memory": Fraction(2**30),
        "nvidia.com/gpu": Fraction(2),
    }


def test_a_pod_asking_for_more_gpus_than_any_node_has_gets_the_real_message() -> None:
    nodes = [gpu_node(i) for i in range(3)]
    decision = schedule(gpu_pod(16), nodes, {})
    assert decision.node is None
    assert decision.message == "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."


def test_gpus_used_by_bound_pods_are_not_offered_again() -> None:
    nodes = [gpu_node(0)]
    usage = node_usage([gpu_pod(6, node_name="sim-h200-0")])
    assert schedule(gpu_pod(2), nodes, usage).node == "sim-h200-0"
    assert schedule(gpu_pod(3), nodes, usage).node is None
    add_usage(usage, "sim-h200-0", {"nvidia.com/gpu": Fraction(2)})
    assert schedule(gpu_pod(1), nodes, usage).node is None


def test_finished_pods_release_their_gpus() -> None:
    done = gpu_pod(8, node_name="sim-h200-0")
    done["status"] = {"phase": "Succeeded"}
    assert node_usage([done]) == {}


def test_the_gpu_taint_must_be_tolerated() -> None:
    decision = schedule(gpu_pod(1, tolerate=False), [gpu_node(0)], {})
    assert decision.message == (
        "0/1 nodes are available: 1 node(s) had untolerated taint {nvidia.com/gpu: present}."
    )


def test_node_selector_and_affinity_pick_the_product() -> None:
    h200, b200 = gpu_node(0), gpu_node(0, product="NVIDIA-B200")
    by_selector = gpu_pod(1, nodeSelector={"nvidia.com/gpu.product": "NVIDIA-B200"})
    assert schedule(by_selector, [h200, b200], {}).node == "sim-b200-0"
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {
                                "key": "nvidia.com/gpu.product",
                                "operator": "NotIn",
                                "values": ["NVIDIA-H200"],
                            },
                            {"key": "nvidia.com/gpu.memory", "operator": "Exists"},
                        ]
                    }
                ]
            }
        }
    }
    assert schedule(gpu_pod(1, affinity=affinity), [h200, b200], {}).node == "sim-b200-0"
    nowhere = gpu_pod(1, nodeSelector={"nvidia.com/gpu.product": "NVIDIA-GB200"})
    assert schedule(nowhere, [h200, b200], {}).message == (
        "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."
    )


def test_affinity_terms_are_ored_and_gt_compares_numbers() -> None:
    node = gpu_node(0)
    terms = [
        {
            "matchExpressions": [
                {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-B200"]}
            ]
        },
        {
            "matchExpressions": [
                {"key": "nvidia.com/gpu.memory", "operator": "Gt", "values": ["100000"]}
            ]
        },
    ]
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
        }
    }
    assert filter_node(gpu_pod(1, affinity=affinity), node, {}) == []
    terms[1]["matchExpressions"][0]["operator"] = "Lt"
    assert filter_node(gpu_pod(1, affinity=affinity), node, {}) != []


def test_mixed_reasons_are_counted_per_node_and_sorted() -> None:
    cordoned = gpu_node(2)
    cordoned["spec"]["unschedulable"] = True
    nodes = [gpu_node(0), gpu_node(1, product="NVIDIA-B200"), cordoned]
    pod = gpu_pod(9, nodeSelector={"nvidia.com/gpu.product": "NVIDIA-H200"})
    assert schedule(pod, nodes, {}).message == (
        "0/3 nodes are available: 1 Insufficient nvidia.com/gpu, "
        "1 node(s) didn't match Pod's node affinity/selector, 1 node(s) were unschedulable."
    )


def test_pods_spread_to_the_least_used_node() -> None:
    nodes = [gpu_node(0), gpu_node(1)]
    usage = node_usage([gpu_pod(4, node_name="sim-h200-0")])
    assert schedule(gpu_pod(4), nodes, usage).node == "sim-h200-1"


def test_no_nodes_at_all() -> None:
    assert unschedulable_message(0, Counter()) == "0/0 nodes are available."


def _schedule_by_filtering_every_node(
    pod: dict[str, Any], nodes: list[dict[str, Any]], usage: dict[str, dict[str, Fraction]]
) -> tuple[str | None, str]:
    """The decision as kube-scheduler's filters give it, every node through filter_node."""
    reasons: Counter[str] = Counter()
    fitting = []
    for node in nodes:
        name = node["metadata"]["name"]
        used = usage.get(name, {})
        failures = filter_node(pod, node, used)
        reasons.update(failures)
        if not failures:
            gpus, cpu = used.get("nvidia.com/gpu", Fraction(0)), used.get("cpu", Fraction(0))
            fitting.append((gpus, cpu, name))
    if not fitting:
        return None, unschedulable_message(len(nodes), reasons)
    chosen = min(fitting)[2]
    return chosen, f"Successfully assigned to {chosen}"


def test_schedule_decides_as_filtering_every_node_does() -> None:
    rng = random.Random(7)  # noqa: S311 - reproducible test data, not secrets
    nodes = [gpu_node(i) for i in range(6)]
    nodes[4]["spec"]["unschedulable"] = True
    for trial in range(300):
        usage: dict[str, dict[str, Fraction]] = {}
        for node in nodes:
            gpus = rng.choice([0, 2, 7, 8, 8])
            cpu = Fraction(rng.choice([0, 500, 100_000, 10**6]), 1000)
            add_usage(
                usage, node["metadata"]["name"], {"nvidia.com/gpu": Fraction(gpus), "cpu": cpu}
            )
        pod = gpu_pod(rng.choice([1, 2, 8, 9]), tolerate=rng.random() > 0.1)
        container = pod["spec"]["containers"][0]
        container["resources"]["requests"] = {"cpu": rng.choice(["1", "100", "0", "250m"])}
        decision = schedule(pod, nodes, usage)
        assert (decision.node, decision.message) == _schedule_by_filtering_every_node(
            pod, nodes, usage
        ), trial
