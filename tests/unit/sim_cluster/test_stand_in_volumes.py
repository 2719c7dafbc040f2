"""The stand-in pods' volumes and the stand-in download step's adapters: written where the
serving container's mounts say, read by the stand-in vLLM as vLLM reads an adapter directory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nemotron_sim.kubelet.stand_in_volumes import COMPLETE_MARKER, fetch_adapters, stand_in_volumes
from nemotron_sim.vllm.lora import MOUNTS_ENV, SIMULATED_RANK, LoraAdapters, LoraError

SQL_DIR = "/adapter-cache/fetched/example-org--sql/v1"


def pod(volumes: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "metadata": {"name": "nano-0", "namespace": "ai", "uid": "0123456789abcdef"},
        "spec": {"volumes": volumes},
    }


CACHE_ON_CLAIM = [{"name": "weights", "persistentVolumeClaim": {"claimName": "nano-weights"}}]
DOWNLOAD = {
    "name": "download",
    "volumeMounts": [
        {"name": "weights", "mountPath": "/models"},
        {"name": "weights", "mountPath": "/adapter-cache", "subPath": ".adapter-cache"},
    ],
}
SERVING = {
    "name": "vllm",
    "volumeMounts": [
        {"name": "weights", "mountPath": "/adapter-cache", "subPath": ".adapter-cache"},
        {"name": "config", "mountPath": "/etc/config"},  # a configMap: not materialized
    ],
}


def test_claims_and_empty_dirs_become_directories(tmp_path: Path) -> None:
    volumes = stand_in_volumes(
        pod(
            [
                *CACHE_ON_CLAIM,
                {"name": "scratch", "emptyDir": {}},
                {"name": "config", "configMap": {"name": "c"}},
            ]
        ),
        tmp_path / "pods",
        tmp_path / "claims",
    )
    assert volumes.volumes == {
        "weights": tmp_path / "claims" / "ai" / "nano-weights",
        "scratch": tmp_path / "pods" / "ai_nano-0_01234567" / "volumes" / "scratch",
    }
    assert volumes.mounts(SERVING) == {
        "/adapter-cache": str(tmp_path / "claims" / "ai" / "nano-weights" / ".adapter-cache")
    }


def test_the_download_step_leaves_an_adapter_the_serving_container_loads(tmp_path: Path) -> None:
    volumes = stand_in_volumes(pod(CACHE_ON_CLAIM), tmp_path / "pods", tmp_path / "claims")
    env = {"ADAPTERS": f"example-org/sql v1 {SQL_DIR}\n", "MODEL_ID": "nvidia/nano"}
    assert fetch_adapters(env, volumes.mounts(DOWNLOAD)) == [SQL_DIR]

    fetched = tmp_path / "claims/ai/nano-weights/.adapter-cache/fetched/example-org--sql/v1"
    config = json.loads((fetched / "adapter_config.json").read_text())
    assert config["r"] == SIMULATED_RANK
    assert config["peft_type"] == "LORA"
    assert "in_proj" in config["target_modules"]
    assert (fetched / COMPLETE_MARKER).read_text().strip() == "example-org/sql@v1"

    options = {"--enable-lora": True, "--max-lora-rank": 16}
    served = LoraAdapters(options, {MOUNTS_ENV: json.dumps(volumes.mounts(SERVING))})
    assert served.load("sql", SQL_DIR).rank == SIMULATED_RANK
    with pytest.raises(LoraError, match="No adapter found"):
        served.load("law", "/adapter-cache/fetched/example-org--law/main")  # never fetched


def test_a_complete_download_is_kept_and_another_revision_is_fetched(tmp_path: Path) -> None:
    volumes = stand_in_volumes(pod(CACHE_ON_CLAIM), tmp_path / "pods", tmp_path / "claims")
    fetched = tmp_path / "claims/ai/nano-weights/.adapter-cache/fetched/example-org--sql/v1"
    fetched.mkdir(parents=True)
    (fetched / "adapter_config.json").write_text('{"r": 64}')
    (fetched / COMPLETE_MARKER).write_text("example-org/sql@v1\n")
    env = {"ADAPTERS": f"example-org/sql v1 {SQL_DIR}"}
    assert fetch_adapters(env, volumes.mounts(DOWNLOAD)) == []
    assert json.loads((fetched / "adapter_config.json").read_text()) == {"r": 64}

    (fetched / COMPLETE_MARKER).write_text("example-org/sql@v0\n")  # another revision's
    assert fetch_adapters(env, volumes.mounts(DOWNLOAD)) == [SQL_DIR]
    assert json.loads((fetched / "adapter_config.json").read_text())["r"] == SIMULATED_RANK


def test_a_directory_on_no_volume_is_not_written(tmp_path: Path) -> None:
    volumes = stand_in_volumes(pod(CACHE_ON_CLAIM), tmp_path / "pods", tmp_path / "claims")
    env = {"ADAPTERS": "example-org/sql v1 /elsewhere/sql\nmalformed line\n"}
    assert fetch_adapters(env, volumes.mounts(DOWNLOAD)) == []
    assert not (tmp_path / "claims").exists()


def test_a_pods_empty_dirs_go_with_it(tmp_path: Path) -> None:
    volumes = stand_in_volumes(
        pod([{"name": "cache", "emptyDir": {}}]), tmp_path / "pods", tmp_path / "claims"
    )
    mounts = volumes.mounts({"volumeMounts": [{"name": "cache", "mountPath": "/adapter-cache"}]})
    assert fetch_adapters({"ADAPTERS": f"example-org/sql v1 {SQL_DIR}"}, mounts) == [SQL_DIR]
    assert volumes.root.is_dir()
    volumes.remove()
    assert not volumes.root.exists()
