"""DRA on the kubelet's side: a pod whose ``spec.resourceClaims`` are not yet allocated and
reserved for it does not start.

On a real node the kubelet asks the driver to prepare every claim of the pod before it starts
containers, and refuses to start a pod whose claim is not reserved for it (KEP-3063, "if resource
not reserved for pod: kubelet refuses to start the pod"). kube-scheduler allocates and reserves
before it binds, so this is a safety net, as it is there. The kubelet does not write
``status.resourceClaimStatuses``: kube-controller-manager's resourceclaim controller does, naming
the claim it made from each template (seen on this control plane: set with no kubelet writing
pod status yet); the kubelet reads it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from nemotron_sim.kubeapi.kinds import PODS, RESOURCE_CLAIMS, RESOURCE_SLICES
from nemotron_sim.kubeapi.store import ObjectStore

DRIVER = "gpu.nvidia.com"  # NVIDIA's DRA driver for GPUs, whose claims the kubelet prepares


def unprepared_claim(store: ObjectStore, pod: dict[str, Any]) -> str | None:
    """Why the pod's claims do not let it start yet; None when every claim is allocated and
    reserved for this pod."""
    md = pod.get("metadata") or {}
    namespace, uid = md.get("namespace"), md.get("uid")
    statuses = {
        s.get("name"): s.get("resourceClaimName")
        for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []
    }
    for claim_ref in (pod.get("spec") or {}).get("resourceClaims") or []:
        ref = claim_ref.get("name")
        name = claim_ref.get("resourceClaimName") or statuses.get(ref)
        if not name:
            return f"pod claim {ref}: no ResourceClaim created for it yet"
        claim = store.peek(RESOURCE_CLAIMS, namespace, name)
        status = (claim or {}).get("status") or {}
        if claim is None:
            return f"pod claim {ref}: ResourceClaim {name} not found"
        if not status.get("allocation"):
            return f"pod claim {ref}: ResourceClaim {name} is not allocated"
        if not any(r.get("uid") == uid for r in status.get("reservedFor") or []):
            return f"pod claim {ref}: ResourceClaim {name} is not reserved for pod {md.get('name')}"
    return None


async def wait_for_claims(store: ObjectStore, pod: dict[str, Any], period: float) -> None:
    """Until every claim of the pod (its latest version in ``store``) is prepared."""
    md = pod.get("metadata") or {}
    while True:
        latest = store.peek(PODS, md.get("namespace"), md.get("name", ""))
        if latest is None or (latest.get("metadata") or {}).get("uid") != md.get("uid"):
            latest = pod
        if unprepared_claim(store, latest) is None:
            return
        await asyncio.sleep(max(0.1, period))


def dra_gpu_product(store: ObjectStore, node_name: str) -> str | None:
    """The GPU product of a DRA node, from its ResourceSlices (GFD's spelling: NVML's name with
    dashes for spaces), for the stand-in vLLM to "profile" that GPU."""
    for item in store.scan(RESOURCE_SLICES):
        spec = item.get("spec") or {}
        if spec.get("nodeName") != node_name or spec.get("driver") != DRIVER:
            continue
        for device in spec.get("devices") or []:
            name = ((device.get("attributes") or {}).get("productName") or {}).get("string")
            if name:
                return str(name).replace(" ", "-")
    return None
