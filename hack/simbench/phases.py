"""What ``hack/bench-sim.py`` creates and times: custom resources, StatefulSets of one stand-in
vLLM pod, the ServiceAccount of ``--as-service-account``, list and watch latencies."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import time
from typing import Any

from opbench.api import GROUP_PATH, MERGE, Client
from opbench.report import latency_summary

NAMESPACE = "bench"
MODEL = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
RBAC = "/apis/rbac.authorization.k8s.io/v1"


def custom_resource(index: int) -> dict[str, Any]:
    return {
        "apiVersion": "serving.nemotron.io/v1alpha1",
        "kind": "NemotronDeployment",
        "metadata": {"name": f"nd-{index:04d}", "namespace": NAMESPACE,
                     "labels": {"bench": "yes", "index": str(index)}},
        "spec": {"model": {"id": MODEL}, "engine": {"maxModelLen": 131072}},
    }  # fmt: skip


def statefulset(index: int) -> dict[str, Any]:
    name = f"sts-{index:04d}"
    container = {
        "name": "vllm",
        "image": "vllm/vllm-openai:v0.31.0",
        "command": ["vllm", "serve", MODEL, "--served-model-name", name],
        "ports": [{"name": "http", "containerPort": 8000}],
        "resources": {"limits": {"nvidia.com/gpu": "1"}},
        "readinessProbe": {"httpGet": {"path": "/health", "port": "http"}},
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"bench": "yes"}},
        "spec": {
            "replicas": 1,
            "serviceName": name,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name, "bench": "yes"}},
                "spec": {
                    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
                    "initContainers": [{"name": "download", "image": "hf", "command": ["hf"]}],
                    "containers": [container],
                },
            },
            "volumeClaimTemplates": [{
                "metadata": {"name": "weights"},
                "spec": {"accessModes": ["ReadWriteOnce"],
                         "resources": {"requests": {"storage": "65Gi"}}},
            }],
        },
    }  # fmt: skip


BENCH_ROLE = {
    "metadata": {"name": "nemotron-bench"},
    "rules": [
        {
            "apiGroups": ["serving.nemotron.io"],
            "resources": ["nemotrondeployments"],
            "verbs": ["create", "get", "list", "watch", "patch"],
        },
        {
            "apiGroups": ["apps"],
            "resources": ["statefulsets"],
            "verbs": ["create", "list", "watch"],
        },
        {"apiGroups": [""], "resources": ["pods", "nodes"], "verbs": ["list"]},
        {
            "apiGroups": [""],
            "resources": ["configmaps"],
            "verbs": ["create", "list", "watch", "patch"],
        },
    ],
}


async def service_account_token(client: Client, seconds: float = 30.0) -> str:
    """A ServiceAccount bound to BENCH_ROLE and a token for it (TokenRequest, what ``kubectl
    create token`` sends); returns once kube-apiserver's RBAC authorizer grants it a list."""
    await client.send("POST", f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts",
                      {"metadata": {"name": "bench"}})  # fmt: skip
    await client.send("POST", f"{RBAC}/clusterroles", BENCH_ROLE)
    binding = {
        "metadata": {"name": "nemotron-bench"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "nemotron-bench"},
        "subjects": [{"kind": "ServiceAccount", "name": "bench", "namespace": NAMESPACE}],
    }  # fmt: skip
    await client.send("POST", f"{RBAC}/clusterrolebindings", binding)
    answer = await client.send(
        "POST",
        f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/bench/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
    )
    token = str(answer["status"]["token"])
    # The authorizer reads RBAC objects from its informers: the binding takes effect shortly.
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": f"system:serviceaccount:{NAMESPACE}:bench",
            "groups": ["system:serviceaccounts", f"system:serviceaccounts:{NAMESPACE}"],
            "resourceAttributes": {"verb": "list", "resource": "nodes"},
        },
    }
    deadline = time.monotonic() + seconds
    path = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
    while not (await client.send("POST", path, review))["status"].get("allowed"):
        if time.monotonic() > deadline:
            raise RuntimeError(f"the ServiceAccount's binding not in effect after {seconds} s")
        await asyncio.sleep(0.1)
    return token


async def wait_all_ready(client: Client, count: int, seconds: float) -> tuple[float, int]:
    """Watch StatefulSets until ``count`` report readyReplicas 1; (seconds, events seen)."""
    listing = await client.send("GET", f"/apis/apps/v1/namespaces/{NAMESPACE}/statefulsets")
    ready = {
        s["metadata"]["name"]
        for s in listing["items"]
        if (s.get("status") or {}).get("readyReplicas") == 1
    }
    rv = listing["metadata"]["resourceVersion"]
    events = 0
    start = time.perf_counter()
    path = f"/apis/apps/v1/namespaces/{NAMESPACE}/statefulsets"
    params = {"resourceVersion": rv}
    async with client.watch(path, params, timeout_seconds=int(seconds)) as stream:
        while len(ready) < count:
            event = await anext(stream, None)
            if event is None:
                raise RuntimeError(f"watch ended with {len(ready)}/{count} ready")
            events += 1
            obj = event["object"]
            if (obj.get("status") or {}).get("readyReplicas") == 1:
                ready.add(obj["metadata"]["name"])
    return time.perf_counter() - start, events


async def list_latencies(client: Client, repeats: int) -> dict[str, dict[str, float]]:
    paths = {
        "list all CRs": f"{GROUP_PATH}/namespaces/{NAMESPACE}/nemotrondeployments",
        "list all pods": "/api/v1/pods",
        "list all statefulsets": "/apis/apps/v1/statefulsets",
        "list pods, label selector (1 match)": f"/api/v1/namespaces/{NAMESPACE}/pods"
        "?labelSelector=app%3Dsts-0007",
        "list nodes": "/api/v1/nodes",
        "get one CR": f"{GROUP_PATH}/namespaces/{NAMESPACE}/nemotrondeployments/nd-0007",
    }
    results = {}
    for label, path in paths.items():
        samples = []
        for _ in range(repeats):
            start = time.perf_counter()
            await client.send("GET", path)
            samples.append(time.perf_counter() - start)
        results[label] = latency_summary(samples)
    return results


async def watch_latency(
    client: Client, collection: str, names: list[str], samples: int, watchers: int
) -> dict[str, Any]:
    """PATCH an object, time until its MODIFIED event reaches the first of ``watchers``."""
    listing = await client.send("GET", collection)
    rv = listing["metadata"]["resourceVersion"]
    latencies: list[float] = []
    async with contextlib.AsyncExitStack() as opened:
        streams = [
            await opened.enter_async_context(client.watch(collection, {"resourceVersion": rv}))
            for _ in range(watchers)
        ]
        for i in range(samples):
            marker = f"m{i}"
            start = time.perf_counter()
            await client.send(
                "PATCH",
                f"{collection}/{names[(i * 7) % len(names)]}",
                {"metadata": {"labels": {"marker": marker}}},
                content_type=MERGE,
            )
            while True:
                event = await anext(streams[0])
                labels = event["object"]["metadata"].get("labels") or {}
                if labels.get("marker") == marker:
                    latencies.append(time.perf_counter() - start)
                    break
            for other in streams[1:]:  # keep the other watchers drained
                await anext(other)
    return {"watchers": watchers, **latency_summary(latencies)}


async def watch_latencies(client: Client, args: argparse.Namespace) -> dict[str, Any]:
    configmaps = f"/api/v1/namespaces/{NAMESPACE}/configmaps"
    names = [f"cm-{i:03d}" for i in range(20)]
    for name in names:
        await client.send("POST", configmaps, {"metadata": {"name": name}, "data": {"k": "v"}})
    crs = f"{GROUP_PATH}/namespaces/{NAMESPACE}/nemotrondeployments"
    cr_names = [f"nd-{i:04d}" for i in range(args.count)]
    return {
        "custom resources (admission validates each patch)": await watch_latency(
            client, crs, cr_names, args.watch_samples, args.watchers
        ),
        "configmaps": await watch_latency(
            client, configmaps, names, args.watch_samples, args.watchers
        ),
    }
