"""The operator's monitoring objects in a real Prometheus Operator and a real Prometheus
(issue 37; the simulated cluster's ``monitoring`` add-on, sim_cluster/addons/monitoring.py:
both built from their Go modules by hack/build-addons.sh):

- the PodMonitor the operator renders becomes a scrape job whose targets are exactly the serving
  leaders, and they are up;
- the chart's ServiceMonitor scrapes the operator's /metrics with the reader's token; the same
  endpoint without it is refused (401);
- every panel query of the shipped Grafana dashboard (docs/grafana/nemotron-operator.json) parses
  and returns data.
"""

from __future__ import annotations

import copy
import json
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.cluster import KIND, E2ECluster, e2e_cluster, get_json, wait_until

pytestmark = pytest.mark.skipif(
    KIND, reason="the monitoring add-on is the simulated cluster's (kind has no Prometheus here)"
)
ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "docs" / "grafana" / "nemotron-operator.json"
RELEASE = "nemotron-operator-monitored"
OPERATOR_NAMESPACE = "nemotron-monitored"
WORKLOAD_NAMESPACE = "nemotron-monitored-ai"
NAME = "nano"
# The add-on's Prometheus: its ServiceAccount (the chart's metrics reader) and Service
PROMETHEUS_NAMESPACE, PROMETHEUS_SA = "monitoring", "prometheus"
# Grafana's built-in variables, as Grafana would expand them for a one-hour view
GRAFANA_VARIABLES = {"$__rate_interval": "1m", "$__range": "1h"}


@pytest.fixture(scope="module")
def monitored(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[E2ECluster]:
    """A simulated cluster of its own with the monitoring add-on, the chart installed with its
    ServiceMonitor and the add-on's Prometheus as a metrics reader."""
    from tests.kube import SHARED_OPTIONS

    workdir = tmp_path_factory.mktemp("monitoring")
    pool = request.getfixturevalue("cluster_pool")
    options = {**SHARED_OPTIONS, "addons": ["monitoring"], "purpose": "e2e"}
    with pool.lease(options, workdir, through_proxy=False) as simulated:
        try:
            with e2e_cluster(workdir, simulated) as cluster:
                cluster.helm_install(
                    "--set", "metrics.serviceMonitor.enabled=true",
                    "--set", f"metrics.auth.readers[0].namespace={PROMETHEUS_NAMESPACE}",
                    "--set", f"metrics.auth.readers[0].name={PROMETHEUS_SA}",
                    "--set", "rbac.podMonitors=true",
                    release=RELEASE, namespace=OPERATOR_NAMESPACE,
                )  # fmt: skip
                yield cluster
        finally:
            simulated.reset()


def prometheus(cluster: E2ECluster) -> str:
    ip = cluster.kubectl(
        "get",
        "service",
        "prometheus",
        "-n",
        PROMETHEUS_NAMESPACE,
        "-o",
        "jsonpath={.spec.clusterIP}",
    ).stdout
    url = f"http://{ip}:9090"

    def ready() -> bool:
        try:
            with urllib.request.urlopen(f"{url}/-/ready", timeout=5) as answer:  # noqa: S310
                return bool(answer.status == 200)
        except OSError:
            return False

    wait_until(ready, seconds=120, what="the add-on's Prometheus ready")
    return url


def query(url: str, promql: str) -> dict[str, Any]:
    answer: dict[str, Any] = get_json(
        f"{url}/api/v1/query?{urllib.parse.urlencode({'query': promql})}"
    )
    return answer


def targets(url: str, pool: str) -> list[dict[str, Any]]:
    active = get_json(f"{url}/api/v1/targets?state=active")["data"]["activeTargets"]
    return [t for t in active if t["scrapePool"] == pool]


def deployment() -> dict[str, Any]:
    return {
        "apiVersion": "serving.nemotron.io/v1alpha1",
        "kind": "NemotronDeployment",
        "metadata": {"name": NAME, "namespace": WORKLOAD_NAMESPACE},
        "spec": {
            # A model with MTP, so that the dashboard's MTP panels have series too.
            "model": {"id": "nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4"},
            "engine": {"maxModelLen": 131072},
            "capacity": {"gpu": {"products": ["NVIDIA-B200"]}},
            "replicas": 2,
            "monitoring": {"podMonitor": {"enabled": True, "interval": "1s"}},
        },
    }


def leaders(cluster: E2ECluster) -> set[str]:
    scale = cluster.kubectl_json("get", "nd", NAME, "-n", WORKLOAD_NAMESPACE, "--subresource=scale")
    selector = scale["status"]["selector"]
    pods = cluster.kubectl_json("get", "pods", "-n", WORKLOAD_NAMESPACE, "-l", selector)["items"]
    return {p["metadata"]["name"] for p in pods}


@pytest.fixture(scope="module")
def serving(monitored: E2ECluster) -> E2ECluster:
    if monitored.kubectl("get", "ns", WORKLOAD_NAMESPACE, check=False).returncode != 0:
        monitored.kubectl("create", "namespace", WORKLOAD_NAMESPACE)
    monitored.kubectl("apply", "-f", "-", input=yaml.safe_dump(deployment()))
    waited = monitored.kubectl(
        "wait", "nd", NAME, "-n", WORKLOAD_NAMESPACE, "--for=condition=Ready", "--timeout=240s",
        timeout=260, check=False,
    )  # fmt: skip
    if waited.returncode != 0:
        found = monitored.kubectl_json("get", "nd", NAME, "-n", WORKLOAD_NAMESPACE)
        pods = monitored.kubectl("get", "pods", "-A", "-o", "wide").stdout
        raise AssertionError(f"{NAME} not Ready: {found.get('status')}\n{pods}")
    return monitored


def test_the_pod_monitor_scrapes_exactly_the_serving_leaders(serving: E2ECluster) -> None:
    url = prometheus(serving)
    pool = f"podMonitor/{WORKLOAD_NAMESPACE}/{NAME}/0"  # the operator's PodMonitor's job
    expected = leaders(serving)
    assert len(expected) == 2
    # All pods of the namespace, so that "exactly" could fail: the job must not select others.
    everything = {p["metadata"]["name"] for p in serving.kubectl_json("get", "pods", "-A")["items"]}

    seen: list[Any] = []

    def up() -> list[dict[str, Any]]:
        # Until Prometheus has discovered as many targets as there are leaders (its discovery
        # of the second pod can trail the first's first scrape), every one of them up.
        found = targets(url, pool)
        seen[:] = [(t["labels"].get("pod"), t["health"], t["lastError"]) for t in found]
        complete = len(found) >= len(expected) and all(t["health"] == "up" for t in found)
        return found if complete else []

    try:
        found = wait_until(up, seconds=90, what=f"the targets of {pool} up")
    except AssertionError as error:
        raise AssertionError(f"{error}; its targets: {seen}") from None
    assert {t["labels"]["pod"] for t in found} == expected
    assert len(everything) > len(expected)
    assert all(t["scrapeUrl"].endswith(":8000/metrics") for t in found), found

    # PromQL returns the stand-in vLLMs' own series, one per leader. A target reads "up" a moment
    # before its scrape's samples are committed (Prometheus v0.316.0 scrape/scrape.go: the
    # report's defer runs before the commit's), so the first answer may hold one leader's only.
    def leaders_running() -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = query(
            url, f'vllm:num_requests_running{{namespace="{WORKLOAD_NAMESPACE}"}}'
        )["data"]["result"]
        return result if len(result) >= len(expected) else []

    running = wait_until(leaders_running, seconds=30, what="each leader's series in Prometheus")
    assert {r["metric"]["pod"] for r in running} == expected


def test_the_service_monitor_scrapes_with_the_readers_token_and_without_it_is_refused(
    serving: E2ECluster,
) -> None:
    url = prometheus(serving)
    (monitor,) = serving.kubectl_json("get", "servicemonitors", "-n", OPERATOR_NAMESPACE)["items"]
    name = monitor["metadata"]["name"]
    # The same endpoint without the token: a ServiceMonitor of the test's own.
    bare = copy.deepcopy(monitor)
    bare["metadata"] = {"name": f"{name}-no-token", "namespace": OPERATOR_NAMESPACE}
    del bare["spec"]["endpoints"][0]["authorization"]
    serving.kubectl("apply", "-f", "-", input=json.dumps(bare))
    try:
        (authorized,) = wait_until(
            lambda: [t for t in targets(url, f"serviceMonitor/{OPERATOR_NAMESPACE}/{name}/0")
                     if t["health"] == "up"],
            seconds=90, what="the chart's ServiceMonitor target up",
        )  # fmt: skip
        bare_pool = f"serviceMonitor/{OPERATOR_NAMESPACE}/{name}-no-token/0"
        (refused,) = wait_until(
            lambda: [t for t in targets(url, bare_pool) if t["health"] == "down"],
            seconds=90, what="the token-less ServiceMonitor's target down",
        )  # fmt: skip
    finally:
        serving.kubectl("delete", "servicemonitor", f"{name}-no-token", "-n", OPERATOR_NAMESPACE)
    assert authorized["scrapeUrl"].endswith(":8081/metrics")
    assert refused["scrapeUrl"] == authorized["scrapeUrl"]
    assert "401" in refused["lastError"], refused["lastError"]


def dashboard_queries() -> list[tuple[str, str]]:
    board = json.loads(DASHBOARD.read_text())

    def panels(items: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for panel in items:
            yield panel
            yield from panels(panel.get("panels") or [])

    return [
        (panel.get("title", ""), target["expr"])
        for panel in panels(board["panels"])
        for target in panel.get("targets") or []
        if target.get("expr")
    ]


def expanded(expr: str) -> str:
    """The query as Grafana sends it with the deployment picked in both variables."""
    for variable, value in GRAFANA_VARIABLES.items():
        expr = expr.replace(variable, value)
    return expr.replace("$namespace", WORKLOAD_NAMESPACE).replace("$deployment", NAME)


def test_every_dashboard_panel_query_parses_and_returns_data(serving: E2ECluster) -> None:
    url = prometheus(serving)
    queries = dashboard_queries()
    assert len(queries) > 20
    service = serving.kubectl_json("get", "service", NAME, "-n", WORKLOAD_NAMESPACE)
    chat = f"http://{service['spec']['clusterIP']}:8000/v1/chat/completions"
    body = {"model": NAME, "messages": [{"role": "user", "content": "hello"}], "max_tokens": 16}

    def send() -> None:
        request = urllib.request.Request(
            chat, json.dumps(body).encode(), {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310
            assert answer.status == 200

    stop = threading.Event()

    def load() -> None:  # sustained requests: the operator's interval figures (MTP, TTFT) need them
        while not stop.is_set():
            send()

    def empty() -> list[str]:
        missing = []
        for title, expr in queries:
            try:
                answer = query(url, expanded(expr))
            except urllib.error.HTTPError as error:  # 400: the query does not parse
                raise AssertionError(f"{title}: {expanded(expr)}: {error.read()!r}") from None
            assert answer["status"] == "success", (title, expr, answer)
            if not answer["data"]["result"]:
                missing.append(f"{title}: {expr}")
        return missing

    still: list[str] = []

    def all_answer() -> bool:
        still[:] = empty()
        return not still

    workers = [threading.Thread(target=load, daemon=True) for _ in range(4)]
    for worker in workers:
        worker.start()
    try:
        wait_until(all_answer, seconds=120, every=2.0, what="every dashboard query with data")
    except AssertionError:
        pytest.fail("dashboard queries without data:\n" + "\n".join(still))
    finally:
        stop.set()
        for worker in workers:
            worker.join(60)
