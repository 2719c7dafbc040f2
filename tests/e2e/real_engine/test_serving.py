"""A tiny Nemotron-H with MTP served by vLLM's CPU build through the operator: Ready through the
readiness gate with vLLM's own parsers, the plan checked against the engine's cache_config_info,
throughput and MTP acceptance from its counters, a request through the Gateway (the ``gateway``
add-on: Envoy and the Inference Extension's real endpoint picker scraping the real engine); a
plan the engine cannot meet, a refused flag, the pod killed and a rollout. The tests run in file
order on one deployment (and a second one, the mis-planned, that starts beside it)."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from nemotron_sim.kubeapi.resources import ResourceKey
from sim_cluster.checkpoints.placement import checkpoint_dir
from tests.integration.operator_process import OperatorProcess, ensure_namespace
from tests.kube import NEMOTRON_DEPLOYMENTS, PODS, KubeHandle

SERVICES = ResourceKey("", "v1", "services")
# Behind the gateway add-on's Envoy (Gateway class nemotron-sim): docs/gateway.md
GATEWAY = {"enabled": True, "httpRoute": {"parentRefs": [{"name": "gw"}]}}
GATEWAY_OBJECT = {
    "apiVersion": "gateway.networking.k8s.io/v1",
    "kind": "Gateway",
    "metadata": {"name": "gw", "namespace": "ai"},
    "spec": {
        "gatewayClassName": "nemotron-sim",
        "listeners": [{"name": "http", "protocol": "HTTP", "port": 8080}],
    },
}
NAMESPACE = "ai"
NAME = "tiny"
MISPLANNED = "misplanned"
REFUSED = "refused"
CLAIM = "tiny-weights"
VERIFIED = "serving.nemotron.io/verified"  # the serving pods' readiness gate
ENGINE_IMAGE = "vllm/vllm-openai:v0.32.0"  # the release hack/build-vllm-cpu.sh installs
READY_SECONDS = 900.0  # start-up is 25-100 s on 2 quiet cores, minutes on a loaded machine
# The suite's 300 s per test cannot hold an engine's start on a loaded machine (the first test
# also starts the cluster): each test may wait READY_SECONDS, and a little more.
pytestmark = pytest.mark.timeout(READY_SECONDS + 300)


def deployment(architecture: dict[str, Any], name: str = NAME, **engine: Any) -> dict[str, Any]:
    return {
        "apiVersion": "serving.nemotron.io/v1alpha1",
        "kind": "NemotronDeployment",
        "metadata": {"name": name, "namespace": NAMESPACE},
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
        [str(python), "-m", "sim_cluster.checkpoints", str(target), "--kind", kind, "--mtp"],
        capture_output=True, text=True, check=True, timeout=300,
        env={"PYTHONPATH": str(root / "hack"), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    architecture: dict[str, Any] = json.loads(done.stdout)
    return architecture


def misplanned(architecture: dict[str, Any]) -> dict[str, Any]:
    """The checkpoint described with half its KV heads: the plan's attention pages are half the
    engine's, so vLLM fits half the planned blocks into the planned pool."""
    wrong = dict(architecture)
    wrong["numKeyValueHeads"] = architecture["numKeyValueHeads"] // 2
    return deployment(wrong, name=MISPLANNED)


def refused(architecture: dict[str, Any]) -> dict[str, Any]:
    """A chat template path that does not exist in the image: vLLM refuses it at start."""
    broken = deployment(architecture, name=REFUSED)
    broken["spec"]["engine"]["extraArgs"] += ["--chat-template", "/models/missing.jinja"]
    return broken


def architecture_of(cluster: KubeHandle) -> dict[str, Any]:
    """The architecture block the served deployment describes its checkpoint with."""
    found = cluster.get(NEMOTRON_DEPLOYMENTS, NAMESPACE, NAME) or {}
    architecture: dict[str, Any] = found["spec"]["model"]["architecture"]
    return architecture


def status(cluster: KubeHandle, name: str = NAME) -> dict[str, Any]:
    found = cluster.get(NEMOTRON_DEPLOYMENTS, NAMESPACE, name) or {}
    return dict(found.get("status") or {})


def condition(cluster: KubeHandle, kind: str, name: str = NAME) -> dict[str, Any]:
    return next((c for c in status(cluster, name).get("conditions") or [] if c["type"] == kind), {})


def serving_pod(cluster: KubeHandle, name: str = NAME) -> dict[str, Any]:
    """The deployment's serving pod that is not being deleted ({} when there is none)."""
    pods = cluster.list(PODS, NAMESPACE, label_selector=f"app.kubernetes.io/instance={name}")
    return next(
        (p for p in pods
         if p["spec"].get("readinessGates") and not p["metadata"].get("deletionTimestamp")), {},
    )  # fmt: skip


def verified(pod: dict[str, Any]) -> bool:
    """The operator's readiness gate: set once the pod passed the behavioural check."""
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c["type"] == VERIFIED and c["status"] == "True" for c in conditions)


@pytest.fixture(scope="module")
def served(
    vllm_python: Path, engine_cluster: KubeHandle, engine_operator: OperatorProcess
) -> KubeHandle:
    cluster = engine_cluster
    ensure_namespace(cluster, NAMESPACE)
    cluster.kubectl("apply", "-f", "-", input=claim_manifest())
    architecture = write_checkpoint(vllm_python, cluster)
    cluster.kubectl("apply", "-f", "-", input=json.dumps(GATEWAY_OBJECT))
    tiny = deployment(architecture)
    tiny["spec"]["gateway"] = GATEWAY
    cluster.kubectl("apply", "-f", "-", input=json.dumps(tiny))
    # Started beside the first, checked by a later test: one wait for two engine starts. (Not
    # the refused one: its crash loop re-imports vLLM every few seconds; started with them, the
    # two starts took 661 s instead of 232 s, on a machine busier too.)
    cluster.kubectl("apply", "-f", "-", input=json.dumps(misplanned(architecture)))
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


def test_a_plan_the_engine_cannot_meet_is_plan_accurate_false_naming_the_figures(
    served: KubeHandle,
) -> None:
    """The mis-planned deployment (started beside the first) gets the planned pool as
    --kv-cache-memory-bytes, but vLLM's pages, from the checkpoint's two KV heads, are twice the
    plan's: half the planned blocks, tokens and concurrency. The operator says so."""
    try:
        verdict: dict[str, Any] = served.wait_until(
            lambda: condition(served, "PlanAccurate", MISPLANNED)
            if condition(served, "PlanAccurate", MISPLANNED).get("status") in {"True", "False"}
            else {},
            seconds=READY_SECONDS, every=2.0, what="the mis-planned deployment's PlanAccurate",
        )  # fmt: skip
        found = status(served, MISPLANNED)
        plan, check = found["plan"], found["planCheck"]
        assert verdict["status"] == "False", (verdict, check, plan)
        assert verdict["reason"] == "LessThanPlanned", verdict
        assert check["derived"] == [], check  # every figure from vLLM's cache_config_info
        assert check["kvCacheBlocks"] == pytest.approx(plan["kvCacheBlocks"] / 2, abs=1), (
            check, plan,
        )  # fmt: skip
        assert check["blocksDeviation"] == pytest.approx(-0.5, abs=0.001), check
        for figure, observed in (
            ("kvCacheBlocks", check["kvCacheBlocks"]),
            ("kvCacheTokens", check["kvCacheTokens"]),
        ):
            said = f"{figure} planned {plan[figure]:,}, vLLM allocated {observed:,} (-50.0%)"
            assert said in verdict["message"], verdict
        assert check["pod"] in verdict["message"], verdict
        # the cause: the planned bytes, in blocks twice the plan's (not a reserve to calibrate)
        message, pool = verdict["message"], plan["perGPU"]["kvPoolBytes"]
        assert f"vLLM was given the planned pool ({pool:,} bytes) but fits fewer" in message
        assert "spec.model.architecture against the checkpoint's config.json" in message
    finally:
        served.kubectl("delete", "nemotrondeployment", MISPLANNED, "-n", NAMESPACE, "--wait=false")


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


def test_a_request_through_the_gateway_reaches_the_engine_the_real_picker_chose(
    served: KubeHandle,
) -> None:
    """Envoy's cluster for the pool goes only where the picker's header says (FailClose), so
    an answer through status.endpoint (the Gateway's address) is the real picker's choice, made
    from the real engine's metrics (it scrapes vLLM's /metrics by the names the operator
    configured)."""
    served.wait_until(
        lambda: condition(served, "InferenceGateway").get("status") == "True",
        seconds=120, every=0.5, what="InferenceGateway=True",
    )  # fmt: skip
    pod_ip = serving_pod(served)["status"]["podIP"]
    before = engine_requests(pod_ip)
    body = {"model": NAME, "temperature": 0, "max_tokens": 8,
            "messages": [{"role": "user", "content": "Weather?"}]}  # fmt: skip
    request = urllib.request.Request(  # noqa: S310 (the gateway's address in the test netns)
        status(served)["endpoint"] + "/chat/completions", json.dumps(body).encode(),
        {"Content-Type": "application/json", "X-Gateway-Model-Name": NAME},
    )  # fmt: skip

    def answered() -> int:
        try:
            with urllib.request.urlopen(request, timeout=120) as answer:  # noqa: S310
                return int(answer.status)
        except OSError:
            return 0

    assert served.wait_until(answered, seconds=60, every=0.5, what="an answer through Envoy")
    assert engine_requests(pod_ip) >= before + 1
    # The picker read the engine's metrics by the names the operator configured (queue,
    # running, KV-cache use, cache config): a name vLLM does not export is "extract failed".
    (picker,) = served.list(PODS, NAMESPACE, "app.kubernetes.io/name=endpoint-picker")
    log = served.logs(NAMESPACE, picker["metadata"]["name"])
    assert f'"starting collection","endpoint":"{pod_ip}"' in log
    assert "extract failed" not in log, log[-4000:]


def engine_requests(pod_ip: str) -> float:
    with urllib.request.urlopen(f"http://{pod_ip}:8000/metrics", timeout=10) as answer:
        lines = answer.read().decode().splitlines()
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in lines
        if line.startswith("vllm:request_success_total{")
    )


def test_a_command_the_engine_refuses_crash_loops_with_vllms_own_words(
    served: KubeHandle,
) -> None:
    """A chat template path that does not exist: the operator passes extraArgs through (it
    cannot see the image's files), vLLM refuses it while checking its arguments. The pod
    crash-loops and the condition quotes vLLM."""
    served.kubectl("apply", "-f", "-", input=json.dumps(refused(architecture_of(served))))

    def crash_loop() -> dict[str, Any]:
        ready = condition(served, "Ready", REFUSED)
        return ready if ready.get("reason") == "CrashLoop" else {}

    try:
        ready: dict[str, Any] = served.wait_until(
            crash_loop, seconds=READY_SECONDS, every=2.0, what="CrashLoop"
        )
        assert "(/models/missing.jinja) appears path-like, but doesn't exist" in ready["message"], (
            ready
        )
    finally:
        served.kubectl("delete", "nemotrondeployment", REFUSED, "-n", NAMESPACE, "--wait=false")


def test_the_serving_pod_killed_comes_back_ready_through_the_behavioural_check(
    served: KubeHandle,
) -> None:
    """The pod deleted: its StatefulSet makes a new one, a new vLLM starts, and the deployment is
    Ready again only once the new pod passed the behavioural check (its readiness gate)."""
    old = serving_pod(served)
    assert verified(old), old.get("status")
    started = time.monotonic()
    served.kubectl("delete", "pod", old["metadata"]["name"], "-n", NAMESPACE, "--wait=false")
    seen_not_ready: list[str] = []

    def back() -> dict[str, Any]:
        ready = condition(served, "Ready")
        if ready.get("status") != "True":
            seen_not_ready.append(str(ready.get("reason")))
        pod = serving_pod(served)
        if not pod or pod["metadata"]["uid"] == old["metadata"]["uid"]:
            return {}
        return pod if verified(pod) and ready.get("status") == "True" else {}

    new: dict[str, Any] = served.wait_until(
        back, seconds=READY_SECONDS, every=2.0, what="a new serving pod, verified, and Ready"
    )
    print(f"pod deleted -> a new one Ready in {time.monotonic() - started:.0f} s")
    print(f"Ready reasons seen meanwhile: {sorted(set(seen_not_ready))}")
    assert new["metadata"]["uid"] != old["metadata"]["uid"]
    assert seen_not_ready, "Ready stayed True while no verified pod served"


def test_a_new_max_model_len_replaces_the_engine_and_the_plan_check_follows(
    served: KubeHandle,
) -> None:
    """spec.engine.maxModelLen 2048 -> 1024: a new plan (the same pool, fewer blocks per
    request: more concurrency, fewer tokens), a new pod whose vLLM runs --max-model-len 1024,
    and PlanAccurate=True against that engine's own cache_config_info."""
    before, old = status(served), serving_pod(served)
    started = time.monotonic()
    served.kubectl(
        "patch", "nemotrondeployment", NAME, "-n", NAMESPACE, "--type", "merge",
        "-p", json.dumps({"spec": {"engine": {"maxModelLen": 1024}}}),
    )  # fmt: skip

    verdicts: list[str] = []

    def rolled() -> dict[str, Any]:
        now, pod = status(served), serving_pod(served)
        verdicts.append(str(condition(served, "PlanAccurate").get("reason")))
        plan, check = now.get("plan") or {}, now.get("planCheck") or {}
        if plan.get("maxModelLen") != 1024 or not pod:
            return {}
        if pod["metadata"]["uid"] == old["metadata"]["uid"] or not verified(pod):
            return {}
        if check.get("kvCacheTokens") != plan["kvCacheTokens"]:
            return {}  # still the old engine's figures
        return {"status": now, "pod": pod}

    after: dict[str, Any] = served.wait_until(
        rolled, seconds=READY_SECONDS, every=2.0, what="the new engine's plan check"
    )
    print(f"maxModelLen changed -> the new engine checked in {time.monotonic() - started:.0f} s")
    print(f"PlanAccurate reasons seen on the way: {sorted(set(verdicts))}")
    plan, check = after["status"]["plan"], after["status"]["planCheck"]
    old_plan = before["plan"]
    args = after["pod"]["spec"]["containers"][0].get("args") or []
    assert args[args.index("--max-model-len") + 1] == "1024", args
    assert plan["kvCacheTokens"] != old_plan["kvCacheTokens"], (plan, old_plan)
    assert plan["maxConcurrency"] > old_plan["maxConcurrency"], (plan, old_plan)
    assert check["derived"] == [], check
    assert check["kvCacheBlocks"] == plan["kvCacheBlocks"], (check, plan)
    assert check["maxConcurrency"] == pytest.approx(plan["maxConcurrency"], rel=1e-3), (check, plan)
    accurate = condition(served, "PlanAccurate")
    assert accurate["status"] == "True", (accurate, check, plan)
    assert condition(served, "Ready")["status"] == "True"
