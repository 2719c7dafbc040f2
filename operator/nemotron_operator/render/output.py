"""Rendered objects as text: YAML with the plan as a comment header, or a JSON ``v1 List``.

Shared by ``nemotron-operator render`` and the golden manifests, so the goldens are exactly what
the command prints.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from nemotron_operator.api import NemotronDeployment, Plan
from nemotron_operator.render import object_store


class _Dumper(yaml.SafeDumper):
    """Block style for multi-line strings (the download script), so the output reads well."""


def _str_presenter(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str_presenter)


def dump_yaml(objects: list[dict[str, Any]]) -> str:
    return str(
        yaml.dump_all(objects, Dumper=_Dumper, sort_keys=False, width=100, explicit_start=True)
    )


def dump_json(objects: list[dict[str, Any]]) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}, indent=2) + "\n"


def _gib(value: float) -> str:
    if abs(value) < 1024**3:
        return f"{value / 1024**2:.1f} MiB"
    return f"{value / 1024**3:.1f} GiB"


def plan_header(deployment: NemotronDeployment, plan: Plan) -> str:
    """The plan's arithmetic as YAML comment lines."""
    memory = plan.per_gpu
    reserve = ", ".join(f"{c.name} {_gib(c.bytes)}" for c in memory.reserve_components)
    lines = [
        f"NemotronDeployment {deployment.metadata.namespace}/{deployment.metadata.name}: "
        f"{plan.model_id} ({plan.precision})",
        f"GPU: {plan.gpu_product}, {_gib(plan.gpu_memory_bytes)} each, "
        f"{plan.gpus_per_node} per node",
        f"Layout: TP {plan.tensor_parallel} x PP {plan.pipeline_parallel}, expert parallel "
        f"{'on' if plan.expert_parallel else 'off'}, MTP draft tokens {plan.speculative_tokens}",
        f"Per replica: {plan.gpus_per_replica} GPUs on {plan.nodes_per_replica} node(s); "
        f"{plan.replicas} replica(s): {plan.total_gpus} GPUs on {plan.nodes} node(s)",
        f"Per GPU: usable {_gib(memory.usable_bytes)} = weights {_gib(memory.weights_bytes)} "
        f"+ reserve {_gib(memory.reserve_bytes)}"
        + (f" ({reserve})" if reserve else "")
        + f" + KV/Mamba pool {_gib(memory.kv_pool_bytes)}",
        f"Per sequence at {plan.max_model_len} tokens: {_gib(plan.bytes_per_sequence)} "
        f"(KV {plan.kv_bytes_per_token} B/token, Mamba state "
        f"{_gib(plan.mamba_bytes_per_sequence)}); block {plan.block_size_tokens} tokens",
        f"Max concurrency at maxModelLen: {plan.max_concurrency:.2f}; KV cache "
        f"{plan.kv_cache_tokens} tokens per replica",
        *_streaming(deployment, plan),
        *(f"Note: {note}" for note in plan.notes),
    ]
    if plan.rejected:
        lines.append(f"Rejected layouts ({len(plan.rejected) + plan.rejected_omitted}):")
        lines += [
            f"  {r.gpu_product} TP{r.tensor_parallel} x PP{r.pipeline_parallel}: {r.reason}"
            for r in plan.rejected
        ]
        if plan.rejected_omitted:
            lines.append(f"  ... and {plan.rejected_omitted} more")
    return "".join(f"# {line}\n" for line in lines)


def _streaming(deployment: NemotronDeployment, plan: Plan) -> list[str]:
    """For weights streamed from a bucket: the streamer's CPU buffers in the memory request."""
    source = object_store.source_of(deployment)
    if source is None:
        return []
    gpus = plan.gpus_per_replica // plan.nodes_per_replica
    buffer = object_store.buffer_bytes(deployment)
    added = object_store.memory_request_bytes(
        deployment, gpus=gpus, weight_bytes=plan.weights_total_bytes
    )
    return [
        f"Streamed from {source.uri}: CPU buffer {_gib(buffer)} (memory_limit) x {gpus} "
        f"worker(s) per pod, no larger than the checkpoint: memory request + {_gib(added)}"
    ]


def render_text(
    deployment: NemotronDeployment, plan: Plan, objects: list[dict[str, Any]], output: str
) -> str:
    if output == "json":
        return dump_json(objects)
    return plan_header(deployment, plan) + dump_yaml(objects)
