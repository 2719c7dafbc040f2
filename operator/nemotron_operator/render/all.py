"""``render_all``: every object a NemotronDeployment needs, in a stable order."""

from __future__ import annotations

from typing import Any

from nemotron_operator.api import NemotronDeployment
from nemotron_operator.render import (
    checks,
    download_job,
    dra,
    engine,
    gateway,
    monitoring,
    nodepool,
    scaledobject,
    services,
    storage,
)
from nemotron_operator.render.inputs import PlanResultLike, RenderOptions
from nemotron_operator.render.leaderworkerset import build_leader_worker_set
from nemotron_operator.render.multinode import uses_leader_worker_set
from nemotron_operator.render.names import Names
from nemotron_operator.render.network_policy import build_network_policies
from nemotron_operator.render.workload import build_statefulsets

# The apply order, stated once (the controller's child kinds follow it too): capacity first (a
# NodePool starts provisioning), then storage, the Services the StatefulSets name, the workloads,
# and what watches or scales them. render_all returns its objects sorted by it.
KIND_ORDER = (
    "NodePool",
    "PersistentVolumeClaim",
    "Job",
    "ServiceAccount",
    "Role",
    "RoleBinding",
    "ConfigMap",
    "NetworkPolicy",
    "Service",
    "ResourceClaimTemplate",
    "StatefulSet",
    "LeaderWorkerSet",
    "Deployment",
    "PodDisruptionBudget",
    "InferencePool",
    "HTTPRoute",
    "PodMonitor",
    "ScaledObject",
)


def render_all(
    deployment: NemotronDeployment,
    result: PlanResultLike,
    options: RenderOptions | None = None,
) -> list[dict[str, Any]]:
    """Every object for ``deployment`` under ``result.plan``; raises RenderError naming the
    field when the spec cannot be rendered. Same input, same output, byte for byte."""
    options = options or RenderOptions()
    plan = result.plan
    checks.check(deployment, result.model, options, plan=plan)
    names = Names(deployment.metadata.name, deployment.metadata.namespace)
    settings = engine.resolve_serve_settings(deployment, plan, result.model)
    weight_bytes = plan.weights_total_bytes
    extra = (
        {} if options.plugin_digest is None else {"reasoningParserPlugin": options.plugin_digest}
    )
    objects: list[dict[str, Any]] = []
    pool = nodepool.build_node_pool(deployment, plan, names)
    if pool is not None:
        objects.append(pool)
    if storage.builds_shared_claim(deployment):
        objects.append(storage.build_persistent_volume_claim(deployment, names, weight_bytes))
    job = download_job.build_download_job(
        deployment, names, model_dir=settings.model_path, weight_bytes=weight_bytes
    )
    if job is not None:
        objects.append(job)
    objects.append(services.build_headless_service(names, multi_node=plan.nodes_per_replica > 1))
    objects.append(services.build_service(names))
    lws = uses_leader_worker_set(deployment, plan, options)
    if lws:
        objects.append(
            build_leader_worker_set(
                deployment, plan, settings, names, weight_bytes=weight_bytes,
                extra_hash_inputs=extra,
            )
        )  # fmt: skip
    else:
        objects += build_statefulsets(
            deployment, plan, settings, names, weight_bytes=weight_bytes, extra_hash_inputs=extra
        )
    if dra.uses_dra(deployment):
        gpus_per_pod = plan.gpus_per_replica // plan.nodes_per_replica
        objects.append(dra.build_claim_template(deployment, plan, names, gpus_per_pod))
    if services.needs_pod_disruption_budget(deployment, plan.nodes_per_replica):
        objects.append(services.build_pod_disruption_budget(names))
    objects += build_network_policies(
        deployment, plan, names, options.operator_namespace, leader_worker_set=lws
    )
    objects += gateway.build_gateway_objects(deployment, plan, names, settings.served_name)
    monitor = monitoring.build_pod_monitor(deployment, names)
    if monitor is not None:
        objects.append(monitor)
    scaled = scaledobject.build_scaled_object(deployment, names)
    if scaled is not None:
        objects.append(scaled)
    if options.owner is not None:
        reference = options.owner.reference()
        for obj in objects:
            if "namespace" in obj["metadata"]:
                obj["metadata"]["ownerReferences"] = [reference]
    # A stable sort: objects of one kind keep the order they were built in (leader first).
    return sorted(objects, key=lambda obj: KIND_ORDER.index(obj["kind"]))
