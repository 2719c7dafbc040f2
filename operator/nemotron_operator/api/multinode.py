"""``spec.multiNode``: how a replica that spans nodes (the plan's ``nodesPerReplica > 1``) is
run: as one LeaderWorkerSet (a group per replica, recreated whole when one of its pods fails), or
as a leader and a worker StatefulSet per replica (docs/rendering.md, "A replica across nodes")."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from nemotron_operator.api.base import ApiModel

MultiNodeBackend = Literal["LeaderWorkerSet", "StatefulSet"]
# A label key: an optional DNS-subdomain prefix and a name of up to 63 characters.
LABEL_KEY = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)
LabelKey = Annotated[str, StringConstraints(min_length=1, max_length=317, pattern=LABEL_KEY)]


class MultiNodeSpec(ApiModel):
    """The workload of a replica that spans nodes; ignored when a replica fits on one node."""

    backend: MultiNodeBackend | None = Field(
        default=None,
        description="LeaderWorkerSet: one LeaderWorkerSet (sigs.k8s.io/lws), a group of pods "
        "per replica, the whole group recreated when one of its pods fails or restarts. "
        "StatefulSet: a leader and a worker StatefulSet per replica (no extra controller; a "
        "failed worker restarts its leader, but a failed leader does not restart the workers). "
        "Unset: LeaderWorkerSet when the cluster serves its CRD, else StatefulSet (the "
        "MultiNodeBackend condition says which and why).",
    )
    exclusive_topology: LabelKey | None = Field(
        default=None,
        description="A node label (an NVLink domain's, a rack's) whose value must be the same "
        "for every pod of a replica and not shared with another replica's pods "
        "(LeaderWorkerSet's exclusive-topology placement). LeaderWorkerSet backend only.",
    )
