"""The simulated cluster over HTTP, as kubectl and the operator see it. (The entry points,
``python -m sim_cluster`` and the demo, run on the real control plane:
tests/integration/controlplane/test_cli.py.)"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from nemotron_sim.kubeapi.kinds import PODS
from tests.integration.cluster.manifests import vllm_statefulset
from tests.kube import KubeHandle

ROOT = Path(__file__).resolve().parents[3]


def test_kubectl_sees_gpu_nodes_with_feature_discovery_labels(
    sim_cluster: KubeHandle,
) -> None:
    nodes = json.loads(sim_cluster.kubectl("get", "nodes", "-o", "json").stdout)["items"]
    by_name = {n["metadata"]["name"]: n for n in nodes}
    assert sorted(by_name) == ["sim-b200-0", "sim-h200-0", "sim-h200-1", "sim-system-0"]
    b200 = by_name["sim-b200-0"]
    assert b200["metadata"]["labels"]["nvidia.com/gpu.product"] == "NVIDIA-B200"
    assert b200["metadata"]["labels"]["nvidia.com/gpu.memory"] == "183359"
    assert b200["status"]["allocatable"]["nvidia.com/gpu"] == "8"
    assert sim_cluster.gpu_inventory() == "NVIDIA-H200:8x2,NVIDIA-B200:8x1"


@pytest.mark.parametrize("sim_cluster", [{"nodes": "NVIDIA-L40S:4x1"}], indirect=True)
def test_an_oversized_pod_stays_pending_with_the_schedulers_reason(
    sim_cluster: KubeHandle,
) -> None:
    manifest = yaml.safe_dump(vllm_statefulset("huge", gpus=8))
    sim_cluster.kubectl("apply", "-f", "-", input=manifest)

    def reason() -> str:
        result = sim_cluster.kubectl(
            "get",
            "pod",
            "huge-0",
            "-o",
            "jsonpath={.status.conditions[?(@.type=='PodScheduled')].message}",
            check=False,
        )
        # First "pod has unbound immediate PersistentVolumeClaims", until the claim is bound.
        message = result.stdout.strip() if result.returncode == 0 else ""
        return message if "Insufficient" in message else ""

    message = sim_cluster.wait_until(reason, what="kube-scheduler's Insufficient message")
    # The GPU node has 4, the system node none: kube-scheduler's own words.
    assert message.startswith("0/2 nodes are available: 2 Insufficient nvidia.com/gpu.")
    phase = sim_cluster.kubectl("get", "pod", "huge-0", "-o", "jsonpath={.status.phase}")
    assert phase.stdout == "Pending"


def test_a_lora_module_missing_from_the_pods_volumes_crash_loops_with_vllms_error(
    sim_cluster: KubeHandle,
) -> None:
    """vLLM loads ``--lora-modules`` before it serves and exits when one fails; the stand-in
    looks for the adapter through the pod's volumes (the claim mounted at /cache is empty)."""
    lora = ("--enable-lora", "--lora-modules", "sql=/cache/adapters/sql")
    manifest = yaml.safe_dump(vllm_statefulset("lora", extra_args=lora))
    sim_cluster.kubectl("apply", "-f", "-", input=manifest)

    def waiting() -> dict[str, Any]:
        pod = sim_cluster.get(PODS, "default", "lora-0") or {}
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        state: dict[str, Any] = statuses[0]["state"].get("waiting", {}) if statuses else {}
        return state if state.get("reason") == "CrashLoopBackOff" else {}

    state = sim_cluster.wait_until(waiting, seconds=30, what="lora-0 in CrashLoopBackOff")
    assert "Loading lora sql failed: No adapter found for /cache/adapters/sql" in state["message"]


def test_the_kubelet_reports_ready_again_when_another_writer_marks_its_pod_not_ready(
    sim_cluster: KubeHandle,
) -> None:
    """kube-controller-manager marks the pods of a node whose Lease lapsed NotReady; once that
    node's kubelet is heard from, it reports what its containers say again (a kubelet's status
    manager), or a pod would stay out of its Service for good."""
    sim_cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(vllm_statefulset("back")))
    sim_cluster.wait_until(lambda: sim_cluster.ready_replicas("default", "back") == 1, what="Ready")

    def ready() -> str:
        return sim_cluster.kubectl(
            "get", "pod", "back-0", "-o", "jsonpath={.status.conditions[?(@.type=='Ready')].status}"
        ).stdout.strip()

    # What the node lifecycle controller writes (strategic merge: the Ready condition only).
    sim_cluster.kubectl(
        "patch", "pod", "back-0", "--subresource=status", "--type=strategic",
        "-p", json.dumps({"status": {"conditions": [{"type": "Ready", "status": "False"}]}}),
    )  # fmt: skip
    sim_cluster.wait_until(lambda: ready() == "True", what="the kubelet's Ready again")
    # The StatefulSet controller follows (read once, it lagged the pod on a loaded machine).
    sim_cluster.wait_until(
        lambda: sim_cluster.ready_replicas("default", "back") == 1, seconds=10, what="ready again"
    )


def unchecked(tmp_path: Path, example: str, **spec: Any) -> Path:
    """The example without the behavioural check: applied by hand there is no operator to set
    the pods' readiness gate (docs/rendering.md). ``spec``: fields replaced in its spec."""
    body = yaml.safe_load((ROOT / "examples" / example).read_text())
    body["spec"]["verification"] = {"enabled": False}
    body["spec"].update(spec)
    path = tmp_path / f"unchecked-{example}"
    path.write_text(yaml.safe_dump(body))
    return path


def test_a_rendered_example_becomes_ready_and_answers_through_its_service(
    sim_cluster: KubeHandle, tmp_path: Path
) -> None:
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(sim_cluster.kubectl("get", "nodes", "-o", "yaml").stdout)
    source = unchecked(tmp_path, "nano-bf16.yaml")
    rendered = subprocess.run(
        [
            sys.executable,
            "-m",
            "nemotron_operator.cli",
            "render",
            "-f",
            str(source),
            "--gpu-inventory",
            str(nodes),
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ai"}}
    sim_cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(namespace))
    sim_cluster.kubectl("apply", "-f", "-", input=rendered)
    sim_cluster.wait_until(lambda: sim_cluster.ready_replicas("ai", "nano") == 1, what="Ready")
    (pod,) = sim_cluster.list(PODS, "ai", "app.kubernetes.io/instance=nano")
    service = json.loads(sim_cluster.kubectl("get", "svc", "nano", "-n", "ai", "-o", "json").stdout)
    base = f"http://{service['spec']['clusterIP']}:{service['spec']['ports'][0]['port']}"
    answer = post_json(
        f"{base}/v1/chat/completions",
        {
            "model": "nano",
            "messages": [{"role": "user", "content": "hi"}],
            "max_tokens": 8,
        },
    )
    assert answer["usage"]["completion_tokens"] == 8
    with urllib.request.urlopen(f"http://{pod['status']['podIP']}:8000/metrics", timeout=10) as r:
        metrics = r.read().decode()
    assert 'vllm:generation_tokens_total{engine="0",model_name="nano"} 8.0' in metrics


def post_json(url: str, body: dict[str, Any]) -> dict[str, Any]:
    assert url.startswith("http://10.")  # a ClusterIP inside the test's network namespace
    request = urllib.request.Request(  # noqa: S310 - an http:// loopback URL, checked above
        url, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
        answer: dict[str, Any] = json.load(response)
    return answer


@pytest.mark.parametrize("sim_cluster", [{"nodes": "NVIDIA-H200:2x4"}], indirect=True)
def test_a_multi_node_replica_runs_leader_and_headless_worker(
    sim_cluster: KubeHandle, tmp_path: Path
) -> None:
    """Two GPUs per node force TP 2 x PP 2 across two nodes: leader + worker StatefulSets (the
    full example spells out the LeaderWorkerSet backend; tests/integration/lws runs that one)."""
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(sim_cluster.kubectl("get", "nodes", "-o", "yaml").stdout)
    example = unchecked(tmp_path, "super-vl-bf16-h200.yaml", multiNode={"backend": "StatefulSet"})
    rendered = subprocess.run(
        [sys.executable, "-m", "nemotron_operator.cli", "render",
         "-f", str(example), "--gpu-inventory", str(nodes)],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    documents = [d for d in yaml.safe_load_all(rendered) if d]
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ai"}}
    # The example downloads with a token (tokenSecretRef hf-token): without the Secret the
    # kubelet would hold the download container in CreateContainerConfigError.
    token = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "hf-token", "namespace": "ai"},
        "stringData": {"token": "hf_simulated"},
    }
    # What the example names and a cluster must have: its StorageClass (served by the simulated
    # provisioner; without it the claims stay Pending and so do the pods) and its PriorityClass
    # (without it kube-apiserver's Priority admission refuses the pods: the StatefulSets
    # create none).
    storage_class = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": "fast-nvme"},
        "provisioner": "sim.nemotron.io/local",
        "volumeBindingMode": "Immediate",
    }
    priority = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "inference-high"},
        "value": 1000000,
    }
    objects = [namespace, token, storage_class, priority, *documents]
    applied = sim_cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(objects)).stdout
    # Every rendered object is accepted, the Prometheus Operator's PodMonitor included.
    assert "podmonitor.monitoring.coreos.com/super-vl-bf16 created" in applied
    # The example pins a zone; pods wait Unschedulable until the nodes carry it.
    sim_cluster.wait_until(
        lambda: "didn't match Pod's node affinity/selector" in sim_cluster.kubectl(
            "get", "pod", "super-vl-bf16-0-0", "-n", "ai", "-o",
            "jsonpath={.status.conditions[0].message}", check=False,
        ).stdout,
        what="the zone selector to keep the leader pending",
    )  # fmt: skip
    sim_cluster.kubectl("label", "nodes", "--all", "topology.kubernetes.io/zone=us-east-1a")
    statefulsets = ["super-vl-bf16-0", "super-vl-bf16-0-w", "super-vl-bf16-1", "super-vl-bf16-1-w"]
    sim_cluster.wait_until(
        lambda: all(sim_cluster.ready_replicas("ai", s) == 1 for s in statefulsets),
        what="leaders and workers Ready",
    )
    pods = {p["metadata"]["name"]: p for p in sim_cluster.list(PODS, "ai")}
    # The worker StatefulSet starts at ordinal 1, so its pod's index is its node rank.
    assert sorted(pods) == [
        "super-vl-bf16-0-0",
        "super-vl-bf16-0-w-1",
        "super-vl-bf16-1-0",
        "super-vl-bf16-1-w-1",
    ]
    assert len({p["spec"]["nodeName"] for p in pods.values()}) == 4
    stub = sim_cluster.call(lambda c: c.stub("ai", "super-vl-bf16-0-w-1"))
    assert stub is None  # a worker rank serves no API
    service = json.loads(
        sim_cluster.kubectl("get", "svc", "super-vl-bf16", "-n", "ai", "-o", "json").stdout
    )
    base = f"http://{service['spec']['clusterIP']}:8000"
    answer = post_json(f"{base}/v1/chat/completions", {
        "model": "nemotron-super-vl", "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 4,
    })  # fmt: skip
    assert answer["model"] == "nemotron-super-vl"


@pytest.mark.slow
def test_the_benchmark_script_runs_at_a_small_scale(tmp_path: Path) -> None:
    """Keeps hack/bench-sim.py working; the figures themselves are read, not asserted."""
    figures = tmp_path / "bench.json"
    result = subprocess.run(
        [sys.executable, str(ROOT / "hack" / "bench-sim.py"), "--count", "16",
         "--repeats", "2", "--watch-samples", "5", "--watchers", "2", "--idle-seconds", "0.5",
         "--json", str(figures)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "all 16 pods Ready" in result.stdout
    data = json.loads(figures.read_text())
    assert data["create_statefulsets"]["n"] == 16
    assert set(data["watch"]) == {"custom resources (admission validates each patch)", "configmaps"}
