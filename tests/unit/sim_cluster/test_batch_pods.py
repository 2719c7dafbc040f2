"""The stand-in kubelet's run-to-completion pods (nemotron_sim/kubelet/batch_pods.py): a Job's
download writes the completion marker through the mounts, or fails for a revision the stand-in
Hub does not have, with hf's error as the message."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from nemotron_sim.kubelet.batch_pods import (
    run_init_download,
    runs_to_completion,
    stand_in_download,
    weights_present,
)
from nemotron_sim.kubelet.stand_in_volumes import COMPLETE_MARKER, stand_in_volumes

MODEL = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"


def test_a_download_writes_the_marker_the_script_checks(tmp_path: Path) -> None:
    env = {"MODEL_ID": MODEL, "MODEL_REVISION": "main", "MODEL_DIR": f"/models/{MODEL}"}
    assert stand_in_download(env, {"/models": str(tmp_path)}) == (0, "")
    marker = tmp_path / MODEL / COMPLETE_MARKER
    assert marker.read_text(encoding="utf-8") == f"{MODEL}@main\n"


def test_a_missing_revision_fails_with_hfs_error(tmp_path: Path) -> None:
    env = {"MODEL_ID": MODEL, "MODEL_REVISION": "missing-x", "MODEL_DIR": f"/models/{MODEL}"}
    code, message = stand_in_download(env, {"/models": str(tmp_path)})
    assert code == 1
    assert "RevisionNotFoundError" in message
    assert "missing-x" in message
    assert not (tmp_path / MODEL).exists()


def test_only_pods_that_do_not_restart_run_to_completion() -> None:
    assert runs_to_completion({"spec": {"restartPolicy": "Never"}})
    assert runs_to_completion({"spec": {"restartPolicy": "OnFailure"}})
    assert not runs_to_completion({"spec": {"restartPolicy": "Always"}})
    assert not runs_to_completion({"spec": {}})


def test_a_host_path_is_the_nodes_own_directory(tmp_path: Path) -> None:
    pod = {
        "metadata": {"name": "p", "namespace": "ai", "uid": "u"},
        "spec": {
            "nodeName": "gpu-0",
            "volumes": [{"name": "weights", "hostPath": {"path": "/var/lib/m"}}],
        },
    }
    volumes = stand_in_volumes(pod, tmp_path / "pods", tmp_path / "claims", tmp_path / "nodes")
    assert volumes.volumes["weights"] == tmp_path / "nodes" / "gpu-0" / "var/lib/m"


def test_the_init_download_is_skipped_once_the_marker_is_there(tmp_path: Path) -> None:
    env = {"MODEL_ID": MODEL, "MODEL_REVISION": "main", "MODEL_DIR": f"/models/{MODEL}"}
    mounts = {"/models": str(tmp_path)}
    assert not weights_present(env, mounts)
    started = time.monotonic()
    asyncio.run(run_init_download(env, mounts, init_seconds=0.0, download=0.3))
    assert time.monotonic() - started >= 0.3
    assert weights_present(env, mounts)
    started = time.monotonic()
    asyncio.run(run_init_download(env, mounts, init_seconds=0.0, download=5.0))
    assert time.monotonic() - started < 1.0  # the second start on this cache skips it
    assert weights_present({**env, "MODEL_ID": ""}, mounts)  # no base weights to fetch
    assert not weights_present({**env, "MODEL_REVISION": "v2"}, mounts)  # a new revision
