"""What the kubelet of a lost node cannot do: reach kube-apiserver.

The simulated nodes share one kubelet (kubelet.py). While a node's heartbeat is stopped
(``NodeAgent.stop_heartbeat``: its kubelet is cut off or the machine is down), the pod changes
of that node are not passed to the kubelet: it does not re-report a status kube-controller-manager
overwrote, does not start a pod bound there, and does not confirm the deletion of a pod marked
for deletion — so such a pod stays ``Terminating`` until someone else removes it (pod GC on a
node tainted ``node.kubernetes.io/out-of-service``, or ``kubectl delete pod --force``), as on a
real cluster. The node's stand-ins keep running meanwhile (a partitioned node's containers do);
a pod object deleted outright is passed on, and its stand-ins stop (a shut-down node's are gone
anyway). When the heartbeat resumes, each pod of the node is passed to the kubelet again, as a
kubelet that comes back lists its pods.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nemotron_sim.kubeapi.kinds import PODS
from nemotron_sim.kubeapi.resources import WatchEvent
from nemotron_sim.kubeapi.store import ObjectStore


def _node(pod: dict[str, Any]) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


class LostNodeGate:
    """Passes pod events to the kubelet (``forward``), except those of lost nodes."""

    def __init__(
        self,
        store: ObjectStore,
        forward: Callable[[WatchEvent], None],
        lost: Callable[[str], bool],
    ) -> None:
        self._store, self._forward, self._lost = store, forward, lost

    def observe(self, event: WatchEvent) -> None:
        if event.key == PODS and event.type != "DELETED" and self._lost(_node(event.obj)):
            return
        self._forward(event)

    def node_back(self, node: str) -> None:
        """The node's kubelet reaches kube-apiserver again: it acts on its pods as they are."""
        for pod in list(self._store.scan(PODS)):
            if _node(pod) == node:
                self._forward(WatchEvent("MODIFIED", PODS, pod))
