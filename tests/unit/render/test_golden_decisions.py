"""Every committed golden file, read as decisions rather than bytes (issue 26).

hack/update-golden.sh rewrites the files with whatever the code now prints; these assertions hold
each file to the rules its decisions follow (stage binding, MTP placement, probe windows, node
ranks, layout preference, reserve terms), so a regenerated golden cannot approve a wrong decision.
Each of those decisions also has a test of its own in tests/unit/sizing/test_decisions.py."""

from __future__ import annotations

import json
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from nemotron_operator.api import NemotronDeployment
from nemotron_operator.catalog import lookup_gpu
from nemotron_operator.sizing import Layout, LayoutMemory, evaluate, resolve_settings
from nemotron_operator.sizing.layouts import candidates, structural_problem
from nemotron_operator.sizing.planner import memory_problem, resolve_model
from tests.golden import cases

CASES = sorted(cases.CASES)
PLAN_ANNOTATION = "serving.nemotron.io/plan"
WARMUP_SECONDS, LOAD_BYTES_PER_SECOND = 600, 100_000_000  # docs/rendering.md's startup budget


@cache
def golden(case: str) -> list[dict[str, Any]]:
    text = cases.expected_path(case).read_text(encoding="utf-8")
    return [d for d in yaml.safe_load_all(text) if d is not None]


def input_deployment(case: str) -> NemotronDeployment:
    args = cases.CASES[case]
    path = cases.ROOT / args[args.index("-f") + 1]
    return NemotronDeployment.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))


def statefulsets(case: str) -> list[dict[str, Any]]:
    """The serving StatefulSets; a LeaderWorkerSet counts as the two it makes (its leader and
    worker templates, with the LeaderWorkerSet's metadata)."""
    found = [o for o in golden(case) if o["kind"] == "StatefulSet"]
    for lws in (o for o in golden(case) if o["kind"] == "LeaderWorkerSet"):
        group = lws["spec"]["leaderWorkerTemplate"]
        for key, replicas in (("leaderTemplate", 1), ("workerTemplate", group["size"] - 1)):
            spec = {"replicas": replicas, "template": group[key], "leaderWorkerSet": lws["spec"]}
            found.append({"kind": "LeaderWorkerSet", "metadata": lws["metadata"], "spec": spec})
    return found


def plan_of(case: str) -> dict[str, Any]:
    plans = {o["metadata"]["annotations"][PLAN_ANNOTATION] for o in statefulsets(case)}
    assert len(plans) == 1, "every StatefulSet of a deployment carries the same plan"
    plan: dict[str, Any] = json.loads(plans.pop())
    return plan


def vllm(sts: dict[str, Any]) -> dict[str, Any]:
    containers = sts["spec"]["template"]["spec"]["containers"]
    found: dict[str, Any] = next(c for c in containers if c["name"] == "vllm")
    return found


def flag(args: list[str], name: str) -> str | None:
    return args[args.index(name) + 1] if name in args else None


def is_worker(sts: dict[str, Any]) -> bool:
    return "--headless" in vllm(sts)["args"]


def memory_of(case: str) -> LayoutMemory:
    """The planned layout evaluated again from the golden's input, stage by stage."""
    plan = plan_of(case)
    spec = input_deployment(case).spec
    model = resolve_model(spec.model)
    catalog_gpu = lookup_gpu(plan["gpuProduct"])
    assert catalog_gpu is not None
    gpu = replace(
        catalog_gpu, memory_bytes=plan["gpuMemoryBytes"], gpus_per_node=plan["gpusPerNode"]
    )
    layout = Layout(plan["tensorParallel"], plan["pipelineParallel"], plan["expertParallel"])
    return evaluate(model, gpu, layout, resolve_settings(spec.engine, model))


@pytest.mark.parametrize("case", CASES)
def test_the_pods_together_hold_the_planned_layout(case: str) -> None:
    plan = plan_of(case)
    per_pod = plan["gpusPerReplica"] // plan["nodesPerReplica"]
    assert plan["gpusPerReplica"] == plan["tensorParallel"] * plan["pipelineParallel"]
    for sts in statefulsets(case):
        container = vllm(sts)
        args = container["args"]
        assert flag(args, "--tensor-parallel-size") == str(plan["tensorParallel"])
        assert flag(args, "--pipeline-parallel-size") == str(plan["pipelineParallel"])
        assert ("--enable-expert-parallel" in args) == plan["expertParallel"]
        pod = sts["spec"]["template"]["spec"]
        if "resourceClaims" in pod:  # capacity.gpu.allocation DRA: the claim holds the GPUs
            (claim,) = pod["resourceClaims"]
            (template,) = [
                o
                for o in golden(case)
                if o["kind"] == "ResourceClaimTemplate"
                and o["metadata"]["name"] == claim["resourceClaimTemplateName"]
            ]
            (request,) = template["spec"]["spec"]["devices"]["requests"]
            assert request["exactly"]["count"] == per_pod
            expression = request["exactly"]["selectors"][0]["cel"]["expression"]
            assert f"== '{plan['gpuProduct']}'" in expression
            assert container["resources"]["claims"] == [{"name": claim["name"]}]
            assert "nvidia.com/gpu" not in container["resources"].get("limits", {})
            continue
        assert container["resources"]["limits"]["nvidia.com/gpu"] == str(per_pod)
        assert pod["nodeSelector"]["nvidia.com/gpu.product"] == plan["gpuProduct"]


@pytest.mark.parametrize("case", CASES)
def test_node_rank_zero_is_the_leader_and_workers_take_their_pod_index(case: str) -> None:
    plan = plan_of(case)
    nodes = plan["nodesPerReplica"]
    all_sts = statefulsets(case)
    leaders = [s for s in all_sts if not is_worker(s)]
    workers = [s for s in all_sts if is_worker(s)]
    if nodes == 1:
        assert not workers
        (leader,) = leaders
        assert leader["spec"]["replicas"] == plan["replicas"]
        assert "--node-rank" not in vllm(leader)["args"]
        return
    if all(s["kind"] == "LeaderWorkerSet" for s in all_sts):
        # One group template each; LWS's pod webhook injects the rank and the leader address.
        (leader,), (worker,) = leaders, workers
        assert leader["spec"]["leaderWorkerSet"]["replicas"] == plan["replicas"]
        assert leader["spec"]["leaderWorkerSet"]["leaderWorkerTemplate"]["size"] == nodes
        for sts, rank in ((leader, "0"), (worker, "$(LWS_WORKER_INDEX)")):
            container = vllm(sts)
            assert flag(container["args"], "--node-rank") == rank
            assert flag(container["args"], "--nnodes") == str(nodes)
            assert flag(container["args"], "--master-addr") == "$(LWS_LEADER_ADDRESS)"
            assert "NODE_RANK" not in {e["name"] for e in container.get("env", [])}
        return
    assert len(leaders) == len(workers) == plan["replicas"]
    for leader in leaders:
        container = vllm(leader)
        assert flag(container["args"], "--node-rank") == "0"
        assert flag(container["args"], "--nnodes") == str(nodes)
        assert "NODE_RANK" not in {e["name"] for e in container.get("env", [])}
        assert leader["spec"]["replicas"] == 1
    for worker in workers:
        container = vllm(worker)
        assert flag(container["args"], "--node-rank") == "$(NODE_RANK)"
        assert flag(container["args"], "--nnodes") == str(nodes)
        rank = next(e for e in container["env"] if e["name"] == "NODE_RANK")
        path = rank["valueFrom"]["fieldRef"]["fieldPath"]
        assert path == "metadata.labels['apps.kubernetes.io/pod-index']"
        assert worker["spec"]["ordinals"] == {"start": 1}  # pod index 1.. = node rank 1..
        assert worker["spec"]["replicas"] == nodes - 1
        assert "--port" not in container["args"]


@pytest.mark.parametrize("case", CASES)
def test_the_startup_probe_covers_loading_every_weight_byte_plus_warm_up(case: str) -> None:
    plan = plan_of(case)
    need = WARMUP_SECONDS + plan["weightsTotalBytes"] / LOAD_BYTES_PER_SECOND
    for sts in statefulsets(case):
        container = vllm(sts)
        if is_worker(sts):
            assert not any(k.endswith("Probe") for k in container)  # no API server to probe
            continue
        startup = container["startupProbe"]
        window = startup["periodSeconds"] * startup["failureThreshold"]
        assert window >= need
        assert window - startup["periodSeconds"] < need  # rounded up by less than one period
        assert startup["httpGet"] == {"path": "/health", "port": "http"}
        ready, live = container["readinessProbe"], container["livenessProbe"]
        assert ready["periodSeconds"] * ready["failureThreshold"] == 30
        assert live["periodSeconds"] * live["failureThreshold"] == 150


@pytest.mark.parametrize("case", CASES)
def test_mtp_is_rendered_exactly_when_planned(case: str) -> None:
    plan = plan_of(case)
    memory = memory_of(case)
    drafts = plan["speculativeTokens"]
    assert drafts == memory.settings.speculative_tokens
    if drafts:
        assert memory.model.mtp_layers > 0
    for sts in statefulsets(case):
        config = flag(vllm(sts)["args"], "--speculative-config")
        if drafts:
            assert config is not None
            assert json.loads(config) == {"method": "mtp", "num_speculative_tokens": drafts}
        else:
            assert config is None


@pytest.mark.parametrize("case", CASES)
def test_the_reported_gpu_is_the_binding_stage(case: str) -> None:
    plan = plan_of(case)
    memory = memory_of(case)
    stage_blocks = [s.num_blocks for s in memory.stages if s.num_blocks is not None]
    assert plan["kvCacheBlocks"] == min(stage_blocks)
    binding = next(s for s in memory.stages if s.num_blocks == plan["kvCacheBlocks"])
    per_gpu = plan["perGPU"]
    assert per_gpu["weightsBytes"] == max(
        s.weights_bytes for s in memory.stages if s.num_blocks == plan["kvCacheBlocks"]
    )
    assert (
        per_gpu["usableBytes"] - per_gpu["weightsBytes"] - per_gpu["reserveBytes"]
        == (per_gpu["kvPoolBytes"])
    )
    assert plan["maxConcurrency"] == pytest.approx(
        plan["kvCacheBlocks"] / plan["blocksPerSequence"], abs=0.005
    )
    assert binding.reserve_bytes == per_gpu["reserveBytes"]


@pytest.mark.parametrize("case", CASES)
def test_the_reserve_terms_are_those_of_the_binding_stage(case: str) -> None:
    plan = plan_of(case)
    memory = memory_of(case)
    terms = {c["name"]: c["bytes"] for c in plan["perGPU"]["reserveComponents"]}
    assert sum(terms.values()) == plan["perGPU"]["reserveBytes"]
    binding = memory.binding
    last = binding.stage == len(memory.stages) - 1
    assert {"activations", "profileBase", "cudaGraphs", "nonTorch"} <= terms.keys()
    assert ("nccl" in terms) == (plan["gpusPerReplica"] > 1)
    assert ("samplerLogits" in terms) == last
    if last:
        rows = plan["maxNumSeqs"] * (1 + plan["speculativeTokens"])
        assert terms["samplerLogits"] == rows * memory.model.vocab_size * 8
    assert ("visionEncoder" in terms) == (binding.stage == 0 and memory.model.vision)


@pytest.mark.parametrize("case", CASES)
def test_no_layout_with_fewer_gpus_would_have_served(case: str) -> None:
    plan = plan_of(case)
    memory = memory_of(case)
    spec = input_deployment(case).spec
    chosen = plan["gpusPerReplica"]
    smaller = [
        c.layout for c in candidates(memory.model, memory.gpu, spec.capacity)
        if c.layout.gpus < chosen
    ]  # fmt: skip
    for layout in smaller:
        problem = structural_problem(memory.model, memory.gpu, layout)
        if problem is None:
            smaller_memory = evaluate(memory.model, memory.gpu, layout, memory.settings)
            problem = memory_problem(smaller_memory, spec.capacity.min_concurrency)
        assert problem is not None, f"{layout} would serve {case} on fewer GPUs"
    assert memory_problem(memory, spec.capacity.min_concurrency) is None


def test_every_golden_case_has_its_file() -> None:
    for case in CASES:
        assert Path(cases.expected_path(case)).exists()
    assert any(plan_of(c)["nodesPerReplica"] > 1 for c in CASES)  # node ranks are exercised
    assert any(plan_of(c)["speculativeTokens"] > 0 for c in CASES)
    assert any(plan_of(c)["speculativeTokens"] == 0 for c in CASES)
    assert any(plan_of(c)["pipelineParallel"] > 1 for c in CASES)  # stage binding is exercised
