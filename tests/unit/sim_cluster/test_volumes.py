"""The sim-local provisioner's volumes: directories any pod can write, on any node kind."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

from sim_cluster.simulated_addons.volumes import PROVISIONER, make_volume_directory, volume_for


def claim(**annotations: str) -> dict[str, Any]:
    return {
        "metadata": {"name": "cache", "namespace": "ai", "uid": "u-1", "annotations": annotations},
        "spec": {"resources": {"requests": {"storage": "5Gi"}}},
    }


def test_a_claim_for_this_provisioner_gets_a_hostpath_volume_under_the_root(tmp_path: Path) -> None:
    volume = volume_for(
        claim(**{"volume.kubernetes.io/storage-provisioner": PROVISIONER}), tmp_path
    )
    assert volume is not None
    assert volume["metadata"]["name"] == "pvc-u-1"
    # "Directory": a real kubelet refuses to start the pod rather than let the runtime create a
    # root-owned 0755 directory a non-root pod cannot write.
    assert volume["spec"]["hostPath"] == {"path": str(tmp_path / "pvc-u-1"), "type": "Directory"}
    assert volume["spec"]["capacity"] == {"storage": "5Gi"}
    assert volume_for(claim(), tmp_path) is None  # another provisioner's claim


def test_volume_directories_are_writable_by_any_uid_and_reachable(tmp_path: Path) -> None:
    root = tmp_path / "work"
    root.mkdir(mode=0o700)  # a cluster's work directory is private (a TemporaryDirectory)
    path = root / "volumes" / "pvc-u-1"
    make_volume_directory(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o777
    for parent in (path.parent, root):
        assert parent.stat().st_mode & 0o111 == 0o111, parent  # others may traverse it
    make_volume_directory(path)  # a second call (the provisioner restarted) changes nothing
    assert stat.S_IMODE(path.stat().st_mode) == 0o777
