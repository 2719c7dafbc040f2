"""The simulated kubelet's reading of container commands and probe ports."""

from __future__ import annotations

from nemotron_sim.kubelet.probes import resolve_port
from nemotron_sim.kubelet.stand_ins import is_vllm_serve


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
