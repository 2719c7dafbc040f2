"""A ``NemotronDeploymentStatus`` with every field set, as the operator writes it: the admission
suite probes every status bound through it, and the telemetry and plan-check tests read its plan.
"""

from __future__ import annotations

from typing import Any

from nemotron_operator.api import (
    Condition,
    NemotronDeploymentStatus,
    NodePoolStatus,
    PerGpuMemory,
    Plan,
    PlanCheck,
    RejectedLayout,
    ReserveComponent,
    Throughput,
)

GIB = 1024**3


def full_status() -> dict[str, Any]:
    plan = Plan(
        model_id="nvidia/NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-BF16",
        precision="BF16",
        gpu_product="NVIDIA-H200",
        gpu_memory_bytes=143771 * 1024**2,
        gpus_per_node=8,
        tensor_parallel=4,
        pipeline_parallel=1,
        expert_parallel=True,
        gpus_per_replica=4,
        nodes_per_replica=1,
        replicas=2,
        total_gpus=8,
        nodes=1,
        weights_total_bytes=249 * 10**9,
        per_gpu=PerGpuMemory(
            weights_bytes=58 * GIB,
            reserve_bytes=6 * GIB,
            kv_pool_bytes=62 * GIB,
            usable_bytes=126 * GIB,
            reserve_components=[ReserveComponent(name="activations", bytes=2 * GIB)],
        ),
        kv_bytes_per_token=4608,
        mamba_bytes_per_sequence=130_000_000,
        bytes_per_sequence=1_300_000_000,
        block_size_tokens=1056,
        max_concurrency=51.2,
        kv_cache_tokens=13_000_000,
        max_model_len=262144,
        speculative_tokens=3,
        notes=["example note"],
        rejected=[
            RejectedLayout(
                gpu_product="NVIDIA-H200",
                tensor_parallel=1,
                pipeline_parallel=1,
                reason="weights need 231.8 GiB per GPU",
            )
        ],
    )
    status = NemotronDeploymentStatus(
        observed_generation=1,
        phase="Ready",
        conditions=[
            Condition(
                type="Ready",
                status="True",
                reason="AllReplicasReady",
                message="2/2 replicas ready",
                last_transition_time="2026-12-02T10:00:00Z",
                observed_generation=1,
            )
        ],
        plan=plan,
        node_pool=NodePoolStatus(
            gpu_product="NVIDIA-H200", gpus_per_node=8, nodes=1, provisioner="None"
        ),
        replicas=2,
        ready_replicas=2,
        ready="2/2",
        selector="app.kubernetes.io/instance=super-vl-bf16",
        endpoint="http://super-vl-bf16.ai.svc:8000/v1",
        throughput=Throughput(
            generation_tokens_per_second=1200.5,
            mtp_acceptance_rate=0.7,
            ttft_seconds_p50=0.2,
            ttft_seconds_p95=0.9,
            mtp_mean_accepted_length=2.4,
            sampled_at="2026-12-02T10:00:00Z",
            pods_sampled=1,
            unresponsive_pods=["super-vl-bf16-1"],
        ),
        plan_check=PlanCheck(
            kv_cache_blocks=6000,
            kv_cache_tokens=10_000_000,
            max_concurrency=40.0,
            block_size_tokens=1056,
            blocks_deviation=-0.11,
            tokens_deviation=-0.11,
            concurrency_deviation=-0.11,
            derived=["kvCacheTokens"],
            pod="super-vl-bf16-0",
            pods_checked=2,
            checked_at="2026-12-02T10:00:00Z",
        ),
    )
    wire = status.to_wire()
    # The start-up record and the adapters each pod serves (docs/startup.md, LoRA).
    wire["startup"] = {
        "phase": "Loading",
        "pod": "super-vl-bf16-1",
        "since": "2026-12-02T10:00:00Z",
        "predicted": {
            "downloadSeconds": 632,
            "loadSeconds": 632,
            "compileSeconds": 180,
            "totalSeconds": 1444,
        },
        "lastObserved": {
            "pod": "super-vl-bf16-0",
            "readyAt": "2026-12-02T09:40:00Z",
            "totalSeconds": 1300.5,
            "schedulingSeconds": 2.0,
            "downloadingSeconds": 600.0,
            "loadingSeconds": 690.5,
            "verifyingSeconds": 8.0,
        },
    }
    wire["adapters"] = [
        {"pod": "super-vl-bf16-0", "adapters": ["law"], "message": "sql: 400 No adapter found"}
    ]
    return wire
