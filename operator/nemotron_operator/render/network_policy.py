"""``spec.networkPolicy``: NetworkPolicies around the serving pods (opt-in).

- ``<name>-api`` selects the serving leaders (the pods that run vLLM's API server) and allows
  ingress to the API port only from pods in the namespaces of ``apiFromNamespaces`` and the
  operator's own (its readiness check and metrics scrapes use that port), matched by the
  ``kubernetes.io/metadata.name`` label kube-apiserver puts on every namespace.
- ``<name>-ranks-<r>``, one per multi-node replica, selects that replica's pods (leader and
  workers) and allows any port from that replica's pods only: torch.distributed's rendezvous
  (``--master-port`` 29501) is one fixed port, but the NCCL, Gloo and vLLM message-queue
  sockets between ranks take ports chosen at run time, so the ranks are fenced by who may
  connect, not by port. Replica 0's ranks cannot reach replica 1's.

Policies add up: a pod a policy selects takes only what some policy allows. So a worker is
reachable only by its replica, a leader by its replica and on the API port by the named
namespaces. Nothing here is enforced by kube-apiserver: a CNI that implements NetworkPolicy
(Calico, Cilium, …) does it; without one the objects are stored and have no effect.
"""

from __future__ import annotations

from typing import Any

from nemotron_operator.api import NemotronDeployment, Plan
from nemotron_operator.render import names as n
from nemotron_operator.render.engine import SERVE_PORT
from nemotron_operator.render.multinode import group_selector
from nemotron_operator.render.names import Names

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"  # set by kube-apiserver on every namespace


def _policy(
    names: Names, name: str, selector: dict[str, str], ingress: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {
            "name": name,
            "namespace": names.namespace,
            "labels": n.labels(names, n.COMPONENT_SERVING),
        },
        "spec": {
            "podSelector": {"matchLabels": selector},
            "policyTypes": ["Ingress"],
            "ingress": ingress,
        },
    }


def build_network_policies(
    deployment: NemotronDeployment,
    plan: Plan,
    names: Names,
    operator_namespace: str | None,
    *,
    leader_worker_set: bool = False,
) -> list[dict[str, Any]]:
    spec = deployment.spec.network_policy
    if not spec.enabled:
        return []
    allowed = sorted(
        {*spec.api_from_namespaces, *([operator_namespace] if operator_namespace else [])}
    )
    api = _policy(
        names,
        n.with_suffix(names.base, "api"),
        n.serving_selector(names, n.ROLE_LEADER),
        [
            {
                "from": [
                    {
                        "namespaceSelector": {
                            "matchExpressions": [
                                {"key": NAMESPACE_NAME_LABEL, "operator": "In", "values": allowed}
                            ]
                        }
                    }
                ],
                "ports": [{"protocol": "TCP", "port": SERVE_PORT}],
            }
        ],
    )
    policies = [api]
    if plan.nodes_per_replica > 1:
        for replica in range(deployment.spec.replicas):
            ranks = (
                group_selector(names, replica)  # the labels LWS puts on a group's pods
                if leader_worker_set
                else n.serving_selector(names, replica=replica)
            )
            policies.append(
                _policy(
                    names,
                    n.with_suffix(names.base, f"ranks-{replica}"),
                    ranks,
                    [{"from": [{"podSelector": {"matchLabels": dict(ranks)}}]}],
                )
            )
    return policies
