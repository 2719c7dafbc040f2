"""The deployments the benchmark applies, what the operator should make of them, and the floor:
the same writes made by a plain client (plan, render, server-side apply, status.plan)."""

from __future__ import annotations

import copy
import functools
import time
from pathlib import Path
from typing import Any

import yaml

from nemotron_operator.api.errors import parse_deployment
from nemotron_operator.render import Owner, RenderOptions, render_all
from nemotron_operator.sizing import GpuInventory, inventory_from_nodes, plan_deployment
from opbench.api import MERGE, Client
from opbench.collector import Collector, Key

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "nano-bf16.yaml"  # one GPU of an H200 per replica
FLOOR_MANAGER = "nemotron-bench-floor"


@functools.cache
def _example() -> dict[str, Any]:
    body: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text())
    return body


def manifest(namespace: str, name: str) -> dict[str, Any]:
    # Parsed once: the pure-Python YAML parser per create was ~40 % of the benchmark process's
    # CPU while 1,000 were created, CPU the operator and the cluster share on two cores.
    body = copy.deepcopy(_example())
    body["metadata"] = {"name": name, "namespace": namespace, "labels": {"bench": "yes"}}
    return body


def layout(prefix: str, count: int, namespaces: int) -> list[Key]:
    """``count`` deployments spread round-robin over ``namespaces`` namespaces."""
    return [(f"{prefix}-{i % namespaces:02d}", f"nd-{i:04d}") for i in range(count)]


async def inventory(client: Client) -> GpuInventory:
    nodes = await client.send("GET", "/api/v1/nodes")
    return inventory_from_nodes(nodes["items"])


def expected_children(body: dict[str, Any], gpus: GpuInventory) -> set[tuple[str, str]]:
    """(kind, name) of every namespaced object the operator should apply for ``body``."""
    deployment = parse_deployment(body)
    result = plan_deployment(deployment.spec, inventory=gpus)
    return {
        (o["kind"], o["metadata"]["name"])
        for o in render_all(deployment, result)
        if "namespace" in o["metadata"]
    }


def gpus_per_replica(gpus: GpuInventory) -> int:
    result = plan_deployment(parse_deployment(manifest("x", "x")).spec, inventory=gpus)
    return result.plan.gpus_per_replica


async def create(client: Client, collector: Collector, key: Key) -> dict[str, Any]:
    created = await client.create_deployment(manifest(*key))
    collector.created(key, time.perf_counter())
    return created


async def floor_reconcile(
    client: Client, collector: Collector, key: Key, gpus: GpuInventory
) -> None:
    """Create the deployment, then exactly what the operator must write for it: plan, render
    with an owner reference, one server-side apply per child, then ``status.plan``."""
    created = await create(client, collector, key)
    deployment = parse_deployment(created)
    result = plan_deployment(deployment.spec, inventory=gpus)
    owner = Owner(name=key[1], uid=created["metadata"]["uid"])
    for obj in render_all(deployment, result, RenderOptions(owner=owner)):
        await client.apply(obj, FLOOR_MANAGER)
    plan = result.plan.model_dump(mode="json", by_alias=True, exclude_none=True)
    path = object_path_of_deployment(key) + "/status"
    await client.send("PATCH", path, {"status": {"plan": plan}}, MERGE, via_proxy=True)


def object_path_of_deployment(key: Key) -> str:
    return f"/apis/serving.nemotron.io/v1alpha1/namespaces/{key[0]}/nemotrondeployments/{key[1]}"
