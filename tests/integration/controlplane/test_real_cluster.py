"""The simulated cluster on the real control plane: what Kubernetes' own components do with the
simulated nodes, kubelets and service proxy (the issue's list: scheduling by nvidia.com/gpu, a
lost node, garbage collection, kubectl logs, a ClusterIP to a stand-in vLLM)."""

from __future__ import annotations

import ipaddress
import json
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sim_cluster.controlplane.flags import Settings
from tests.kube import TEST_CONTROLLER_QPS, KubeHandle, start_cluster

OPERATOR_IMAGE = "ghcr.io/nemotron-operator/nemotron-operator:test"  # runs as a local process
GPU_TOLERATION = "[{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]"


def gpu_pod(name: str, namespace: str, gpus: int) -> str:
    return f"""
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: {namespace}}}
spec:
  tolerations: {GPU_TOLERATION}
  containers:
  - name: vllm
    image: vllm/vllm-openai:v0.31.0
    command: [vllm, serve, nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16, --port, "8000"]
    resources: {{limits: {{nvidia.com/gpu: {gpus}}}}}
"""


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    found = [c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == kind]
    return found[0] if found else {}


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeHandle]:
    """A cluster of this module's own: one 8-GPU node, so GPU counts are exact, a node without
    GPUs (with every node of a zone lost, kube-controller-manager assumes a control-plane
    partition and taints nothing NoExecute), and a short node-monitor grace period, so a lost
    node shows within seconds."""
    settings = Settings(
        node_monitor_grace_seconds=10, node_monitor_period_seconds=1,
        controller_qps=TEST_CONTROLLER_QPS,
    )  # fmt: skip
    with start_cluster(
        tmp_path_factory.mktemp("small"), nodes="NVIDIA-H200:8x1", system_nodes=1,
        control_plane=settings, renew_seconds=1.0,
    ) as handle:  # fmt: skip
        yield handle


def test_the_scheduler_binds_by_free_gpus_and_says_why_not(small: KubeHandle) -> None:
    with small.namespace("sched") as ns:
        small.kubectl("apply", "-f", "-", input=gpu_pod("first", ns, 4))
        small.wait_until(
            lambda: small.kubectl_json("get", "pod", "first", "-n", ns)["spec"].get("nodeName"),
            what="the first pod to be bound",
        )
        # 4 of the node's 8 GPUs are taken: a pod asking for 4 fits, one asking for 9 never.
        small.kubectl("apply", "-f", "-", input=gpu_pod("four", ns, 4))
        small.kubectl("apply", "-f", "-", input=gpu_pod("nine", ns, 9))
        four = small.wait_until(
            lambda: (
                (p := small.kubectl_json("get", "pod", "four", "-n", ns))["spec"].get("nodeName")
                and p
            ),
            what="the 4-GPU pod to be bound",
        )
        assert four["spec"]["nodeName"] == "sim-h200-0"
        nine = small.wait_until(
            lambda: (
                (p := small.kubectl_json("get", "pod", "nine", "-n", ns))
                and condition(p, "PodScheduled").get("reason") == "Unschedulable"
                and p
            ),
            what="the 9-GPU pod to be refused",
        )
        scheduled = condition(nine, "PodScheduled")
        assert scheduled["status"] == "False"
        assert scheduled["message"].startswith(
            "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."
        )
        assert "nodeName" not in nine["spec"]
        events = small.kubectl_json(
            "get", "events", "-n", ns, "--field-selector", "involvedObject.name=nine"
        )["items"]
        assert any(e["reason"] == "FailedScheduling" for e in events), events
        node = small.kubectl_json("get", "node", "sim-h200-0")
        assert node["status"]["allocatable"]["nvidia.com/gpu"] == "8"


def unreachable_taints(node: dict[str, Any]) -> set[str]:
    taints = node["spec"].get("taints", [])
    return {t["effect"] for t in taints if t["key"] == "node.kubernetes.io/unreachable"}


def test_a_node_whose_lease_stops_goes_not_ready_and_is_tainted(small: KubeHandle) -> None:
    name = "sim-h200-0"

    def node() -> dict[str, Any]:
        found: dict[str, Any] = small.kubectl_json("get", "node", name)
        return found

    def lost() -> bool:
        current = node()
        return condition(current, "Ready").get("status") == "Unknown" and unreachable_taints(
            current
        ) == {"NoSchedule", "NoExecute"}

    def back() -> bool:
        current = node()
        return condition(current, "Ready").get("status") == "True" and not unreachable_taints(
            current
        )

    small.call(lambda c: c.nodes.stop_heartbeat(name) if c.nodes else None)
    try:
        small.wait_until(lost, seconds=60, what="the node lifecycle controller to mark the node")
        assert condition(node(), "Ready")["reason"] == "NodeStatusUnknown"
        assert "NotReady" in small.kubectl("get", "node", name).stdout
    finally:
        small.call(lambda c: c.nodes.resume_heartbeat(name) if c.nodes else None)
    small.wait_until(back, seconds=60, what="the node to be Ready and untainted again")
    assert {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"} in node()["spec"][
        "taints"
    ]


STATEFULSET = """
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web, namespace: %(ns)s}
spec:
  replicas: 2
  serviceName: web
  podManagementPolicy: Parallel
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      tolerations: %(tolerations)s
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.31.0
        command: [vllm, serve, nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16, --port, "8000"]
        resources: {limits: {nvidia.com/gpu: 1}}
"""


def test_the_garbage_collector_removes_a_deleted_statefulsets_pods(
    kube_cluster: KubeHandle, kube_namespace: str
) -> None:
    ns = kube_namespace
    kube_cluster.kubectl(
        "apply", "-f", "-", input=STATEFULSET % {"ns": ns, "tolerations": GPU_TOLERATION}
    )
    kube_cluster.wait_until(
        lambda: (
            len(kube_cluster.kubectl_json("get", "pods", "-n", ns, "-l", "app=web")["items"]) == 2
        ),
        what="the StatefulSet controller to create both pods",
    )
    pods = kube_cluster.kubectl_json("get", "pods", "-n", ns, "-l", "app=web")["items"]
    assert {p["metadata"]["ownerReferences"][0]["kind"] for p in pods} == {"StatefulSet"}
    kube_cluster.kubectl("delete", "statefulset", "web", "-n", ns, "--cascade=background")
    kube_cluster.wait_until(
        lambda: not kube_cluster.kubectl_json("get", "pods", "-n", ns)["items"],
        what="the garbage collector to delete the pods",
    )


LOGGER = """
apiVersion: v1
kind: Pod
metadata: {name: logger, namespace: %(ns)s}
spec:
  containers:
  - name: main
    image: %(image)s
    command:
    - python
    - -c
    - "import sys, os; print('run', os.environ['HOSTNAME'], flush=True); sys.exit(3)"
"""


def test_kubectl_logs_of_a_process_pod_through_the_kubelet_api(
    kube_cluster: KubeHandle, kube_namespace: str
) -> None:
    ns = kube_namespace
    kube_cluster.kubectl("apply", "-f", "-", input=LOGGER % {"ns": ns, "image": OPERATOR_IMAGE})

    def restarted() -> bool:
        pod = kube_cluster.kubectl_json("get", "pod", "logger", "-n", ns)
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        return bool(statuses) and statuses[0].get("restartCount", 0) >= 1

    kube_cluster.wait_until(restarted, seconds=60, what="the container to exit and restart")

    def backing_off() -> dict[str, Any]:
        pod = kube_cluster.kubectl_json("get", "pod", "logger", "-n", ns)
        waiting: dict[str, Any] = pod["status"]["containerStatuses"][0]["state"].get("waiting", {})
        return waiting if waiting.get("reason") == "CrashLoopBackOff" else {}

    waiting = kube_cluster.wait_until(backing_off, seconds=60, what="CrashLoopBackOff")
    assert waiting["message"].startswith("back-off ")
    assert "restarting failed container=main pod=logger_" in waiting["message"]
    previous = kube_cluster.kubectl("logs", "logger", "-n", ns, "--previous").stdout
    assert previous == "run logger\n"
    pod = kube_cluster.kubectl_json("get", "pod", "logger", "-n", ns)
    terminated = pod["status"]["containerStatuses"][0]["lastState"]["terminated"]
    assert terminated["exitCode"] == 3
    missing = kube_cluster.kubectl("logs", "logger", "-n", ns, "-c", "nope", check=False)
    assert missing.returncode != 0
    assert "container nope is not valid for pod logger" in missing.stderr


SERVED = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: nano, namespace: %(ns)s}
spec:
  replicas: 1
  selector: {matchLabels: {app: nano}}
  template:
    metadata: {labels: {app: nano}}
    spec:
      tolerations: %(tolerations)s
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.31.0
        command: [vllm, serve, nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16, --served-model-name,
                  nano, --port, "8000"]
        ports: [{name: http, containerPort: 8000}]
        readinessProbe: {httpGet: {path: /health, port: http}}
        resources: {limits: {nvidia.com/gpu: 1}}
---
apiVersion: v1
kind: Service
metadata: {name: nano, namespace: %(ns)s}
spec:
  selector: {app: nano}
  ports: [{name: http, port: 80, targetPort: http}]
"""


def test_a_cluster_ip_reaches_a_stand_in_vllm_through_its_endpoint_slice(
    kube_cluster: KubeHandle, kube_namespace: str
) -> None:
    ns = kube_namespace
    kube_cluster.kubectl(
        "apply", "-f", "-", input=SERVED % {"ns": ns, "tolerations": GPU_TOLERATION}
    )
    kube_cluster.kubectl(
        "rollout", "status", "deployment/nano", "-n", ns, "--timeout=60s", timeout=70
    )
    pod = kube_cluster.kubectl_json("get", "pods", "-n", ns, "-l", "app=nano")["items"][0]
    pod_ip = pod["status"]["podIP"]
    cidr = kube_cluster.kubectl_json("get", "node", pod["spec"]["nodeName"])["spec"]["podCIDR"]
    assert ipaddress.ip_address(pod_ip) in ipaddress.ip_network(cidr)

    def ready_endpoints() -> list[str]:
        slices = kube_cluster.kubectl_json(
            "get", "endpointslices", "-n", ns, "-l", "kubernetes.io/service-name=nano"
        )["items"]
        return [
            address
            for s in slices
            for e in s.get("endpoints") or []
            if (e.get("conditions") or {}).get("ready")
            for address in e["addresses"]
        ]

    found = kube_cluster.wait_until(ready_endpoints, what="kube-controller-manager's EndpointSlice")
    assert found == [pod_ip]
    cluster_ip = kube_cluster.kubectl_json("get", "service", "nano", "-n", ns)["spec"]["clusterIP"]

    def models() -> list[str]:
        # The proxy follows the slice through its own watch, a moment later (as kube-proxy).
        try:
            with urllib.request.urlopen(f"http://{cluster_ip}/v1/models", timeout=10) as response:
                return [m["id"] for m in json.load(response)["data"]]
        except (urllib.error.URLError, ConnectionError):
            return []

    assert kube_cluster.wait_until(models, seconds=10, what="the ClusterIP to answer") == ["nano"]


def test_the_kubernetes_service_reaches_the_api_server(kube_cluster: KubeHandle) -> None:
    """What an in-cluster client (the operator's pod) uses: the default/kubernetes ClusterIP,
    the API server's certificate naming it."""
    service = kube_cluster.kubectl_json("get", "service", "kubernetes", "-n", "default")
    ip = service["spec"]["clusterIP"]
    context = ssl.create_default_context(
        cadata=kube_cluster.call(lambda c: c.control_plane.ca_pem.decode())
    )
    with urllib.request.urlopen(f"https://{ip}/version", context=context, timeout=10) as response:
        assert json.load(response)["gitVersion"] == "v1.37.2"


def test_the_cluster_uses_private_addresses_as_a_real_one_does(kube_cluster: KubeHandle) -> None:
    """The API server advertises a 10.x address (not loopback, which EndpointSlice validation
    refuses), nodes have 10.x InternalIPs, and pods addresses from their node's pod CIDR (on
    the first cluster in a namespace, 10.244.x.y)."""
    endpoints = kube_cluster.kubectl_json("get", "endpointslices", "-n", "default", "-l",
                                          "kubernetes.io/service-name=kubernetes")  # fmt: skip
    address = endpoints["items"][0]["endpoints"][0]["addresses"][0]
    assert address.startswith("10.0.")
    nodes = kube_cluster.kubectl_json("get", "nodes")["items"]
    internal = [
        a["address"] for n in nodes for a in n["status"]["addresses"] if a["type"] == "InternalIP"
    ]
    assert internal
    assert all(ip.startswith("10.1.") for ip in internal)
    cluster_cidr = kube_cluster.call(lambda c: c.control_plane.plan.cluster_cidr)
    for node in nodes:  # a /24 of the cluster CIDR each, from kube-controller-manager
        cidr = ipaddress.ip_network(node["spec"]["podCIDR"])
        assert cidr.prefixlen == 24
        assert cidr.subnet_of(ipaddress.ip_network(cluster_cidr))


TERMINATING = """
apiVersion: v1
kind: Pod
metadata: {name: %(name)s, namespace: %(ns)s}
spec:
  terminationGracePeriodSeconds: %(grace)d
  containers:
  - name: main
    image: %(image)s
    env: [{name: MARKER, value: "%(marker)s"}]
    command:
    - python
    - -c
    - |
      import os, signal, sys, time
      def stop(*_):
          open(os.environ["MARKER"], "w").write("SIGTERM")
          sys.exit(0)
      signal.signal(signal.SIGTERM, stop if %(handles)s else signal.SIG_IGN)
      print("started", flush=True)
      time.sleep(600)
"""


@pytest.mark.parametrize(
    ("handles", "grace"), [(True, 30), (False, 2)], ids=["exits-on-sigterm", "killed-after-grace"]
)
def test_a_deleted_pod_is_stopped_gracefully_then_removed(
    kube_cluster: KubeHandle, kube_namespace: str, tmp_path: Path, handles: bool, grace: int
) -> None:
    """kube-apiserver only marks a pod bound to a node; the kubelet sends SIGTERM, SIGKILL after
    the grace period, and then deletes it for good."""
    ns, marker = kube_namespace, tmp_path / "marker"
    values = {"name": "stopper", "ns": ns, "image": OPERATOR_IMAGE, "marker": marker,
              "handles": handles, "grace": grace}  # fmt: skip
    kube_cluster.kubectl("apply", "-f", "-", input=TERMINATING % values)
    kube_cluster.wait_until(
        lambda: (
            kube_cluster.kubectl("logs", "stopper", "-n", ns, check=False).stdout == "started\n"
        ),
        what="the process to start",
    )
    began = time.monotonic()
    kube_cluster.kubectl("delete", "pod", "stopper", "-n", ns, "--wait=false")
    if not handles:  # (a pod that exits on SIGTERM may be gone already)
        marked = kube_cluster.kubectl_json("get", "pod", "stopper", "-n", ns)
        assert marked["metadata"]["deletionGracePeriodSeconds"] == grace
        assert marked["metadata"]["deletionTimestamp"]
    kube_cluster.wait_until(
        lambda: "NotFound" in kube_cluster.kubectl("get", "pod", "stopper", "-n", ns,
                                                   check=False).stderr,
        seconds=grace + 20,
        what="the kubelet to delete the pod",
    )  # fmt: skip
    took = time.monotonic() - began
    if handles:
        assert marker.read_text() == "SIGTERM"
        assert took < grace / 2  # removed when the process exited, not when the grace ran out
    else:
        assert not marker.exists()
        assert took >= grace - 0.5  # SIGTERM ignored: SIGKILL once the grace period was over
