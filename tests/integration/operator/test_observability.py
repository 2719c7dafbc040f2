"""The running operator observes its deployments: throughput and MTP from the stand-in vLLMs into
status and /metrics, the plan checked against vllm:cache_config_info, unresponsive pods reported,
series of a deleted deployment gone, no status writes while the figures hold still, and the
built-in autoscaler within its limits and the cluster's GPUs."""

from __future__ import annotations

import http.client
import json
import threading
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.operator.helpers import (
    EVENTS,
    NAMESPACE,
    NDS,
    PODS,
    SERVICES,
    apply,
    children,
    condition,
    status,
    wait_ready,
)
from tests.integration.operator_process import OperatorProcess, ensure_namespace

LIGHTNING = "nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4"
SCRAPE = "--scrape-seconds=0.3"
SCRAPE_ARGS = [SCRAPE, "--scrape-timeout-seconds=0.5"]


def lightning(name: str, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": {"id": LIGHTNING},
        "engine": {"maxModelLen": 131072},
        "capacity": {"gpu": {"products": ["NVIDIA-B200"]}},
        **spec,
    }
    return {
        "apiVersion": "serving.nemotron.io/v1alpha1",
        "kind": "NemotronDeployment",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": body,
    }


def endpoint(operator: OperatorProcess, name: str) -> str:
    service = operator.cluster.get(SERVICES, NAMESPACE, name) or {}
    return f"http://{service['spec']['clusterIP']}:8000"


def serving(operator: OperatorProcess, name: str) -> str:
    """The Service's URL once a chat through it is answered. Ready is the pod's condition; the
    Service routes to it only once kube-controller-manager's EndpointSlice controller has
    followed it, a moment later, and until then the service proxy closes every connection."""
    url = endpoint(operator, name)

    def answers() -> bool:
        try:
            chat(url, name, "are you there?", max_tokens=1)
        except (OSError, http.client.HTTPException):
            return False
        return True

    until(operator, answers, f"{name} answering through its Service")
    return url


def chat(url: str, served: str, prompt: str, max_tokens: int = 48) -> None:
    body = {
        "model": served,
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": max_tokens,
        "ignore_eos": True,
    }
    request = urllib.request.Request(  # noqa: S310 (loopback)
        f"{url}/v1/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
        assert response.status == 200


class Load:
    """Chat completions from a few threads until stopped (bounded by ``seconds``)."""

    def __init__(self, url: str, served: str, *, threads: int, max_tokens: int = 48) -> None:
        self._stop = threading.Event()
        self._pool = ThreadPoolExecutor(threads)
        self._futures = [
            self._pool.submit(self._run, url, served, i, max_tokens) for i in range(threads)
        ]

    def _run(self, url: str, served: str, worker: int, max_tokens: int) -> int:
        sent = 0
        while not self._stop.is_set() and sent < 2000:
            chat(url, served, f"worker {worker} request {sent}", max_tokens)
            sent += 1
        return sent

    def stop(self) -> int:
        self._stop.set()
        sent = sum(f.result(60) for f in self._futures)
        self._pool.shutdown()
        return sent


def scrape_operator(
    operator: OperatorProcess,
) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(operator.metrics_url, timeout=5) as response:  # noqa: S310
        text = response.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def series_of(operator: OperatorProcess, name: str) -> dict[str, float]:
    return {
        metric: value
        for (metric, labels), value in scrape_operator(operator).items()
        if ("name", name) in labels and ("namespace", NAMESPACE) in labels
        and not labels_extra(labels)
    }  # fmt: skip


def labels_extra(labels: tuple[tuple[str, str], ...]) -> bool:
    return any(key in {"component", "quantile", "figure"} for key, _ in labels)


def stub_counters(operator: OperatorProcess, pod: str) -> tuple[float, float]:
    def read(cluster: Any) -> tuple[float, float]:
        stub = cluster.stub(NAMESPACE, pod)
        spec = stub.metrics.spec_decode
        return spec.num_accepted_tokens._value.get(), spec.num_draft_tokens._value.get()

    return operator.cluster.call(read)


def pod_names(operator: OperatorProcess, name: str) -> list[str]:
    return sorted(p["metadata"]["name"] for p in children(operator.cluster, PODS, name))


def events(operator: OperatorProcess, name: str) -> list[dict[str, Any]]:
    return [
        e
        for e in operator.cluster.list(EVENTS, NAMESPACE)
        if e["involvedObject"].get("name") == name
        and e["involvedObject"].get("kind") == "NemotronDeployment"
    ]


def until(
    operator: OperatorProcess, check: Callable[[], Any], what: str, seconds: float = 20
) -> Any:
    try:
        return operator.cluster.wait_until(check, seconds=seconds, what=what)
    except AssertionError as error:
        raise AssertionError(f"{error}\noperator log:\n{operator.log()[-3000:]}") from None


@pytest.mark.parametrize("operator_process", [SCRAPE_ARGS], indirect=True)
def test_throughput_mtp_and_plan_check_reach_status_and_metrics(
    operator_process: OperatorProcess,
) -> None:
    operator = operator_process
    ensure_namespace(operator.cluster, NAMESPACE)
    apply(operator.cluster, lightning("light"))
    wait_ready(operator.cluster, "light")
    check = until(operator, lambda: status(operator.cluster, "light").get("planCheck"), "planCheck")
    plan = status(operator.cluster, "light")["plan"]
    assert check["kvCacheBlocks"] == plan["kvCacheBlocks"]
    assert check["blocksDeviation"] == 0
    assert condition(operator.cluster, "PlanAccurate", "light")["reason"] == "WithinTolerance"

    load = Load(serving(operator, "light"), "light", threads=4)
    (pod,) = pod_names(operator, "light")
    try:
        # Enough drafts that an interval's acceptance is a fair sample of the stand-in's.
        until(operator, lambda: stub_counters(operator, pod)[1] > 1500, "sustained load")
        sampled = status(operator.cluster, "light").get("throughput", {}).get("sampledAt")
        until(
            operator,
            lambda: status(operator.cluster, "light")["throughput"]["sampledAt"] != sampled,
            "a status written under sustained load",
        )
        shown = until(
            operator,
            lambda: (
                (status(operator.cluster, "light").get("throughput") or {}).get("mtpAcceptanceRate")
                and status(operator.cluster, "light")["throughput"]
            ),
            "throughput with MTP figures in status",
        )
        metrics = until(
            operator,
            lambda: (
                (m := series_of(operator, "light")).get(
                    "nemotron_deployment_generation_tokens_per_second"
                )
                and m
            ),
            "tokens/s in the operator's metrics",
        )
    finally:
        sent = load.stop()
    assert sent > 0
    accepted, drafted = stub_counters(operator, pod)
    # The stand-in's counters imply this acceptance; an interval's ratio is a sample of it.
    assert shown["mtpAcceptanceRate"] == pytest.approx(accepted / drafted, abs=0.1)
    assert shown["mtpMeanAcceptedLength"] == pytest.approx(1 + accepted / drafted, abs=0.1)
    assert shown["generationTokensPerSecond"] > 0
    assert shown["podsSampled"] == 1
    assert metrics["nemotron_deployment_mtp_acceptance_ratio"] == pytest.approx(
        accepted / drafted, abs=0.15
    )
    assert metrics["nemotron_deployment_observed_kv_cache_blocks"] == plan["kvCacheBlocks"]
    assert metrics["nemotron_deployment_plan_accurate"] == 1
    assert metrics["nemotron_deployment_ready"] == 1
    table = operator.cluster.kubectl("get", "nd", "light", "-n", NAMESPACE).stdout
    assert "TOKENS/S" in table.splitlines()[0]

    # Idle again: the figures drop to zero once, then hold still — no status writes at all.
    until(
        operator,
        lambda: status(operator.cluster, "light")["throughput"]["generationTokensPerSecond"] == 0,
        "idle throughput in status",
    )
    mark = operator.mark()
    operator.wait_reconciles(5)  # five resync ticks, and as many scrape ticks (SCRAPE_ARGS)
    assert operator.writes(mark) == []

    operator.cluster.kubectl("delete", "nd", "light", "-n", NAMESPACE)
    until(operator, lambda: not series_of(operator, "light"), "the deleted deployment's series")
    operator_series = scrape_operator(operator)
    assert operator_series[("nemotron_operator_reconciles_total", (("result", "ok"),))] > 0
    patches = ("nemotron_operator_api_requests_total", (("code", "200"), ("verb", "patch")))
    assert operator_series[patches] > 0
    assert operator_series[("nemotron_operator_pod_scrapes_total", (("result", "ok"),))] > 0


@pytest.mark.parametrize("operator_process", [SCRAPE_ARGS], indirect=True)
def test_a_shortfall_raises_plan_accurate_and_a_silent_pod_is_reported(
    operator_process: OperatorProcess,
) -> None:
    operator = operator_process
    ensure_namespace(operator.cluster, NAMESPACE)
    operator.cluster.call(lambda c: c.set_kv_cache_bias(-0.10))
    apply(operator.cluster, lightning("short"))
    # The scale subresource, as an HPA or KEDA drives it.
    operator.cluster.kubectl("scale", "nd", "short", "-n", NAMESPACE, "--replicas=2")
    until(operator, lambda: len(pod_names(operator, "short")) == 2, "a second pod")
    wait_ready(operator.cluster, "short")
    scale = json.loads(
        operator.cluster.kubectl(
            "get", "nd", "short", "-n", NAMESPACE, "--subresource=scale", "-o", "json"
        ).stdout
    )
    assert scale["spec"]["replicas"] == 2
    assert scale["status"]["replicas"] == 2
    assert "app.kubernetes.io/instance=short" in scale["status"]["selector"]
    accurate = until(
        operator,
        lambda: (c := condition(operator.cluster, "PlanAccurate", "short")) and c,
        "PlanAccurate",
    )
    assert accurate["status"] == "False"
    assert accurate["reason"] == "LessThanPlanned"
    assert "kvCacheBlocks planned" in accurate["message"]
    check = status(operator.cluster, "short")["planCheck"]
    assert check["blocksDeviation"] == pytest.approx(-0.10, abs=0.001)
    warnings = until(
        operator,
        lambda: [e for e in events(operator, "short") if e["reason"] == "LessThanPlanned"],
        "a Warning Event",
    )
    assert warnings[0]["type"] == "Warning"
    assert "kvCacheBlocks" in warnings[0]["message"]

    # One pod's /metrics breaks (its vLLM still serves /health): reported, the other measured.
    silent, healthy = pod_names(operator, "short")

    def break_metrics(cluster: Any) -> None:
        def fail() -> bytes:
            raise RuntimeError("simulated /metrics failure")

        cluster.stub(NAMESPACE, silent).metrics.exposition = fail

    operator.cluster.call(break_metrics)
    shown = until(
        operator,
        lambda: (
            (t := status(operator.cluster, "short").get("throughput") or {}).get("unresponsivePods")
            and t
        ),
        "the silent pod in status",
    )
    assert shown["unresponsivePods"] == [silent]
    assert shown["podsSampled"] == 1
    assert series_of(operator, "short")["nemotron_deployment_pods_unresponsive"] == 1
    assert healthy != silent
    operator.allowed_tracebacks.append("simulated /metrics failure")


@pytest.mark.parametrize("sim_cluster", [{"nodes": "NVIDIA-B200:2x1"}], indirect=True)
@pytest.mark.parametrize("operator_process", [SCRAPE_ARGS], indirect=True)
def test_autoscaling_out_under_waiting_requests_and_back_in_never_past_capacity(
    operator_process: OperatorProcess,
) -> None:
    operator = operator_process
    ensure_namespace(operator.cluster, NAMESPACE)
    autoscaling = {
        "minReplicas": 1,
        "maxReplicas": 4,
        "target": {"metric": "requestsWaitingPerReplica", "value": 1},
        "scaleUpStabilizationSeconds": 0,
        "scaleDownDelaySeconds": 1,
    }
    engine = {"maxModelLen": 131072, "maxNumSeqs": 2}
    apply(operator.cluster, lightning("auto", engine=engine, autoscaling=autoscaling))
    wait_ready(operator.cluster, "auto")
    replicas = lambda: (operator.cluster.get(NDS, NAMESPACE, "auto") or {})["spec"]["replicas"]  # noqa: E731
    load = Load(serving(operator, "auto"), "auto", threads=12, max_tokens=400)
    try:
        until(operator, lambda: replicas() == 2, "scaled out to the 2 GPUs there are")
        wait_ready(operator.cluster, "auto")
        capacity = until(
            operator,
            lambda: (
                (c := condition(operator.cluster, "CapacityAvailable", "auto"))
                and c["status"] == "False"
                and c
            ),
            "CapacityAvailable=False",
        )
        assert "lower spec.autoscaling.maxReplicas" in capacity["message"]
        assert replicas() == 2  # never past the GPUs that exist
    finally:
        load.stop()
    until(operator, lambda: replicas() == 1, "scaled back in after the delay", seconds=30)
    # The Event follows the scale write.
    reasons = until(
        operator,
        lambda: (
            "ScaledDown" in (found := [e["reason"] for e in events(operator, "auto")]) and found
        ),
        "the ScaledDown Event",
    )
    assert "ScaledUpToCapacity" in reasons or "ScaledUp" in reasons
    assert "InsufficientCapacity" in reasons


class Versions:
    """Every version of one NemotronDeployment, from a watch opened before it exists."""

    def __init__(self, operator: OperatorProcess, name: str) -> None:
        path = f"/apis/serving.nemotron.io/v1alpha1/namespaces/{NAMESPACE}/nemotrondeployments"
        url = f"{operator.cluster.url}{path}?watch=true&timeoutSeconds=120"
        self._request = urllib.request.Request(url, headers=operator.cluster.auth_headers)  # noqa: S310
        self._name = name
        self.seen: list[dict[str, Any]] = []
        self._opened = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        assert self._opened.wait(10), "the watch did not open"

    def _run(self) -> None:
        with urllib.request.urlopen(self._request, timeout=130) as response:  # noqa: S310
            self._opened.set()
            for line in response:
                obj = json.loads(line)["object"]
                if obj.get("metadata", {}).get("name") == self._name:
                    self.seen.append(obj)


def first_ready(versions: list[dict[str, Any]]) -> dict[str, Any] | None:
    for obj in versions:
        conditions = (obj.get("status") or {}).get("conditions") or []
        if any(c["type"] == "Ready" and c["status"] == "True" for c in conditions):
            return obj
    return None


# A generous timeout: on a loaded machine the one inline scrape must not miss its answer.
@pytest.mark.parametrize(
    "operator_process", [[SCRAPE, "--scrape-timeout-seconds=5"]], indirect=True
)
def test_status_is_complete_when_it_says_ready_and_idle_scrapes_write_nothing(
    operator_process: OperatorProcess,
) -> None:
    operator = operator_process
    ensure_namespace(operator.cluster, NAMESPACE)
    versions = Versions(operator, "first")
    # No behavioural check here: its requests would be this pod's first traffic, and this test
    # wants a pod that served nothing (test_verification.py covers the check).
    apply(operator.cluster, lightning("first", verification={"enabled": False}))
    wait_ready(operator.cluster, "first")
    ready = until(operator, lambda: first_ready(versions.seen), "the first Ready version")
    mark = operator.mark()
    # The status patch that first says Ready carries what the first scrape sees: the plan
    # check, PlanAccurate and throughput (a pod that served nothing: 0 tokens/s).
    shown = ready["status"]
    assert shown["planCheck"]["kvCacheBlocks"] == shown["plan"]["kvCacheBlocks"]
    accurate = [c for c in shown["conditions"] if c["type"] == "PlanAccurate"]
    assert [c["reason"] for c in accurate] == ["WithinTolerance"]
    assert shown["throughput"]["podsSampled"] == 1
    assert shown["throughput"]["generationTokensPerSecond"] == 0
    # Then the timer scrapes for several intervals with no traffic: no status written again.
    scraped = lambda: scrape_operator(operator).get(  # noqa: E731
        ("nemotron_operator_pod_scrapes_total", (("result", "ok"),)), 0.0
    )
    before = scraped()
    until(operator, lambda: scraped() - before >= 6, "six more scrapes")
    status_writes = [w for w in operator.writes(mark) if "/nemotrondeployments/" in w["path"]]
    assert status_writes == []
    assert first_ready(versions.seen) is ready
    assert versions.seen[-1]["status"] == shown
