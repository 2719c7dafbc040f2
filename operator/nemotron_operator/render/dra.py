"""GPUs by Dynamic Resource Allocation (``capacity.gpu.allocation: DRA``): a ResourceClaimTemplate
per deployment and pod shape, and the pod's claim on it instead of ``nvidia.com/gpu``.

Each pod gets a ResourceClaim of its own from the template (kube-controller-manager's
resourceclaim controller makes it; kube-scheduler allocates it), so a multi-node replica claims
per pod: the leader and each worker ask for the GPUs of one node. The template requests exactly
the planned number of devices of the DeviceClass with a CEL selector on the planned product (the
driver's ``productName`` is NVML's name, e.g. "NVIDIA H200"; GPU Feature Discovery's label, and
the plan, spell it with dashes) and on at least the planned memory per GPU. A template's spec is
immutable, so its name carries a hash of the spec: a new plan is a new template (and a rollout),
and the old one is deleted as no longer rendered. docs/dra.md has the details and sources.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from nemotron_operator.api import NemotronDeployment, Plan
from nemotron_operator.api.capacity import DEFAULT_DEVICE_CLASS
from nemotron_operator.render import names as n
from nemotron_operator.render.checks import GPU_PRODUCT_LABEL
from nemotron_operator.render.names import Names

API_VERSION = "resource.k8s.io/v1"
DRIVER = "gpu.nvidia.com"  # NVIDIA's DRA driver for GPUs: the attributes' domain
CLAIM = "gpus"  # the pod's name for its claim, and the request's name in it
GPU_RESOURCE = "nvidia.com/gpu"


def uses_dra(deployment: NemotronDeployment) -> bool:
    return deployment.spec.capacity.gpu.allocation == "DRA"


def device_class(deployment: NemotronDeployment) -> str:
    return deployment.spec.capacity.gpu.device_class_name or DEFAULT_DEVICE_CLASS


def selector(plan: Plan) -> str:
    """CEL over one device: the planned product, and at least the planned memory per GPU."""
    attributes, capacity = f"device.attributes['{DRIVER}']", f"device.capacity['{DRIVER}']"
    product = f"{attributes}.productName.replace(' ', '-') == '{plan.gpu_product}'"
    if plan.gpu_memory_bytes <= 0:
        return product
    mib, rest = divmod(plan.gpu_memory_bytes, 2**20)
    amount = f"{mib}Mi" if not rest else str(plan.gpu_memory_bytes)
    memory = f"{capacity}.memory.compareTo(quantity('{amount}')) >= 0"
    return f"{product} && (!('memory' in {capacity}) || {memory})"


def _claim_spec(deployment: NemotronDeployment, plan: Plan, gpus: int) -> dict[str, Any]:
    request = {
        "name": CLAIM,
        "exactly": {
            "deviceClassName": device_class(deployment),
            "allocationMode": "ExactCount",
            "count": gpus,
            "selectors": [{"cel": {"expression": selector(plan)}}],
        },
    }
    return {"devices": {"requests": [request]}}


def template_name(deployment: NemotronDeployment, plan: Plan, names: Names, gpus: int) -> str:
    spec = json.dumps(_claim_spec(deployment, plan, gpus), sort_keys=True)
    digest = hashlib.sha256(spec.encode()).hexdigest()[:8]
    return n.with_suffix(names.base, f"gpus-{digest}")


def build_claim_template(
    deployment: NemotronDeployment, plan: Plan, names: Names, gpus: int
) -> dict[str, Any]:
    """The template every serving pod's claim is made from. The claims carry the instance
    labels (the template's ``spec.metadata``), so the GPU inventory knows whose they are."""
    labels = n.labels(names, n.COMPONENT_SERVING)
    return {
        "apiVersion": API_VERSION,
        "kind": "ResourceClaimTemplate",
        "metadata": {
            "name": template_name(deployment, plan, names, gpus),
            "namespace": names.namespace,
            "labels": labels,
        },
        "spec": {
            "metadata": {"labels": dict(labels)},
            "spec": _claim_spec(deployment, plan, gpus),
        },
    }


def claim_gpus(pod: dict[str, Any], template: str) -> None:
    """Make a rendered pod spec ask for its GPUs by claim: no ``nvidia.com/gpu`` request or limit,
    no GFD product label in the node selector (DRA nodes need not have it: the claim's selector
    picks the product), and a ``resourceClaims`` entry its vLLM container references."""
    pod["resourceClaims"] = [{"name": CLAIM, "resourceClaimTemplateName": template}]
    for container in pod["containers"]:
        resources = container.get("resources") or {}
        if GPU_RESOURCE not in resources.get("limits", {}):
            continue
        for part in ("requests", "limits"):
            resources.get(part, {}).pop(GPU_RESOURCE, None)
        if not resources.get("limits"):
            resources.pop("limits", None)
        resources["claims"] = [{"name": CLAIM}]
    selector_labels = {k: v for k, v in pod["nodeSelector"].items() if k != GPU_PRODUCT_LABEL}
    if selector_labels:
        pod["nodeSelector"] = selector_labels
    else:
        del pod["nodeSelector"]
