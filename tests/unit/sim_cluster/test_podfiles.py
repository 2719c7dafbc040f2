from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nemotron_sim.kubelet.podfiles import (
    SERVICE_ACCOUNT_PATH,
    ApiAccess,
    MountError,
    PodFileWriter,
    automounts_token,
)

POD: dict[str, Any] = {
    "metadata": {"name": "op-1", "namespace": "ai", "labels": {"app": "op"}},
    "spec": {
        "serviceAccountName": "op",
        "volumes": [
            {"name": "scratch", "emptyDir": {}},
            {"name": "cfg", "configMap": {"name": "cfg",
                                          "items": [{"key": "a", "path": "x/a.txt"}]}},
            {"name": "creds", "secret": {"secretName": "creds", "defaultMode": 0o400}},
            {"name": "info", "downwardAPI": {"items": [
                {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
            {"name": "bound", "projected": {"sources": [
                {"serviceAccountToken": {"path": "vault", "audience": "vault",
                                         "expirationSeconds": 600}},
                {"configMap": {"name": "cfg"}}]}},
            {"name": "data", "persistentVolumeClaim": {"claimName": "data-op"}},
        ],
        "containers": [{"name": "op", "volumeMounts": [
            {"name": "scratch", "mountPath": "/tmp"},
            {"name": "cfg", "mountPath": "/etc/cfg/a.txt", "subPath": "x/a.txt"},
        ]}],
    },
}  # fmt: skip
OBJECTS = {
    ("ConfigMap", "cfg"): {"data": {"a": "alpha", "b": "beta"}},
    ("Secret", "creds"): {"data": {"pw": "aHVudGVyMg=="}},  # hunter2
}


def writer(tmp_path: Path, issued: list[tuple[int, tuple[str, ...]]]) -> PodFileWriter:
    def lookup(kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        return OBJECTS.get((kind, name))

    async def token(seconds: int, audiences: tuple[str, ...]) -> str:
        issued.append((seconds, audiences))
        return f"token-{len(issued)}"

    def kubeconfig(path: Path, namespace: str, value: str) -> None:
        path.write_text(json.dumps({"namespace": namespace, "token": value}))

    api = ApiAccess(kubeconfig, b"PEM")
    return PodFileWriter(tmp_path / "pod", tmp_path / "claims", lookup, api, token)


async def test_volumes_are_filled_as_the_kubelet_fills_them(tmp_path: Path) -> None:
    issued: list[tuple[int, tuple[str, ...]]] = []
    files = await writer(tmp_path, issued).prepare(POD, automount=True)
    volumes = files.volumes
    assert list(volumes["scratch"].iterdir()) == []
    assert (volumes["cfg"] / "x" / "a.txt").read_text() == "alpha"
    assert not (volumes["cfg"] / "b").exists()  # items select keys
    secret = volumes["creds"] / "pw"
    assert (secret.read_text(), secret.stat().st_mode & 0o777) == ("hunter2", 0o400)
    assert (volumes["info"] / "labels").read_text() == 'app="op"'
    assert (volumes["bound"] / "b").read_text() == "beta"
    assert volumes["data"] == tmp_path / "claims" / "ai" / "data-op"
    access = files.mounts(POD["spec"]["containers"][0])
    assert access["/etc/cfg/a.txt"] == str(volumes["cfg"] / "x" / "a.txt")
    account = Path(access[SERVICE_ACCOUNT_PATH])
    assert (account / "namespace").read_text() == "ai"
    assert (account / "ca.crt").read_bytes() == b"PEM"
    assert files.kubeconfig is not None
    kubeconfig = json.loads(files.kubeconfig.read_text())
    assert kubeconfig == {"namespace": "ai", "token": (account / "token").read_text()}
    assert sorted(issued) == [(600, ("vault",)), (3607, ())]
    assert (volumes["bound"] / "vault").read_text().startswith("token-")


async def test_renewal_rewrites_tokens_and_the_kubeconfig(tmp_path: Path) -> None:
    issued: list[tuple[int, tuple[str, ...]]] = []
    pod_writer = writer(tmp_path, issued)
    files = await pod_writer.prepare(POD, automount=True)
    assert files.kubeconfig is not None
    before = json.loads(files.kubeconfig.read_text())["token"]
    await pod_writer.renew_tokens()
    after = json.loads(files.kubeconfig.read_text())["token"]
    assert after != before
    assert len(issued) == 4


async def test_missing_sources_fail_the_mount_and_optional_ones_do_not(tmp_path: Path) -> None:
    pod = {"metadata": {"name": "p", "namespace": "ai"},
           "spec": {"volumes": [{"name": "v", "configMap": {"name": "absent"}}]}}  # fmt: skip
    with pytest.raises(MountError) as raised:
        await writer(tmp_path, []).prepare(pod, automount=False)
    assert (
        str(raised.value)
        == 'MountVolume.SetUp failed for volume "v" : configmap "absent" not found'
    )
    pod["spec"]["volumes"][0]["configMap"]["optional"] = True
    files = await writer(tmp_path, []).prepare(pod, automount=False)
    assert files.kubeconfig is None
    assert files.mounts({"volumeMounts": []}) == {}


def test_automount_follows_the_pod_then_the_service_account() -> None:
    assert automounts_token({"spec": {}}, None)
    assert not automounts_token({"spec": {}}, {"automountServiceAccountToken": False})
    assert automounts_token({"spec": {"automountServiceAccountToken": True}},
                            {"automountServiceAccountToken": False})  # fmt: skip
