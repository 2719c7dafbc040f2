"""The entry points on the real control plane: ``python -m sim_cluster`` and the demo."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.kubectl import kubectl_binary

ROOT = Path(__file__).resolve().parents[3]


def test_the_command_serves_until_sigterm(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    process = subprocess.Popen(
        [sys.executable, "-m", "sim_cluster", "--nodes", "NVIDIA-B200:8x1",
         "--kubeconfig", str(kubeconfig)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        lines = []
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            lines.append(line)
            if "SIMULATED cluster ready" in line or not line:
                break
        text = "".join(lines)
        assert "SIMULATED cluster ready" in text, text
        assert "real:      etcd, kube-apiserver, kube-controller-manager, kube-scheduler" in text
        assert re.search(r"API server: https://10\.0\.\d+\.1:6443", text), text
        assert Path(f"{kubeconfig}.pid").read_text().strip() == str(process.pid)
        env = {**os.environ, "KUBECONFIG": str(kubeconfig), "KUBECACHEDIR": str(tmp_path / "c")}
        names = subprocess.run(
            [kubectl_binary(), "get", "nodes", "-o", "name"],
            capture_output=True, text=True, env=env, timeout=30, check=True,
        ).stdout  # fmt: skip
        assert names.split() == ["node/sim-b200-0"]
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
        assert not Path(f"{kubeconfig}.pid").exists()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()


@pytest.mark.parametrize(
    ("nodes", "message"),
    [
        ("NVIDIA-X999:8x1", "unknown GPU product 'NVIDIA-X999'"),
        ("NVIDIA-H200:8", "bad node group 'NVIDIA-H200:8': expected PRODUCT:GPUSxNODES"),
    ],
)
def test_the_command_refuses_bad_nodes_before_starting(
    tmp_path: Path, nodes: str, message: str
) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "sim_cluster", "--nodes", nodes,
         "--kubeconfig", str(tmp_path / "kubeconfig")],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert result.returncode == 2
    assert message in result.stderr


def test_the_command_says_how_to_get_the_binaries(tmp_path: Path) -> None:
    env = {**os.environ, "CONTROLPLANE_BIN_DIR": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-m", "sim_cluster", "--kubeconfig", str(tmp_path / "kubeconfig")],
        capture_output=True, text=True, timeout=30, check=False, env=env,
    )  # fmt: skip
    assert result.returncode == 2
    assert f"no etcd, kube-apiserver, kube-controller-manager, kube-scheduler in {tmp_path}" in (
        result.stderr
    )


@pytest.mark.slow
def test_the_demo_runs_end_to_end() -> None:
    env = {**os.environ, "DEMO_LOAD_SECONDS": "0.5", "DEMO_TIMEOUT": "90"}
    result = subprocess.run(
        [str(ROOT / "hack" / "demo.sh")],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "a REAL control plane, SIMULATED GPU nodes" in out
    # The user's path: the chart installs the operator, which runs as a pod of the cluster.
    assert "$ helm install nemotron-operator charts/nemotron-operator" in out
    assert "STATUS: deployed" in out
    assert re.search(r"pod/nemotron-operator-\S+ +1/1 +Running .* sim-system-0", out), out
    assert "nemotrondeployment.serving.nemotron.io/nano created" in out
    assert "plan: 1x NVIDIA-B200 per replica" in out
    assert "1/1   Ready" in out
    assert "Ready              True     AllReplicasReady" in out
    assert "status.endpoint = http://nano.ai.svc:8000/v1" in out
    assert re.search(r"nano\.ai\.svc -> ClusterIP 10\.\d+\.\d+\.\d+", out), out
    assert "content:" in out
    # The demo's 40 tokens, and those of the behavioural check before the pod took traffic.
    generated = re.search(
        r'vllm:generation_tokens_total\{engine="0",model_name="nano"\} (\S+)', out
    )
    assert generated is not None, out
    assert float(generated.group(1)) >= 40.0
    assert "PlanAccurate=True" in out
    assert re.search(r"Done in \d+ s: stopping the cluster", out), out
