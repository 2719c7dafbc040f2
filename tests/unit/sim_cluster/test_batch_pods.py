"""The stand-in kubelet's run-to-completion pods (nemotron_sim/kubelet/batch_pods.py): a Job's
download writes the completion marker through the mounts, or fails for a revision the stand-in
Hub does not have, with hf's error as the message."""

from __future__ import annotations

from pathlib import Path

from nemotron_sim.kubelet.batch_pods import runs_to_completion, stand_in_download
from nemotron_sim.kubelet.stand_in_volumes import COMPLETE_MARKER

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
