"""A tiny Nemotron-H with MTP served by vLLM's CPU build through the operator: Ready through the
readiness gate with vLLM's own parsers, the plan checked against the engine's cache_config_info,
throughput and MTP acceptance from its counters. The tests run in file order on one deployment."""

from __future__ import annotations

import json
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from nemotron_sim.checkpoints.placement import checkpoint_dir
from nemotron_sim.kubeapi.resources import ResourceKey
from tests.integration.operator_process import OperatorProcess, ensure_namespace
from tests.kube import NEMOTRON_DEPLOYMENTS, KubeHandle

SERVICES = ResourceKey("", "v1", "services")
NAMESPACE = "ai"
NAME = "tiny"
CLAIM = "tiny-weights"
ENGINE_IMAGE = "vllm/vllm-openai:v0.32.0"  # the release hack/build-vllm-cpu.sh installs
READY_SECONDS = 900.0  # start-up is 25-100 s on 2 quiet cores, minutes on a loaded machine


def deployment(architecture: dict[str, Any], **engine: Any) -> dict[str, Any]:
    return {
        "apiVersion": "serving.nemotron.io/v1alpha1",
        "kind": "NemotronDeployment",
        "metadata": {"name": NAME, "namespace": NAMESPACE},
        "spec": {
            "model": {
                "id": "local/tiny-nemotron-h",
                "source": {"pvc": {"claimName": CLAIM, "path": "/tiny"}},
                "architecture": architecture,
            },
            "engine": {
                "image": ENGINE_IMAGE,
                "maxModelLen": 2048,
                "gpuMemoryUtilization": 0.04,
                "kvCacheMemory": "Planned",
                # vLLM's CPU build: prefix caching kills the engine past one block, and with MTP
                "enablePrefixCaching": False,
                "reasoningParser": "nemotron_v3",
                "toolCallParser": "qwen3_coder",
                "speculativeDecoding": {"method": "mtp", "numSpeculativeTokens": 1},
                # eager on 2 cores; 128: the block the CPU build forces, so the plan uses it too
                "extraArgs": ["--enforce-eager", "--block-size", "128"],
                **engine,
            },
        },
    }


def claim_manifest() -> str:
    return json.dumps({
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": CLAIM, "namespace": NAMESPACE},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    })  # fmt: skip


def write_checkpoint(python: Path, cluster: KubeHandle, kind: str = "scripted") -> dict[str, Any]:
    """The checkpoint onto the claim the deployment names; its spec.model.architecture."""
    pods_dir = cluster.call(lambda c: c.kubelet_settings.workdir)
    assert pods_dir is not None
    target = checkpoint_dir(deployment({}), Path(pods_dir) / "claims")
    root = Path(__file__).resolve().parents[3]
    done = subprocess.run(
        [str(python), "-m", "nemotron_sim.checkpoints", str(target), "--kind", kind, "--mtp"],
        capture_output=True, text=True, check=True, timeout=300,
        env={"PYTHONPATH": str(root / "operator"), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    architecture: dict[str, Any] = json.loads(done.stdout)
    return architecture


_ARCHITECTURE: dict[str, Any] = {}


def write_architecture(cluster: KubeHandle) -> dict[str, Any]:
    """The architecture block of the checkpoint the module wrote (the same for every deployment
    of the module: they share the claim)."""
    return _ARCHITECTURE


def status(cluster: KubeHandle) -> dict[str, Any]:
    found = cluster.get(NEMOTRON_DEPLOYMENTS, NAMESPACE, NAME) or {}
    return dict(found.get("status") or {})


def condition(cluster: KubeHandle, kind: str) -> dict[str, Any]:
    return next((c for c in status(cluster).get("conditions") or [] if c["type"] == kind), {})


@pytest.fixture(scope="module")
def served(
    vllm_python: Path, engine_cluster: KubeHandle, engine_operator: OperatorProcess
) -> KubeHandle:
    cluster = engine_cluster
    ensure_namespace(cluster, NAMESPACE)
    cluster.kubectl("apply", "-f", "-", input=claim_manifest())
    architecture = write_checkpoint(vllm_python, cluster)
    _ARCHITECTURE.update(architecture)
    cluster.kubectl("apply", "-f", "-", input=json.dumps(deployment(architecture)))
    cluster.wait_until(
        lambda: condition(cluster, "Ready").get("status") == "True",
        seconds=READY_SECONDS, every=2.0, what="the tiny deployment Ready on the real engine",
    )  # fmt: skip
    return cluster


def test_ready_through_the_behavioural_check_with_the_real_parsers(served: KubeHandle) -> None:
    ready = condition(served, "Ready")
    assert ready["status"] == "True", ready


def test_the_plan_matches_the_engines_cache_config(served: KubeHandle) -> None:
    served.wait_until(
        lambda: condition(served, "PlanAccurate").get("status") in {"True", "False"},
        seconds=120, every=1.0, what="a PlanAccurate verdict",
    )  # fmt: skip
    check = status(served).get("planCheck") or {}
    plan = status(served).get("plan") or {}
    accurate = condition(served, "PlanAccurate")
    assert accurate["status"] == "True", (accurate, check, plan)
    assert check["kvCacheBlocks"] == plan["kvCacheBlocks"], (check, plan)


def test_throughput_and_mtp_acceptance_come_from_the_engines_counters(served: KubeHandle) -> None:
    """Chats through the Service; the scripted checkpoint's MTP layer predicts exactly what the
    model says, so every draft token is accepted at temperature 0."""
    service = served.get(SERVICES, NAMESPACE, NAME) or {}
    url = f"http://{service['spec']['clusterIP']}:8000/v1/chat/completions"
    body = {"model": NAME, "temperature": 0, "max_tokens": 16,
            "messages": [{"role": "user", "content": "Weather?"}]}  # fmt: skip

    def chatted() -> dict[str, Any]:
        request = urllib.request.Request(
            url, json.dumps(body).encode(), {"Content-Type": "application/json"}
        )
        urllib.request.urlopen(request, timeout=120).read()  # noqa: S310 (the cluster's address)
        shown = status(served).get("throughput") or {}
        return shown if shown.get("mtpAcceptanceRate") is not None else {}

    throughput: dict[str, Any] = served.wait_until(
        chatted, seconds=300, every=1.0, what="MTP acceptance"
    )
    assert throughput["mtpAcceptanceRate"] == 1.0, throughput
    assert throughput["podsSampled"] == 1, throughput


def test_a_command_the_engine_refuses_crash_loops_with_vllms_own_words(
    engine_cluster: KubeHandle, served: KubeHandle
) -> None:
    """A chat template path that does not exist: the operator passes extraArgs through (it
    cannot see the image's files), vLLM refuses it while checking its arguments. The pod
    crash-loops and the condition quotes vLLM."""
    cluster = engine_cluster
    broken = deployment(write_architecture(served))
    broken["spec"]["engine"]["extraArgs"] += ["--chat-template", "/models/missing.jinja"]
    broken["metadata"]["name"] = "refused"
    cluster.kubectl("apply", "-f", "-", input=json.dumps(broken))

    def crash_loop() -> dict[str, Any]:
        found = cluster.get(NEMOTRON_DEPLOYMENTS, NAMESPACE, "refused") or {}
        ready: dict[str, Any] = next(
            (c for c in (found.get("status") or {}).get("conditions") or []
             if c["type"] == "Ready"), {},
        )  # fmt: skip
        return ready if ready.get("reason") == "CrashLoop" else {}

    try:
        ready: dict[str, Any] = cluster.wait_until(
            crash_loop, seconds=READY_SECONDS, every=2.0, what="CrashLoop"
        )
        assert "(/models/missing.jinja) appears path-like, but doesn't exist" in ready["message"], (
            ready
        )
    finally:
        cluster.kubectl("delete", "nemotrondeployment", "refused", "-n", NAMESPACE, "--wait=false")
