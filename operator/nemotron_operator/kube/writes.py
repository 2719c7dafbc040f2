"""Every write the operator makes, one named function each; nothing outside ``kube/`` builds a
request body or calls a write verb of :class:`KubeClient` (a unit test checks that).

| function | request |
|---|---|
| :func:`apply_child` | server-side apply, ``fieldManager=nemotron-operator``, ``force`` |
| :func:`delete_child` | DELETE with a uid precondition, background propagation |
| :func:`patch_status` | merge patch of ``/status`` with the version read (409 when stale) |
| :func:`set_finalizers` | JSON patch of ``metadata.finalizers``, ``test`` of the version |
| :func:`scale` | merge patch of the ``/scale`` subresource (the autoscaler, as an HPA would) |
| :func:`set_pod_condition` | strategic merge patch of one condition in a pod's ``/status`` |
| :func:`post_event` | POST of a core/v1 Event about a NemotronDeployment |
| :func:`write_lease` / :func:`release_lease` | create or PUT of the single-replica Lease |

Each raises :class:`ApiError` as the client does; what a caller does about one is its own choice
(an Event of the autoscaler is a courtesy, a status write is not).
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from nemotron_operator.kube.client import KubeClient
from nemotron_operator.kube.errors import ApiError
from nemotron_operator.kube.resources import EVENTS, LEASES, NEMOTRON_DEPLOYMENTS, PODS, Resource
from nemotron_operator.kube.timestamps import format_micro_time, format_time

COMPONENT = "nemotron-operator"  # an Event's source and reporting component
EVENT_MESSAGE_LIMIT = 1024


async def apply_child(kube: KubeClient, resource: Resource, obj: dict[str, Any]) -> Any:
    """Server-side apply of a rendered child; the server's answer (for the watch cache)."""
    return await kube.apply(resource, obj)


async def delete_child(kube: KubeClient, resource: Resource, obj: Mapping[str, Any]) -> bool:
    """Delete a child that is no longer rendered, only if it is still the object read (its uid);
    False when it was gone already."""
    metadata = obj["metadata"]
    return await kube.delete(
        resource, metadata.get("namespace"), metadata["name"], uid=metadata.get("uid")
    )


async def delete_pod(kube: KubeClient, pod: Mapping[str, Any]) -> bool:
    """Delete a serving pod its StatefulSet will make again (a multi-node replica's leader whose
    worker died: controller/decide/ranks.py), only if it is still the pod read (its uid)."""
    metadata = pod["metadata"]
    return await kube.delete(PODS, metadata["namespace"], metadata["name"], uid=metadata.get("uid"))


def merge_patch(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON merge patch turning ``old`` into ``new``: a key no longer set is sent as null, at
    every depth (a merge patch merges nested objects, so e.g. a throughput figure that became
    None would otherwise linger)."""
    body: dict[str, Any] = {}
    for key, value in new.items():
        before = old.get(key)
        if isinstance(value, dict) and isinstance(before, dict):
            body[key] = merge_patch(before, value)
        else:
            body[key] = value
    for key in old:
        body.setdefault(key, None)
    return body


async def patch_status(kube: KubeClient, obj: Mapping[str, Any], status: Mapping[str, Any]) -> Any:
    """Replace the status of the NemotronDeployment ``obj`` (as read) by ``status`` (its wire
    form). The patch carries the ``resourceVersion`` read, so a status computed from a stale read
    is refused with 409 and recomputed by the next reconcile."""
    metadata = obj["metadata"]
    body = {
        "metadata": {"resourceVersion": metadata["resourceVersion"]},
        "status": merge_patch(obj.get("status") or {}, status),
    }
    return await kube.patch(
        NEMOTRON_DEPLOYMENTS, metadata["namespace"], metadata["name"], body, subresource="status"
    )


async def set_finalizers(kube: KubeClient, obj: Mapping[str, Any], finalizers: list[str]) -> Any:
    """Set ``metadata.finalizers`` of the NemotronDeployment ``obj`` if it is still the version
    read; the updated object. A ``test`` that fails (422) means someone wrote first: raised as a
    409 conflict (re-read and retry soon), not as a bad request."""
    metadata = obj["metadata"]
    ops: list[dict[str, Any]] = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": metadata["resourceVersion"]},
        {"op": "add", "path": "/metadata/finalizers", "value": finalizers},
    ]
    try:
        return await kube.patch(
            NEMOTRON_DEPLOYMENTS, metadata["namespace"], metadata["name"], ops, json_patch=True
        )
    except ApiError as exc:
        if exc.status == 422:
            raise ApiError(409, "Conflict", exc.message, exc.method, exc.url) from exc
        raise


async def scale(kube: KubeClient, namespace: str, name: str, replicas: int) -> None:
    """Set ``spec.replicas`` of a NemotronDeployment through its scale subresource."""
    body = {"spec": {"replicas": replicas}}
    await kube.patch(NEMOTRON_DEPLOYMENTS, namespace, name, body, subresource="scale")


async def set_pod_condition(
    kube: KubeClient,
    pod: Mapping[str, Any],
    condition: Mapping[str, str],
    *,
    now: datetime,
) -> None:
    """Set one condition in a pod's status (a readiness gate's: the kubelet then recomputes
    Ready). A strategic merge patch merges ``conditions`` by ``type``, so the kubelet's own
    conditions stay as they are; the patch names the pod's uid, so a pod replaced under the same
    name is not touched (409). ``condition``: type, status, reason, message."""
    metadata = pod["metadata"]
    body = {
        "metadata": {"uid": metadata["uid"]},
        "status": {
            "conditions": [
                {**condition, "lastProbeTime": None, "lastTransitionTime": format_time(now)}
            ]
        },
    }
    await kube.patch(
        PODS, metadata["namespace"], metadata["name"], body, subresource="status", strategic=True
    )


async def post_event(
    kube: KubeClient,
    involved: Mapping[str, Any],
    *,
    type_: str,
    reason: str,
    message: str,
    now: datetime,
) -> None:
    """Post an Event (``type_`` Normal or Warning) about the NemotronDeployment whose metadata
    is ``involved`` (name, namespace, uid, resourceVersion)."""
    await kube.create(
        EVENTS, str(involved["namespace"]), event_body(involved, type_, reason, message, now)
    )


def event_body(
    involved: Mapping[str, Any], type_: str, reason: str, message: str, now: datetime
) -> dict[str, Any]:
    """The Event :func:`post_event` posts."""
    stamp = format_time(now)
    return {
        "apiVersion": EVENTS.api_version,
        "kind": EVENTS.kind,
        "metadata": {
            "name": f"{involved['name']}.{secrets.token_hex(8)}",
            "namespace": involved["namespace"],
        },
        "involvedObject": {
            "apiVersion": NEMOTRON_DEPLOYMENTS.api_version,
            "kind": NEMOTRON_DEPLOYMENTS.kind,
            "name": involved["name"],
            "namespace": involved["namespace"],
            "uid": involved.get("uid"),
            "resourceVersion": involved.get("resourceVersion"),
        },
        "type": type_,
        "reason": reason,
        "message": message[:EVENT_MESSAGE_LIMIT],
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }


def _held_spec(
    previous: Mapping[str, Any] | None, *, identity: str, duration: float, now: datetime
) -> dict[str, Any]:
    """A Lease spec held by ``identity`` from ``now``: a new holder also sets ``acquireTime``
    and counts a transition."""
    spec = dict(previous or {})
    taking_over = spec.get("holderIdentity") != identity
    spec["holderIdentity"] = identity
    spec["leaseDurationSeconds"] = max(1, round(duration))
    spec["renewTime"] = format_micro_time(now)
    if taking_over:
        spec["acquireTime"] = format_micro_time(now)
        spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + (1 if previous else 0)
    return spec


async def write_lease(
    kube: KubeClient,
    namespace: str,
    name: str,
    lease: Mapping[str, Any] | None,
    *,
    identity: str,
    duration: float,
    now: datetime,
) -> None:
    """Take or renew the Lease as ``identity``: create it when ``lease`` (as read) is None, else
    update that version (409 when another replica wrote first)."""
    if lease is None:
        body = {
            "apiVersion": LEASES.api_version,
            "kind": LEASES.kind,
            "metadata": {"name": name, "namespace": namespace},
            "spec": _held_spec(None, identity=identity, duration=duration, now=now),
        }
        await kube.create(LEASES, namespace, body)
        return
    spec = _held_spec(lease.get("spec") or {}, identity=identity, duration=duration, now=now)
    await kube.replace(LEASES, namespace, {**lease, "spec": spec})


async def release_lease(kube: KubeClient, lease: Mapping[str, Any]) -> None:
    """Give the Lease (as read) up: holder and renew time cleared, so a successor takes it at its
    first attempt."""
    spec = {**(lease.get("spec") or {}), "holderIdentity": None, "renewTime": None}
    await kube.replace(LEASES, lease["metadata"]["namespace"], {**lease, "spec": spec})
