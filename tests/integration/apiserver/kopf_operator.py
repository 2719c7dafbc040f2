"""A minimal kopf operator for the API stand-in's tests (run with ``kopf run``).

A Widget gets a ConfigMap child (adopted: ownerReferences) that follows ``spec.size``; deleting a
Widget leaves a tombstone ConfigMap, which proves the deletion handler ran before the finalizer
was released.
"""

from __future__ import annotations

import logging
from typing import Any

import kopf
import kubernetes

GROUP, VERSION, PLURAL = "test.sim.nemotron.io", "v1", "widgets"


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.peering.standalone = True
    settings.posting.level = logging.WARNING
    settings.persistence.finalizer = "test.sim.nemotron.io/finalizer"
    # kopf gives up on a watch once these retries are spent (the watcher then stays dead, as
    # found with an injected outage): they must outlast the outages the tests inject (1 s).
    settings.networking.error_backoffs = [0.1, 0.2, 0.5, 1.0, 2.0]
    settings.watching.server_timeout = 30
    kubernetes.config.load_kube_config()


def _core() -> kubernetes.client.CoreV1Api:
    return kubernetes.client.CoreV1Api()


@kopf.on.create(GROUP, VERSION, PLURAL, backoff=0.2)
def create(
    name: str, namespace: str, spec: dict[str, Any], body: Any, patch: Any, **_: Any
) -> None:
    child = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{name}-child"},
        "data": {"size": str(spec["size"])},
    }
    kopf.adopt(child, owner=body)
    _core().create_namespaced_config_map(namespace, child)
    patch.status["phase"] = "Created"


@kopf.on.update(GROUP, VERSION, PLURAL, field="spec.size", backoff=0.2)
def resize(name: str, namespace: str, new: int, patch: Any, **_: Any) -> None:
    _core().patch_namespaced_config_map(f"{name}-child", namespace, {"data": {"size": str(new)}})
    patch.status["phase"] = f"Resized to {new}"


@kopf.on.delete(GROUP, VERSION, PLURAL, backoff=0.2)
def delete(name: str, namespace: str, **_: Any) -> None:
    tombstone = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{name}-deleted"}}
    _core().create_namespaced_config_map(namespace, tombstone)
