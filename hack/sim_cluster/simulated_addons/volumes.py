"""A simulated storage provisioner: the default StorageClass ``sim-local`` and its volumes.

kube-scheduler does not place a pod whose claim is unbound, so claims need volumes, as a CSI
driver's external-provisioner makes them: for each claim of this StorageClass that
kube-controller-manager marks for provisioning (``volume.kubernetes.io/storage-provisioner``),
a PersistentVolume ``pvc-<uid>`` of the requested size and access modes, pre-bound to the claim
(``claimRef``); kube-controller-manager's PersistentVolume controller then binds the two. A
released volume (its claim deleted) is deleted, as the ``Delete`` reclaim policy asks.

Each volume is a ``hostPath`` directory under the cluster's work directory, made by the
provisioner world-writable (0777, as local-path-provisioner makes its directories), so that a
non-root pod on a real kubelet can write it: a missing hostPath is created by the container
runtime as root 0755, which only root may write. A process pod gets a directory per claim from
the simulated kubelet instead.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any

from nemotron_operator.kube.errors import ApiError
from nemotron_operator.kube.transport import Transport
from nemotron_sim.kubeapi.mirror import Mirror
from nemotron_sim.kubeapi.resources import ResourceKey, WatchEvent

log = logging.getLogger("nemotron_sim.volumes")
CLAIMS = ResourceKey("", "v1", "persistentvolumeclaims")
VOLUMES = ResourceKey("", "v1", "persistentvolumes")
STORAGE_CLASSES = ResourceKey("storage.k8s.io", "v1", "storageclasses")
STORAGE_CLASS = "sim-local"
PROVISIONER = "sim.nemotron.io/local"
PROVISIONER_ANNOTATIONS = (
    "volume.kubernetes.io/storage-provisioner",
    "volume.beta.kubernetes.io/storage-provisioner",
)


def storage_class() -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {
            "name": STORAGE_CLASS,
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
        },
        "provisioner": PROVISIONER,
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "WaitForFirstConsumer",
    }


async def create_storage_class(api: Transport) -> None:
    """The default StorageClass, made before anything can create a claim: kube-apiserver's
    DefaultStorageClass admission only sets the class of claims created after it exists."""
    try:
        await api.request("POST", STORAGE_CLASSES.path(), body=storage_class())
    except ApiError as error:
        if error.status != 409:
            raise


def volume_for(claim: dict[str, Any], root: Path) -> dict[str, Any] | None:
    """The PersistentVolume for a claim waiting for this provisioner; None for any other."""
    md, spec = claim.get("metadata") or {}, claim.get("spec") or {}
    annotations = md.get("annotations") or {}
    if not any(annotations.get(key) == PROVISIONER for key in PROVISIONER_ANNOTATIONS):
        return None
    if spec.get("volumeName") or md.get("deletionTimestamp"):
        return None
    size = ((spec.get("resources") or {}).get("requests") or {}).get("storage", "1Gi")
    name = f"pvc-{md['uid']}"
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {
            "name": name,
            "annotations": {"pv.kubernetes.io/provisioned-by": PROVISIONER},
        },
        "spec": {
            "capacity": {"storage": size},
            "accessModes": spec.get("accessModes") or ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Delete",
            "storageClassName": spec.get("storageClassName") or STORAGE_CLASS,
            "volumeMode": spec.get("volumeMode") or "Filesystem",
            "claimRef": {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "namespace": md.get("namespace", ""),
                "name": md["name"],
                "uid": md["uid"],
            },
            "hostPath": {"path": str(root / name), "type": "Directory"},
        },
    }


def is_released_volume(volume: dict[str, Any]) -> bool:
    md = volume.get("metadata") or {}
    ours = (md.get("annotations") or {}).get("pv.kubernetes.io/provisioned-by") == PROVISIONER
    phase = (volume.get("status") or {}).get("phase")
    policy = (volume.get("spec") or {}).get("persistentVolumeReclaimPolicy")
    return ours and phase == "Released" and policy == "Delete" and not md.get("deletionTimestamp")


def make_volume_directory(path: Path) -> None:
    """The volume's directory, writable by any UID; its parents traversable by any UID."""
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o777)  # mkdir's mode is cut by the umask
    for parent in (path.parent, path.parent.parent):
        parent.chmod(parent.stat().st_mode | 0o111)


class Provisioner:
    def __init__(self, mirror: Mirror, root: Path) -> None:
        self.mirror = mirror
        self.root = root.resolve()
        self._provisioned: set[str] = set()

    def start(self) -> None:
        self.mirror.on_event([CLAIMS, VOLUMES], self._observe)
        for claim in self.mirror.scan(CLAIMS):
            self._provision(claim)

    def _observe(self, event: WatchEvent) -> None:
        if event.type == "DELETED":
            return
        if event.key == CLAIMS:
            self._provision(event.obj)
        elif is_released_volume(event.obj):
            name = event.obj["metadata"]["name"]
            self.mirror.delete(VOLUMES, None, name)
            shutil.rmtree(self.root / name, ignore_errors=True)

    def _provision(self, claim: dict[str, Any]) -> None:
        volume = volume_for(claim, self.root)
        if volume is None or volume["metadata"]["name"] in self._provisioned:
            return
        if self.mirror.peek(VOLUMES, None, volume["metadata"]["name"]) is not None:
            return
        self._provisioned.add(volume["metadata"]["name"])
        make_volume_directory(self.root / volume["metadata"]["name"])
        self.mirror.create(VOLUMES, volume)
