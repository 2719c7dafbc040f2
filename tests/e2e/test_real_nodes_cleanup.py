"""Real nodes give the test session's network namespace back as they found it.

A real node's pod CIDR is thrown out of the namespace's local table (its pods live behind a
bridge) and the node's IP is put on ``lo``. A later cluster with the same index has the same pod
CIDR and the simulated kubelet binds its pods' addresses there: if the throw route outlived the
real node, every later pod was unreachable and its deployment never Ready (CI's run of
2026-12-06: 42 integration tests after the e2e tier timed out waiting for Ready).
"""

from __future__ import annotations

import ipaddress
import socket
import subprocess
from pathlib import Path

import pytest

from nemotron_operator import __version__
from tests.e2e.conftest import REAL_NODES
from tests.kube import start_cluster

pytestmark = pytest.mark.skipif(
    not REAL_NODES, reason="real nodes need root (hack/test.sh as root sets NEMOTRON_REAL_NODES=1)"
)


def _pod(node: str) -> str:
    """A pod on the real node (its sandbox makes the node's bridge), from the operator's image."""
    return f"""
apiVersion: v1
kind: Pod
metadata: {{name: sleeper, namespace: default}}
spec:
  nodeName: {node}
  terminationGracePeriodSeconds: 1
  containers:
  - name: sleeper
    image: ghcr.io/nemotron-operator/nemotron-operator:{__version__}
    imagePullPolicy: Never
    command: [sleep, "600"]
"""


def _local_table() -> str:
    return subprocess.run(
        ["ip", "route", "show", "table", "local"], capture_output=True, text=True, check=True
    ).stdout


def _links() -> list[str]:
    return [name for _, name in socket.if_nameindex()]


def _bindable(address: str) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind((address, 0))
        except OSError:
            return False
    return True


def test_a_stopped_real_node_cluster_leaves_its_pod_cidrs_local_and_no_bridge(
    tmp_path: Path,
) -> None:
    links_before = _links()
    with start_cluster(tmp_path, nodes="NVIDIA-H200:8x1", system_nodes=1, real_nodes=2) as handle:
        nodes = handle.kubectl_json("get", "nodes")["items"]
        cidrs = [node["spec"]["podCIDR"] for node in nodes]
        assert len(cidrs) == 2
        handle.kubectl("apply", "-f", "-", input=_pod(nodes[0]["metadata"]["name"]))
        handle.wait_until(
            lambda: handle.kubectl_json("get", "pod", "sleeper")["status"].get("podIP"),
            seconds=60, what="the pod's address on the real node",
        )  # fmt: skip
        while_running = _local_table()
        for cidr in cidrs:  # the real nodes did change the namespace: the check below can fail
            assert f"throw {cidr}" in while_running
        assert set(_links()) - set(links_before)  # the pod's bridge and its end of the veth
    after = _local_table()  # another cluster's real nodes may be running: only its own CIDRs
    for cidr in cidrs:
        assert f"throw {cidr}" not in after, after
    assert not set(_links()) - set(links_before)  # (the session's other clusters may drop some)
    for cidr in cidrs:
        pod_address = str(next(ipaddress.ip_network(cidr).hosts()) + 5)
        assert _bindable(pod_address), f"{pod_address} of {cidr} is not local any more"
