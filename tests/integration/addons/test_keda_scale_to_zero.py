"""examples/nano-keda.yaml under a real KEDA operator reading a real Prometheus (issue 37; the
simulated cluster's ``monitoring`` and ``keda`` add-ons, built from their Go modules by
hack/build-addons.sh): idle for idleSeconds after it was created, KEDA scales the
NemotronDeployment to zero (not at once: the rendered initialCooldownPeriod, which KEDA's default
of 0 would make immediate); a burst of requests at the ingress wakes it to one — KEDA writing the
scale subresource, as kube-apiserver's audit log shows — and the operator's Autoscaling condition
says what KEDA's ScaledObject says.

The example's query counts requests at an ingress (ingress-nginx's counter); here a stand-in
ingress (ingress_counter.py) answers and counts them, and the add-on's Prometheus scrapes it
through a PodMonitor. Two values of the example change for a test's time: idleSeconds (KEDA's
cooldownPeriod) and the polling interval; and the server address is the Prometheus Service's
ClusterIP (the simulated cluster has no cluster DNS).
"""

from __future__ import annotations

import sys
import time
import urllib.request
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from nemotron_sim.kubeapi.resources import ResourceKey
from tests.integration.operator.helpers import NDS, apply, condition, status
from tests.integration.operator_process import OperatorProcess, ensure_namespace

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "nano-keda.yaml"
COUNTER = Path(__file__).resolve().parent / "ingress_counter.py"
INGRESS_IMAGE = "registry.k8s.io/ingress-nginx/controller"
NAMESPACE, NAME = "ai", "nano-keda"
KEDA_SA = "system:serviceaccount:keda:keda-operator"
SCALED_OBJECTS = ResourceKey("keda.sh", "v1alpha1", "scaledobjects")
HPAS = ResourceKey("autoscaling", "v2", "horizontalpodautoscalers")
PODS = ResourceKey("", "v1", "pods")
LEASES = ResourceKey("coordination.k8s.io", "v1", "leases")
CLUSTER = {
    "addons": ["monitoring", "keda"],
    "images": {INGRESS_IMAGE: [sys.executable, str(COUNTER)]},
}
SCRAPE_ARGS = ["--scrape-seconds=0.3", "--scrape-timeout-seconds=0.5"]


def ingress(namespace: str) -> list[dict[str, Any]]:
    labels = {"app.kubernetes.io/name": "ingress-counter"}
    return [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "ingress-counter", "namespace": namespace, "labels": labels},
            "spec": {
                "containers": [
                    {
                        "name": "controller",
                        "image": f"{INGRESS_IMAGE}:v1.13.0",
                        "args": [NAMESPACE, NAME],
                        "ports": [{"name": "metrics", "containerPort": 8080}],
                    }
                ]
            },
        },
        {
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "PodMonitor",
            "metadata": {"name": "ingress-counter", "namespace": namespace},
            "spec": {
                "selector": {"matchLabels": labels},
                "podMetricsEndpoints": [{"port": "metrics", "interval": "1s"}],
            },
        },
    ]


def cluster_ip(operator: OperatorProcess, namespace: str, name: str) -> str:
    service = operator.cluster.get(ResourceKey("", "v1", "services"), namespace, name) or {}
    return str(service["spec"]["clusterIP"])


def spec_replicas(operator: OperatorProcess) -> int:
    return int((operator.cluster.get(NDS, NAMESPACE, NAME) or {})["spec"]["replicas"])


def keda_scale_writes(operator: OperatorProcess) -> list[str]:
    return [
        e.at
        for e in operator.cluster.audit()
        if e.username == KEDA_SA
        and e.resource == "nemotrondeployments/scale"
        and e.verb in ("update", "patch")
        and e.code == 200
    ]


def instant(rfc3339: str) -> datetime:
    return datetime.fromisoformat(rfc3339.replace("Z", "+00:00"))


def keda_leading(operator: OperatorProcess) -> bool:
    """KEDA's operator runs and leads: its current container holds the leader lease (a container
    killed while holding it leaves a lease the next one waits out, 15 s; until then nothing
    reconciles ScaledObjects, and the idle window under test would look longer than it is)."""
    cluster = operator.cluster
    pods = cluster.list(PODS, "keda", label_selector="app=keda-operator")
    lease = cluster.get(LEASES, "keda", "operator.keda.sh") or {}
    acquired = (lease.get("spec") or {}).get("acquireTime")
    if len(pods) != 1 or not acquired:
        return False
    statuses = (pods[0].get("status") or {}).get("containerStatuses") or []
    started = [((c.get("state") or {}).get("running") or {}).get("startedAt") for c in statuses]
    return bool(started and started[0]) and instant(acquired) >= instant(started[0])


def keda_conditions(operator: OperatorProcess) -> dict[str, str]:
    scaled = operator.cluster.get(SCALED_OBJECTS, NAMESPACE, NAME) or {}
    return {c["type"]: c["status"] for c in (scaled.get("status") or {}).get("conditions") or []}


def autoscaling_reason(operator: OperatorProcess, reason: str) -> dict[str, Any]:
    """The Autoscaling condition once its reason is ``reason`` (KEDA's status read back)."""
    operator.cluster.wait_until(
        lambda: condition(operator.cluster, "Autoscaling", NAME).get("reason") == reason,
        seconds=30, what=f"Autoscaling {reason}",
    )  # fmt: skip
    return condition(operator.cluster, "Autoscaling", NAME)


@pytest.mark.parametrize("sim_cluster", [CLUSTER], indirect=True)
@pytest.mark.parametrize("operator_process", [SCRAPE_ARGS], indirect=True)
def test_nano_keda_idles_to_zero_and_a_burst_wakes_it_through_keda(
    operator_process: OperatorProcess,
) -> None:
    operator = operator_process
    cluster = operator.cluster
    cluster.wait_until(lambda: keda_leading(operator), seconds=120, what="KEDA's operator leading")
    ensure_namespace(cluster, NAMESPACE)
    for obj in ingress(NAMESPACE):
        apply(cluster, obj)
    example = yaml.safe_load(EXAMPLE.read_text())
    autoscaling = example["spec"]["autoscaling"]
    idle_seconds = 10
    autoscaling["idleSeconds"] = idle_seconds
    autoscaling["keda"]["pollingIntervalSeconds"] = 1
    prometheus = f"http://{cluster_ip(operator, 'monitoring', 'prometheus')}:9090"
    autoscaling["keda"]["prometheus"]["serverAddress"] = prometheus
    apply(cluster, example)

    # Idle: KEDA's query is 0 (no request at the ingress), not above activationThreshold 0, so
    # KEDA scales the deployment to zero through the scale subresource — idleSeconds after the
    # ScaledObject was created (its initialCooldownPeriod), not at once.
    cluster.wait_until(
        lambda: keda_conditions(operator).get("Ready") == "True",
        seconds=120, what="KEDA's ScaledObject Ready",
    )  # fmt: skip
    cluster.wait_until(lambda: spec_replicas(operator) == 0, seconds=120, what="KEDA scales to 0")
    to_zero = keda_scale_writes(operator)
    assert to_zero, "spec.replicas 0 was not written by KEDA"
    created = (cluster.get(SCALED_OBJECTS, NAMESPACE, NAME) or {})["metadata"]["creationTimestamp"]
    assert instant(to_zero[0]) >= instant(created) + timedelta(seconds=idle_seconds), (
        f"KEDA scaled to zero at {to_zero[0]}, less than idleSeconds after {created}"
    )
    assert keda_conditions(operator)["Active"] == "False"
    cluster.wait_until(lambda: status(cluster, NAME).get("phase") == "Idle", what="phase Idle")
    hpa = cluster.get(HPAS, NAMESPACE, f"keda-hpa-{NAME}")
    assert hpa is not None, "KEDA created no HPA"
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "serving.nemotron.io/v1alpha1",
        "kind": "NemotronDeployment",
        "name": NAME,
    }
    idle = autoscaling_reason(operator, "KEDAIdle")
    assert idle["status"] == "True"

    # A burst at the ingress: KEDA's query goes above 0 and KEDA wakes the deployment to one.
    writes = len(keda_scale_writes(operator))
    burst = time.monotonic()
    pod_ip = (cluster.get(PODS, NAMESPACE, "ingress-counter") or {})["status"]["podIP"]
    for _ in range(30):
        with urllib.request.urlopen(f"http://{pod_ip}:8080/", timeout=5) as answer:
            assert answer.status == 200
    cluster.wait_until(lambda: spec_replicas(operator) == 1, seconds=90, what="KEDA wakes it to 1")
    print(f"KEDA woke it {time.monotonic() - burst:.1f} s after the burst began")
    assert len(keda_scale_writes(operator)) > writes
    cluster.wait_until(
        lambda: status(cluster, NAME).get("phase") == "Ready", seconds=90, what="Ready at 1"
    )
    assert keda_conditions(operator)["Active"] == "True"
    active = autoscaling_reason(operator, "KEDAActive")
    assert "KEDA" in active["message"]
