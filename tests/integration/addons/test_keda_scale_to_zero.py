"""examples/nano-keda.yaml under a real KEDA (operator and metrics adapter) reading a real
Prometheus (issue 37; the simulated cluster's ``monitoring`` and ``keda`` add-ons, built from their
Go modules by hack/build-addons.sh): idle for idleSeconds after it was created, KEDA scales the
NemotronDeployment to zero (not at once: the rendered initialCooldownPeriod, which KEDA's default
of 0 would make immediate); a burst of requests at the ingress wakes it to one — KEDA writing the
scale subresource, as kube-apiserver's audit log shows — and the operator's Autoscaling condition
says what KEDA's ScaledObject says; a bigger burst takes it above one — the HPA KEDA created
reading the trigger's metric through KEDA's metrics adapter (external.metrics.k8s.io, served
through kube-apiserver's aggregation layer) and kube-controller-manager's HPA controller writing
the scale subresource.

The example's query counts requests at an ingress (ingress-nginx's counter); here a stand-in
ingress (ingress_counter.py) answers and counts them, and the add-on's Prometheus scrapes it
through a PodMonitor. Two values of the example change for a test's time: idleSeconds (KEDA's
cooldownPeriod) and the polling interval; scaleUpStabilizationSeconds is 0 (the HPA would
otherwise wait its 60 s window before adding replicas); and the server address is the Prometheus
Service's ClusterIP (the simulated cluster has no cluster DNS). The cluster's HPA controller syncs
every second (kube-controller-manager's --horizontal-pod-autoscaler-sync-period; default 15 s).
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

from nemotron_operator.kube.errors import ApiError
from nemotron_sim.kubeapi.resources import ResourceKey
from nemotron_sim.kubelet.quantity import parse_quantity
from sim_cluster.controlplane.flags import Settings
from tests.integration.operator.helpers import NDS, apply, condition, status
from tests.integration.operator_process import OperatorProcess, ensure_namespace
from tests.kube import TEST_CONTROLLER_QPS

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "nano-keda.yaml"
COUNTER = Path(__file__).resolve().parent / "ingress_counter.py"
INGRESS_IMAGE = "registry.k8s.io/ingress-nginx/controller"
NAMESPACE, NAME = "ai", "nano-keda"
KEDA_SA = "system:serviceaccount:keda:keda-operator"
HPA_SA = "system:serviceaccount:kube-system:horizontal-pod-autoscaler"
SCALED_OBJECTS = ResourceKey("keda.sh", "v1alpha1", "scaledobjects")
HPAS = ResourceKey("autoscaling", "v2", "horizontalpodautoscalers")
PODS = ResourceKey("", "v1", "pods")
LEASES = ResourceKey("coordination.k8s.io", "v1", "leases")
API_SERVICES = ResourceKey("apiregistration.k8s.io", "v1", "apiservices")
EXTERNAL_METRICS = "v1beta1.external.metrics.k8s.io"  # KEDA's adapter's APIService
CLUSTER = {
    "addons": ["monitoring", "keda"],
    "images": {INGRESS_IMAGE: [sys.executable, str(COUNTER)]},
    "control_plane": Settings(controller_qps=TEST_CONTROLLER_QPS, hpa_sync_seconds=1),
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


def scale_writes(operator: OperatorProcess, username: str = KEDA_SA) -> list[str]:
    return [
        e.at
        for e in operator.cluster.audit()
        if e.username == username
        and e.resource == "nemotrondeployments/scale"
        and e.verb in ("update", "patch")
        and e.code == 200
    ]


def adapter_available(operator: OperatorProcess) -> bool:
    """kube-apiserver's aggregation layer reaches KEDA's adapter (the APIService's Available
    condition, which kube-apiserver sets after a discovery request through the Service)."""
    service = operator.cluster.get(API_SERVICES, None, EXTERNAL_METRICS) or {}
    conditions = (service.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Available" and c["status"] == "True" for c in conditions)


def hpa_reading(operator: OperatorProcess) -> dict[str, Any]:
    """KEDA's HPA once its last sync read its metric (ScalingActive True), else {}."""
    hpa = operator.cluster.get(HPAS, NAMESPACE, f"keda-hpa-{NAME}") or {}
    status = hpa.get("status") or {}
    active = {c["type"]: c["status"] for c in status.get("conditions") or []}
    return hpa if status.get("currentMetrics") and active.get("ScalingActive") == "True" else {}


def external_metric(operator: OperatorProcess) -> list[dict[str, Any]]:
    """The trigger's metric from external.metrics.k8s.io (KEDA's adapter), as the HPA asks."""
    path = f"/apis/external.metrics.k8s.io/v1beta1/namespaces/{NAMESPACE}/s0-prometheus"
    selector = {"labelSelector": f"scaledobject.keda.sh/name={NAME}"}
    try:
        return list(operator.cluster.request("GET", path, params=selector)["items"])
    except ApiError as error:
        # 503: kube-apiserver holds the APIService unavailable for now (on a loaded machine
        # its periodic check can time out against the adapter and mark it so until the next)
        if error.status != 503:
            raise
        return []


def requests_at(pod_ip: str, count: int) -> None:
    for _ in range(count):
        with urllib.request.urlopen(f"http://{pod_ip}:8080/", timeout=5) as answer:
            assert answer.status == 200


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
    autoscaling["scaleUpStabilizationSeconds"] = 0
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
    to_zero = scale_writes(operator)
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
    writes = len(scale_writes(operator))
    burst = time.monotonic()
    pod_ip = (cluster.get(PODS, NAMESPACE, "ingress-counter") or {})["status"]["podIP"]
    requests_at(pod_ip, 30)
    cluster.wait_until(lambda: spec_replicas(operator) == 1, seconds=90, what="KEDA wakes it to 1")
    print(f"KEDA woke it {time.monotonic() - burst:.1f} s after the burst began")
    assert len(scale_writes(operator)) > writes
    cluster.wait_until(
        lambda: status(cluster, NAME).get("phase") == "Ready", seconds=90, what="Ready at 1"
    )
    assert keda_conditions(operator)["Active"] == "True"
    active = autoscaling_reason(operator, "KEDAActive")
    assert "KEDA" in active["message"]

    # 1 → N: 600 more requests put the query (a rate over 2 minutes) near 5 per second, over
    # twice the threshold of 2 per replica. The HPA KEDA created reads it as the external metric
    # of the ScaledObject, through the adapter; kube-controller-manager's HPA controller raises
    # spec.replicas through the scale subresource (KEDA's own step stops at 1).
    assert spec_replicas(operator) == 1
    assert not scale_writes(operator, HPA_SA), "the HPA scaled before the burst"
    # Usually long since true; on a loaded machine kube-apiserver's availability check of a new
    # APIService backs off (up to 30 s between checks) while the adapter starts.
    cluster.wait_until(lambda: adapter_available(operator), seconds=120, what="KEDA's adapter")
    burst = time.monotonic()
    requests_at(pod_ip, 600)
    cluster.wait_until(lambda: spec_replicas(operator) >= 2, seconds=120, what="the HPA scales up")
    print(f"the HPA scaled it to {spec_replicas(operator)} {time.monotonic() - burst:.1f} s after")
    assert scale_writes(operator, HPA_SA), "spec.replicas above 1 was not written by the HPA"
    assert spec_replicas(operator) <= autoscaling["maxReplicas"]
    # The HPA's last sync read the metric (a sync whose read fails, a gRPC timeout on a loaded
    # machine, leaves no currentMetrics and ScalingActive False until the next, a second later).
    hpa = cluster.wait_until(lambda: hpa_reading(operator), seconds=30, what="the HPA's reading")
    (metric,) = hpa["status"]["currentMetrics"]
    assert metric["type"] == "External"
    # KEDA names a trigger's metric s<index>-<scaler> (pkg/scalers/scaler.go), not after the
    # trigger's name; the adapter finds the ScaledObject by the selector KEDA puts on its HPA.
    assert metric["external"]["metric"]["name"] == "s0-prometheus"
    scaled = cluster.get(SCALED_OBJECTS, NAMESPACE, NAME) or {}
    assert scaled["status"]["externalMetricNames"] == ["s0-prometheus"]
    assert metric["external"]["metric"]["selector"] == {
        "matchLabels": {"scaledobject.keda.sh/name": NAME}
    }
    assert parse_quantity(metric["external"]["current"]["averageValue"]) > 0
    assert int(hpa["status"]["desiredReplicas"]) >= 2
    active = {c["type"]: c for c in hpa["status"]["conditions"]}["ScalingActive"]
    assert active["reason"] == "ValidMetricFound"
    # The same metric as anyone reads it through kube-apiserver: the aggregation layer proxies
    # to the adapter, which asks KEDA's operator (gRPC), which runs the query in Prometheus.
    (value,) = cluster.wait_until(lambda: external_metric(operator), seconds=60, what="the metric")
    threshold = float(autoscaling["keda"]["prometheus"]["threshold"])
    assert parse_quantity(value["value"]) > threshold * 1.1, value  # beyond the HPA's tolerance
