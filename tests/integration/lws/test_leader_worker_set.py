"""Multi-node replicas on the real LeaderWorkerSet controller (sigs.k8s.io/lws, built by
hack/build-lws.sh and run by the simulated cluster's ``lws`` add-on with its webhooks), from the
operator's rendered objects, without the operator: the group starts and its pods get LWS's
labels and variables. (A rank that dies, with the operator: test_failed_rank.py.)"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from nemotron_operator.catalog.vllm_flags import parse_serve_command
from nemotron_sim.kubeapi.kinds import PODS
from nemotron_sim.kubelet.podenv import expanded_argv
from tests.integration.lws.cases import CLUSTER, LWS, NAME, STATEFULSETS
from tests.kube import KubeHandle


def deployment(namespace: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "serving.nemotron.io/v1alpha1",
        "kind": "NemotronDeployment",
        "metadata": {"name": NAME, "namespace": namespace},
        "spec": {
            "model": {"id": "nvidia/NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-BF16"},
            "engine": {"maxModelLen": 32768},
            "capacity": {"parallelism": {"tensor": 2, "pipeline": 2}},
            # No operator runs here: nothing would set the readiness gate.
            "verification": {"enabled": False},
            "multiNode": {"backend": "LeaderWorkerSet"},
            **spec,
        },
    }


def render(cluster: KubeHandle, tmp_path: Path, manifest: dict[str, Any]) -> list[dict[str, Any]]:
    nodes, source = tmp_path / "nodes.yaml", tmp_path / "deployment.yaml"
    nodes.write_text(cluster.kubectl("get", "nodes", "-o", "yaml").stdout)
    source.write_text(yaml.safe_dump(manifest))
    printed = subprocess.run(
        [sys.executable, "-m", "nemotron_operator.cli", "render", "-f", str(source),
         "--gpu-inventory", str(nodes)],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    return [d for d in yaml.safe_load_all(printed) if d]


def apply(cluster: KubeHandle, objects: list[dict[str, Any]]) -> None:
    cluster.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump_all(objects))


def pods(cluster: KubeHandle, namespace: str) -> dict[str, dict[str, Any]]:
    return {
        p["metadata"]["name"]: p
        for p in cluster.list(PODS, namespace)
        if not p["metadata"].get("deletionTimestamp")
    }


def ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def groups_ready(cluster: KubeHandle, namespace: str, count: int) -> bool:
    lws = cluster.get(LWS, namespace, f"{NAME}-lws") or {}
    found = pods(cluster, namespace)
    return (
        int((lws.get("status") or {}).get("readyReplicas") or 0) == count
        and len(found) == 2 * count
        and all(ready(p) for p in found.values())
    )


@pytest.fixture
def namespace(sim_cluster: KubeHandle) -> Iterator[str]:
    with sim_cluster.namespace("lws") as name:
        yield name


@pytest.mark.parametrize("sim_cluster", [CLUSTER], indirect=True)
def test_a_two_node_replica_runs_as_one_group_with_the_variables_lws_injects(
    sim_cluster: KubeHandle, namespace: str, tmp_path: Path
) -> None:
    objects = render(sim_cluster, tmp_path, deployment(namespace))
    assert [o["kind"] for o in objects].count("LeaderWorkerSet") == 1
    apply(sim_cluster, objects)
    sim_cluster.wait_until(lambda: groups_ready(sim_cluster, namespace, 1), what="group Ready")
    found = pods(sim_cluster, namespace)
    # LWS names a group's pods <lws>-<group> (leader) and <lws>-<group>-<worker index>.
    assert sorted(found) == ["super-lws-0", "super-lws-0-1"]
    leader, worker = found["super-lws-0"], found["super-lws-0-1"]
    assert leader["spec"]["nodeName"] != worker["spec"]["nodeName"]
    assert leader["metadata"]["labels"]["serving.nemotron.io/role"] == "leader"
    assert worker["metadata"]["labels"]["leaderworkerset.sigs.k8s.io/worker-index"] == "1"
    # The pod webhook injected the recipe's variables; the kubelet expands them in the args.
    env = {e["name"]: e.get("value") for e in worker["spec"]["containers"][0]["env"]}
    assert env["LWS_LEADER_ADDRESS"] == f"super-lws-0.super-lws.{namespace}"
    assert env["LWS_GROUP_SIZE"] == "2"
    assert env["LWS_WORKER_INDEX"] == "1"
    for pod, rank in ((leader, "0"), (worker, "1")):
        argv = expanded_argv(pod, pod["spec"]["containers"][0])
        _, uses = parse_serve_command(argv)  # the pinned vLLM's parser accepts every flag
        values = {u.flag.name: u.value for u in uses}
        assert values["--node-rank"] == rank
        assert values["--master-addr"] == f"super-lws-0.super-lws.{namespace}"
        assert ("--headless" in values) is (rank != "0")
    # LWS made the leader StatefulSet and one worker StatefulSet per group, and its own
    # headless Service (the pods' subdomain) beside the operator's API Service.
    statefulsets = {s["metadata"]["name"] for s in sim_cluster.list(STATEFULSETS, namespace)}
    assert statefulsets == {"super-lws", "super-lws-0"}
    services = sim_cluster.kubectl("get", "svc", "-n", namespace, "-o", "name").stdout.split()
    assert "service/super-lws" in services
    assert "service/super" in services
