from __future__ import annotations

from typing import Any

from nemotron_sim.controllers.kubelet import is_vllm_serve, resolve_port
from nemotron_sim.controllers.pdb import pdb_status
from nemotron_sim.controllers.service_controller import build_endpoints


def pod(name: str, ip: str, ready: bool) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ai", "uid": name},
        "spec": {
            "nodeName": "n",
            "hostname": name,
            "containers": [{"name": "vllm", "ports": [{"name": "http", "containerPort": 8000}]}],
        },
        "status": {
            "phase": "Running",
            "podIP": ip,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def test_endpoints_split_ready_and_not_ready_and_resolve_named_ports() -> None:
    service = {
        "metadata": {"name": "nano", "namespace": "ai"},
        "spec": {"ports": [{"name": "openai", "port": 80, "targetPort": "http"}]},
    }
    endpoints = build_endpoints(
        service, [pod("a", "127.1.0.1", True), pod("b", "127.1.0.2", False)]
    )
    (subset,) = endpoints["subsets"]
    assert subset["ports"] == [{"name": "openai", "port": 8000, "protocol": "TCP"}]
    assert [a["ip"] for a in subset["addresses"]] == ["127.1.0.1"]
    assert [a["ip"] for a in subset["notReadyAddresses"]] == ["127.1.0.2"]


def test_pods_without_an_ip_are_left_out() -> None:
    service = {"metadata": {"name": "s", "namespace": "ai"}, "spec": {"ports": [{"port": 80}]}}
    waiting = pod("a", "", False)
    assert "subsets" not in build_endpoints(service, [waiting])


def test_pdb_status_counts_healthy_pods_against_min_available() -> None:
    pods = [pod("a", "1", True), pod("b", "2", True), pod("c", "3", False)]
    status = pdb_status({"metadata": {"generation": 2}, "spec": {"minAvailable": 1}}, pods, "t")
    assert (status["expectedPods"], status["currentHealthy"], status["desiredHealthy"]) == (3, 2, 1)
    assert status["disruptionsAllowed"] == 1
    assert status["conditions"][0]["reason"] == "SufficientPods"
    percent = pdb_status({"metadata": {}, "spec": {"maxUnavailable": "50%"}}, pods, "t")
    assert percent["desiredHealthy"] == 1  # 3 - ceil(1.5)
    blocked = pdb_status({"metadata": {}, "spec": {"minAvailable": "100%"}}, pods, "t")
    assert blocked["disruptionsAllowed"] == 0
    assert blocked["conditions"][0]["status"] == "False"


def test_vllm_serve_is_recognised_directly_by_path_and_through_a_shell() -> None:
    assert is_vllm_serve(["vllm", "serve", "m"])
    assert is_vllm_serve(["/usr/local/bin/vllm", "serve", "m"])
    assert is_vllm_serve(["sh", "-c", "exec vllm serve m --port 8000"])
    assert not is_vllm_serve(["hf", "download", "m"])
    assert not is_vllm_serve(["sh", "-c", "echo 'unbalanced"])


def test_named_and_numeric_probe_ports() -> None:
    container = {"ports": [{"name": "http", "containerPort": 8000}]}
    assert resolve_port("http", container) == 8000
    assert resolve_port(9000, container) == 9000
    assert resolve_port("8080", container) == 8080
    assert resolve_port("metrics", container) is None


def test_pdb_expects_the_controllers_scale_for_max_unavailable() -> None:
    one_left = [pod("a", "1", True)]
    budget = {"metadata": {}, "spec": {"maxUnavailable": 1}}
    status = pdb_status(budget, one_left, "t", scale=2)
    assert (status["expectedPods"], status["desiredHealthy"], status["disruptionsAllowed"]) == (
        2,
        1,
        0,
    )
    by_count = pdb_status({"metadata": {}, "spec": {"minAvailable": 1}}, one_left, "t", scale=2)
    assert by_count["expectedPods"] == 1
