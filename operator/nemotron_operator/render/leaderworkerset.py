"""The serving LeaderWorkerSet (``spec.multiNode.backend: LeaderWorkerSet``).

One LeaderWorkerSet per deployment, a group per replica, ``size`` = the plan's nodes per replica.
The LWS controller (sigs.k8s.io/lws) makes a leader StatefulSet (one pod per group, node rank 0,
the API server) and a worker StatefulSet per group (``--headless`` ranks), and its pod webhook
injects ``LWS_LEADER_ADDRESS``, ``LWS_GROUP_SIZE`` and ``LWS_WORKER_INDEX`` into every pod: vLLM's
Ray-free multi-node recipe. ``RecreateGroupOnPodRestart``: a pod of a group that restarts or
fails makes the controller delete and recreate the whole group, since the surviving ranks of a
torch.distributed job hang once one is gone. ``startupPolicy: LeaderCreated``: the workers start
with the leader (the leader is Ready only once every rank has joined, so LeaderReady would wait
forever). Rolling updates replace whole groups (maxUnavailable/maxSurge from ``spec.rollout``);
a canary is LWS's partition (groups at or above it take a new template).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nemotron_operator.api import NemotronDeployment, Plan
from nemotron_operator.render import names as n
from nemotron_operator.render import storage
from nemotron_operator.render.adapters import adapters_annotation, runtime_updates
from nemotron_operator.render.engine import Distributed, ServeSettings
from nemotron_operator.render.multinode import (
    API_VERSION,
    EXCLUSIVE_TOPOLOGY,
    KIND,
    LEADER_ADDRESS_ENV,
    WORKER_INDEX_ENV,
)
from nemotron_operator.render.names import Names
from nemotron_operator.render.pod import build_pod_template
from nemotron_operator.render.workload import config_hash, plan_annotation


def _rollout(deployment: NemotronDeployment) -> dict[str, Any] | None:
    rollout = deployment.spec.rollout
    if rollout is None:
        return None  # LWS's defaults: one group at a time, no surge
    replicas = deployment.spec.replicas
    canary = rollout.canary.replicas if rollout.canary is not None else replicas
    return {
        "type": "RollingUpdate",
        "rollingUpdateConfiguration": {
            "maxUnavailable": rollout.max_unavailable,
            "maxSurge": rollout.max_surge,
            "partition": max(0, replicas - canary),
        },
    }


def build_leader_worker_set(
    deployment: NemotronDeployment,
    plan: Plan,
    settings: ServeSettings,
    names: Names,
    *,
    weight_bytes: int,
    extra_hash_inputs: Mapping[str, str],
) -> dict[str, Any]:
    nodes = plan.nodes_per_replica
    gpus = plan.gpus_per_replica // nodes
    master = f"$({LEADER_ADDRESS_ENV})"

    def template(role: str, worker: bool) -> dict[str, Any]:
        labels = {**n.labels(names, n.COMPONENT_SERVING), **n.serving_selector(names, role)}
        pod = build_pod_template(
            deployment,
            plan,
            settings,
            names,
            pod_labels=labels,
            gpus=gpus,
            weight_bytes=weight_bytes,
            distributed=Distributed(nodes, master, worker=worker, rank_env=WORKER_INDEX_ENV),
        )
        pod["metadata"]["annotations"][n.CONFIG_HASH] = config_hash(pod, extra_hash_inputs)
        return pod

    lws_template: dict[str, Any] = {
        "size": nodes,
        "restartPolicy": "RecreateGroupOnPodRestart",
        "leaderTemplate": template(n.ROLE_LEADER, worker=False),
        "workerTemplate": template(n.ROLE_WORKER, worker=True),
    }
    if storage.uses_claim_template(deployment):
        lws_template["volumeClaimTemplates"] = [
            storage.build_volume_claim_template(deployment, names, weight_bytes)
        ]
        lws_template["persistentVolumeClaimRetentionPolicy"] = {
            "whenDeleted": "Delete",
            "whenScaled": "Retain",
        }
    spec: dict[str, Any] = {
        "replicas": deployment.spec.replicas,
        "startupPolicy": "LeaderCreated",
        "leaderWorkerTemplate": lws_template,
    }
    rollout = _rollout(deployment)
    if rollout is not None:
        spec["rolloutStrategy"] = rollout
    annotations = {n.PLAN: plan_annotation(plan)}
    if runtime_updates(deployment):
        annotations[n.ADAPTERS] = adapters_annotation(deployment)
    topology = deployment.spec.multi_node.exclusive_topology
    if topology is not None:
        annotations[EXCLUSIVE_TOPOLOGY] = topology
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {
            "name": names.leader_worker_set,
            "namespace": names.namespace,
            "labels": n.labels(names, n.COMPONENT_SERVING),
            "annotations": annotations,
        },
        "spec": spec,
    }
