"""Which workload a replica that spans nodes runs on (``spec.multiNode.backend``), what only a
LeaderWorkerSet can do, and the names LeaderWorkerSet's controller and webhooks use
(``render/leaderworkerset.py`` builds the object)."""

from __future__ import annotations

from nemotron_operator.api import NemotronDeployment, Plan
from nemotron_operator.api.errors import FieldError
from nemotron_operator.render import names as n
from nemotron_operator.render.inputs import RenderOptions
from nemotron_operator.render.names import Names

API_VERSION = "leaderworkerset.x-k8s.io/v1"
KIND = "LeaderWorkerSet"
# What the LWS controller and its pod webhook put on the pods and read from the object.
SET_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
GROUP_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/group-index"
EXCLUSIVE_TOPOLOGY = "leaderworkerset.sigs.k8s.io/exclusive-topology"
LEADER_ADDRESS_ENV = "LWS_LEADER_ADDRESS"
WORKER_INDEX_ENV = "LWS_WORKER_INDEX"


def multi_node_backend(deployment: NemotronDeployment, options: RenderOptions) -> str:
    """``spec.multiNode.backend``, else LeaderWorkerSet where its CRD is served."""
    chosen = deployment.spec.multi_node.backend
    if chosen is not None:
        return chosen
    return "LeaderWorkerSet" if options.leader_worker_set_served else "StatefulSet"


def uses_leader_worker_set(
    deployment: NemotronDeployment, plan: Plan, options: RenderOptions
) -> bool:
    """A replica spans nodes and runs on a LeaderWorkerSet (else: StatefulSets)."""
    backend = multi_node_backend(deployment, options)
    return plan.nodes_per_replica > 1 and backend == "LeaderWorkerSet"


def multi_node_errors(
    deployment: NemotronDeployment, plan: Plan, options: RenderOptions
) -> list[FieldError]:
    """What only a LeaderWorkerSet can do, asked of StatefulSets."""
    if plan.nodes_per_replica == 1 or uses_leader_worker_set(deployment, plan, options):
        return []
    why = (
        "spec.multiNode.backend is StatefulSet"
        if deployment.spec.multi_node.backend == "StatefulSet"
        else "the cluster serves no LeaderWorkerSet CRD (install LWS, sigs.k8s.io/lws)"
    )
    errors = []
    if deployment.spec.multi_node.exclusive_topology is not None:
        errors.append(
            FieldError(
                "spec.multiNode.exclusiveTopology",
                f"exclusive placement needs the LeaderWorkerSet backend, but {why}: remove "
                "the field or use spec.multiNode.backend: LeaderWorkerSet",
            )
        )
    rollout = deployment.spec.rollout
    if rollout is not None and rollout.max_surge > 0:
        errors.append(
            FieldError(
                "spec.rollout.maxSurge",
                f"StatefulSets cannot surge, and {why}: set it to 0 or use "
                "spec.multiNode.backend: LeaderWorkerSet",
            )
        )
    return errors


def group_selector(names: Names, replica: int) -> dict[str, str]:
    """The pods of one group (replica), leader and workers, by the labels LWS sets."""
    return {
        **n.serving_selector(names),
        SET_NAME_LABEL: names.leader_worker_set,
        GROUP_INDEX_LABEL: str(replica),
    }
