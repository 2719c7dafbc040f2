"""A Karpenter ``karpenter.sh/v1`` NodePool for the planned GPU nodes.

Cluster-scoped: it carries no ownerReference (a namespaced owner cannot own it); the controller
deletes it with a finalizer, finding it by name or by the owner annotation.
"""

from __future__ import annotations

from typing import Any

from nemotron_operator.api import NemotronDeployment, Plan
from nemotron_operator.api.errors import FieldError
from nemotron_operator.render import names as n
from nemotron_operator.render.checks import GPU_PRODUCT_LABEL
from nemotron_operator.render.errors import RenderError
from nemotron_operator.render.names import Names
from nemotron_operator.render.pod import GPU_RESOURCE

NODE_POOL_API_VERSION = "karpenter.sh/v1"
AWS_NODE_CLASS_GROUP = "karpenter.k8s.aws"
# Karpenter's AWS provider labels instance types with the GPU model in lower case
# (karpenter.k8s.aws/instance-gpu-name, e.g. "h100"). GFD product name → that value.
AWS_GPU_NAMES = {
    "NVIDIA-H100-80GB-HBM3": "h100",
    "NVIDIA-H200": "h200",
    "NVIDIA-B200": "b200",
    "NVIDIA-A100-SXM4-80GB": "a100",
    "NVIDIA-L40S": "l40s",
}


def _requirements(deployment: NemotronDeployment, plan: Plan) -> list[dict[str, Any]]:
    karpenter = deployment.spec.node_pool.karpenter
    if karpenter is None:
        return []
    requirements: list[dict[str, Any]] = [
        {
            "key": "karpenter.sh/capacity-type",
            "operator": "In",
            "values": [karpenter.capacity_type],
        }
    ]
    if karpenter.instance_types:
        requirements.append(
            {
                "key": "node.kubernetes.io/instance-type",
                "operator": "In",
                "values": sorted(karpenter.instance_types),
            }
        )
        return requirements
    gpu_name = AWS_GPU_NAMES.get(plan.gpu_product)
    if karpenter.node_class_ref.group != AWS_NODE_CLASS_GROUP or gpu_name is None:
        raise RenderError(
            [
                FieldError(
                    "spec.nodePool.karpenter.instanceTypes",
                    f"the operator cannot tell which instance types of "
                    f"{karpenter.node_class_ref.kind} carry {plan.gpu_product}: list them",
                )
            ],
            name=deployment.metadata.name,
        )
    requirements += [
        {"key": "karpenter.k8s.aws/instance-gpu-name", "operator": "In", "values": [gpu_name]},
        {
            "key": "karpenter.k8s.aws/instance-gpu-count",
            "operator": "In",
            "values": [str(plan.gpus_per_node)],
        },
    ]
    return requirements


def _pool_nodes(deployment: NemotronDeployment, plan: Plan) -> int:
    autoscaling = deployment.spec.autoscaling
    if autoscaling is None or autoscaling.max_replicas <= plan.replicas:
        return plan.nodes
    replicas = autoscaling.max_replicas
    if plan.gpus_per_replica <= plan.gpus_per_node:
        per_node = plan.gpus_per_node // plan.gpus_per_replica
        return -(-replicas // per_node)
    return replicas * plan.nodes_per_replica


def build_node_pool(
    deployment: NemotronDeployment, plan: Plan, names: Names
) -> dict[str, Any] | None:
    """None unless ``spec.nodePool.provisioner`` is Karpenter."""
    karpenter = deployment.spec.node_pool.karpenter
    if deployment.spec.node_pool.provisioner != "Karpenter" or karpenter is None:
        return None
    ref = karpenter.node_class_ref
    return {
        "apiVersion": NODE_POOL_API_VERSION,
        "kind": "NodePool",
        "metadata": {
            "name": names.node_pool,
            "labels": n.labels(names, n.COMPONENT_NODE_POOL),
            "annotations": {n.OWNER: f"{names.namespace}/{names.deployment}"},
        },
        "spec": {
            "template": {
                # Karpenter schedules against these labels before GFD runs on the new node.
                "metadata": {"labels": {GPU_PRODUCT_LABEL: plan.gpu_product}},
                "spec": {
                    "nodeClassRef": {"group": ref.group, "kind": ref.kind, "name": ref.name},
                    "requirements": _requirements(deployment, plan),
                    "taints": [{"key": GPU_RESOURCE, "value": "true", "effect": "NoSchedule"}],
                },
            },
            # Enough nodes for every planned replica, no more; with spec.autoscaling, for
            # maxReplicas, so that scaling out is not stopped by the pool's own limit.
            "limits": {GPU_RESOURCE: str(_pool_nodes(deployment, plan) * plan.gpus_per_node)},
            # Only empty nodes are consolidated: moving a serving pod costs a reload of its
            # weights.
            "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "10m"},
        },
    }
