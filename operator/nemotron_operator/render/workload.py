"""The serving StatefulSets.

A replica that fits on one node: one StatefulSet, ``replicas = spec.replicas``, every pod a leader
that serves. A replica that needs several nodes (LeaderWorkerSet's layout, in plain StatefulSets):
for each replica a leader StatefulSet (one pod, node rank 0, runs the API server) and a worker
StatefulSet (one pod per further node, ``ordinals.start: 1`` so that each pod's ordinal is its node
rank, ``--headless``). A pod template is shared by every pod of a StatefulSet, so node rank 0 (API
server) and the headless ranks cannot share one without wrapping ``vllm serve`` in a shell.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from nemotron_operator.api import NemotronDeployment, Plan
from nemotron_operator.render import names as n
from nemotron_operator.render import storage
from nemotron_operator.render.adapters import adapters_annotation, runtime_updates
from nemotron_operator.render.engine import Distributed, ServeSettings
from nemotron_operator.render.names import Names
from nemotron_operator.render.pod import build_pod_template

CONFIG_HASH_LENGTH = 16


def config_hash(template: Mapping[str, Any], extra: Mapping[str, str]) -> str:
    """Digest of the pod template plus inputs that live outside it (the plugin file's digest).

    It covers exactly what reaches the pods: fields that only change the plan's explanation,
    replicas, monitoring, the PDB or the node pool leave it unchanged.
    """
    payload = json.dumps({"template": template, "extra": dict(extra)}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:CONFIG_HASH_LENGTH]


def plan_annotation(plan: Plan) -> str:
    """The chosen layout and its arithmetic; the rejected alternatives stay in status.plan."""
    wire = plan.to_wire()
    wire.pop("rejected", None)
    wire.pop("rejectedOmitted", None)
    return json.dumps(wire, sort_keys=True, separators=(",", ":"))


def _with_hash(template: dict[str, Any], extra: Mapping[str, str]) -> dict[str, Any]:
    template["metadata"]["annotations"][n.CONFIG_HASH] = config_hash(template, extra)
    return template


def _statefulset(
    name: str,
    names: Names,
    plan: Plan,
    *,
    replicas: int,
    selector: dict[str, str],
    template: dict[str, Any],
    claim_templates: list[dict[str, Any]],
    start_ordinal: int = 0,
    adapters: str | None = None,
    rolling_update: dict[str, int] | None = None,
) -> dict[str, Any]:
    strategy: dict[str, Any] = {"type": "RollingUpdate"}
    if rolling_update:
        strategy["rollingUpdate"] = rolling_update
    spec: dict[str, Any] = {
        "replicas": replicas,
        "serviceName": names.headless_service,
        # Replicas load their weights at the same time, and a multi-node replica's ranks must
        # all start before any of them can become ready.
        "podManagementPolicy": "Parallel",
        "updateStrategy": strategy,
        "selector": {"matchLabels": selector},
        "template": template,
    }
    if start_ordinal:
        spec["ordinals"] = {"start": start_ordinal}
    if claim_templates:
        spec["volumeClaimTemplates"] = claim_templates
        # Keep downloaded weights when scaling down (scaling up again skips the download);
        # delete them with the StatefulSet.
        spec["persistentVolumeClaimRetentionPolicy"] = {
            "whenDeleted": "Delete",
            "whenScaled": "Retain",
        }
    annotations = {n.PLAN: plan_annotation(plan)}
    if adapters is not None:
        annotations[n.ADAPTERS] = adapters
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {
            "name": name,
            "namespace": names.namespace,
            "labels": n.labels(names, n.COMPONENT_SERVING),
            "annotations": annotations,
        },
        "spec": spec,
    }


def build_statefulsets(
    deployment: NemotronDeployment,
    plan: Plan,
    settings: ServeSettings,
    names: Names,
    *,
    weight_bytes: int,
    extra_hash_inputs: Mapping[str, str],
) -> list[dict[str, Any]]:
    nodes = plan.nodes_per_replica
    if plan.gpus_per_replica % nodes or plan.gpus_per_replica // nodes > plan.gpus_per_node:
        raise ValueError(
            f"plan puts {plan.gpus_per_replica} GPUs on {nodes} nodes of {plan.gpus_per_node}: "
            "a replica must use the same number of GPUs on each of its nodes"
        )
    gpus = plan.gpus_per_replica // nodes
    # The wanted adapters, on the StatefulSets whose pods serve the API (runtime loading only).
    wanted = adapters_annotation(deployment) if runtime_updates(deployment) else None
    claims = (
        [storage.build_volume_claim_template(deployment, names, weight_bytes)]
        if storage.uses_claim_template(deployment)
        else []
    )

    def statefulset(
        name: str,
        replicas: int,
        selector: dict[str, str],
        distributed: Distributed | None,
        *,
        start_ordinal: int = 0,
        rolling_update: dict[str, int] | None = None,
    ) -> dict[str, Any]:
        pod_labels = {**n.labels(names, n.COMPONENT_SERVING), **selector}
        template = build_pod_template(
            deployment,
            plan,
            settings,
            names,
            pod_labels=pod_labels,
            gpus=gpus,
            weight_bytes=weight_bytes,
            distributed=distributed,
        )
        return _statefulset(
            name,
            names,
            plan,
            replicas=replicas,
            selector=selector,
            template=_with_hash(template, extra_hash_inputs),
            claim_templates=claims,
            start_ordinal=start_ordinal,
            adapters=wanted if distributed is None or not distributed.worker else None,
            rolling_update=rolling_update,
        )

    rollout = deployment.spec.rollout
    replicas = deployment.spec.replicas
    if nodes == 1:
        selector = n.serving_selector(names, n.ROLE_LEADER)
        update = None
        if rollout is not None:
            # spec.rollout: the canary is a partition (pods at or above it take a new template);
            # the controller raises it when the rollout stalls (controller/decide/rollout.py).
            canary = rollout.canary.replicas if rollout.canary is not None else replicas
            update = {
                "maxUnavailable": rollout.max_unavailable,
                "partition": max(0, replicas - canary),
            }
        return [statefulset(names.statefulset, replicas, selector, None, rolling_update=update)]
    # With spec.rollout, a replica's worker ranks are replaced together, with their leader (the
    # controller decides which replicas take a new template: controller/decide/rollout.py).
    workers_update = {"maxUnavailable": nodes - 1} if rollout is not None else None
    objects = []
    for replica in range(replicas):
        leader_name = names.leader_statefulset(replica)
        master = names.pod_dns(leader_name, 0)
        leader = n.serving_selector(names, n.ROLE_LEADER, replica)
        worker = n.serving_selector(names, n.ROLE_WORKER, replica)
        objects.append(
            statefulset(leader_name, 1, leader, Distributed(nodes, master, worker=False))
        )
        objects.append(
            statefulset(
                names.worker_statefulset(replica),
                nodes - 1,
                worker,
                Distributed(nodes, master, worker=True),
                start_ordinal=1,
                rolling_update=workers_update,
            )
        )
    return objects
