"""The real nodes' files (sim_cluster.realnodes.config) and where their binaries are."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from nemotron_sim.agents.node_objects import (
    GPU_TAINT,
    NodeGroup,
    build_node,
    build_system_node,
    gpu_facts,
)
from sim_cluster.realnodes import bin_dir, unavailable
from sim_cluster.realnodes.config import (
    RealNodeSpec,
    cni_conf,
    containerd_toml,
    fake_cpu_tree,
    fake_meminfo,
    kubelet_config,
    node_labels,
    socket_dir,
)

ROOT = Path(__file__).resolve().parents[3]
MEMINFO = "MemTotal:       24590000 kB\nMemFree:        20000000 kB\nMemAvailable:   22000000 kB\n"


def gpu_spec() -> RealNodeSpec:
    node = build_node(NodeGroup("NVIDIA-H200", 8, 1), 0, gpu_facts("NVIDIA-H200"), "10.1.0.7")
    return RealNodeSpec.from_node(node, 3)


def test_a_gpu_node_keeps_its_gfd_labels_taint_and_capacity() -> None:
    spec = gpu_spec()
    assert (spec.name, spec.ip, spec.gpus, spec.cpus, spec.memory_gib) == (
        "sim-h200-0", "10.1.0.7", 8, 224, 2048,
    )  # fmt: skip
    assert spec.taints == [GPU_TAINT]
    assert spec.labels["nvidia.com/gpu.product"] == "NVIDIA-H200"
    # the kubelet sets these itself; NodeRestriction refuses a kubelet setting hostname's
    assert "kubernetes.io/hostname" not in spec.labels
    assert "nvidia.com/gpu.product=NVIDIA-H200" in node_labels(spec).split(",")


def test_a_system_node_has_no_gpus_and_no_taint() -> None:
    spec = RealNodeSpec.from_node(build_system_node(0, "10.1.0.9"), 0)
    assert (spec.gpus, spec.taints, spec.cpus, spec.memory_gib) == (0, [], 16, 64)


def test_the_kubelet_serves_on_its_node_ip_and_tolerates_this_machine(tmp_path: Path) -> None:
    config = kubelet_config(gpu_spec(), tmp_path, tmp_path / "ca.crt", "/nemotron-sim/x")
    assert config["address"] == config["healthzBindAddress"] == "10.1.0.7"
    assert config["failCgroupV1"] is False  # kubelet 1.37 refuses cgroup v1 otherwise
    assert config["oomScoreAdj"] == 0  # no CAP_SYS_RESOURCE here
    assert (config["cgroupDriver"], config["cgroupRoot"]) == ("cgroupfs", "/nemotron-sim/x")
    assert config["authentication"]["anonymous"]["enabled"] is False
    assert config["authorization"]["mode"] == "Webhook"
    assert config["registerWithTaints"] == [GPU_TAINT]
    socket = socket_dir(tmp_path) / "containerd.sock"
    assert config["containerRuntimeEndpoint"] == f"unix://{socket}"
    # containerd refuses a socket path over 104 bytes; a test session's directory is longer.
    assert len(str(socket_dir(tmp_path / ("deep" * 40)) / "containerd.sock.ttrpc")) < 100


def test_containerd_restricts_oom_scores_and_uses_the_nodes_cni_dir(tmp_path: Path) -> None:
    text = containerd_toml(tmp_path)
    assert "restrict_oom_score_adj = true" in text
    assert f'conf_dir = "{tmp_path / "cni"}"' in text
    assert "SystemdCgroup = false" in text


def test_each_node_has_its_own_bridge_and_pod_cidr(tmp_path: Path) -> None:
    conf = cni_conf(gpu_spec(), "10.244.3.0/24", tmp_path)
    bridge = conf["plugins"][0]
    assert bridge["bridge"] == "nsim-0-7"  # from the node's IP: unique across clusters
    assert bridge["ipam"]["ranges"] == [[{"subnet": "10.244.3.0/24"}]]


def test_meminfo_shows_the_nodes_memory() -> None:
    faked = fake_meminfo(MEMINFO, 64)
    lines = dict(line.split(":") for line in faked.splitlines())
    total = 64 * 1024 * 1024
    assert lines["MemTotal"].split() == [str(total), "kB"]
    extra = total - 24590000
    assert lines["MemFree"].split()[0] == str(20000000 + extra)
    assert lines["MemAvailable"].split()[0] == str(22000000 + extra)


def test_the_cpu_tree_counts_the_nodes_cpus_without_a_topology(tmp_path: Path) -> None:
    fake_cpu_tree(tmp_path, 16)
    assert (tmp_path / "online").read_text() == "0-15\n"
    assert sorted(p.name for p in tmp_path.glob("cpu*")) == sorted(f"cpu{i}" for i in range(16))
    # no physical_package_id: cAdvisor reports no topology, so no cpuset names fake CPUs
    assert not list(tmp_path.rglob("physical_package_id"))


def test_the_build_script_and_the_simulator_agree_on_the_binaries_directory() -> None:
    printed = subprocess.run(
        ["bash", str(ROOT / "hack/build-nodes.sh"), "--print-dir"],
        capture_output=True, text=True, check=True, timeout=30,
    ).stdout.strip()  # fmt: skip
    assert Path(printed) == bin_dir()


def test_without_root_real_nodes_say_why_and_the_simulated_kubelet_stays(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert unavailable() == "real nodes need root (containerd, mounts, cgroups); run as root"


def test_a_missing_tool_names_the_command_that_installs_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(shutil, "which", lambda tool: None if tool == "containerd" else "/bin/x")
    note = unavailable()
    assert note is not None
    assert note.startswith("missing containerd")
    assert "hack/build-nodes.sh --install-packages" in note
