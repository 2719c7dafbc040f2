"""spec.networkPolicy through the running operator on the real control plane: turned on, the
operator applies the NetworkPolicy (owned by the deployment, its namespaces as asked, the
operator's own added); turned off, it deletes it. The deployment stays Ready: the simulated
cluster has no CNI enforcing NetworkPolicy (docs/rendering.md)."""

from __future__ import annotations

import time

from nemotron_sim.kubeapi.resources import ResourceKey
from tests.integration.operator.helpers import (
    NAMESPACE,
    NDS,
    apply,
    children,
    deployment,
    wait_ready,
)
from tests.integration.operator_process import OperatorProcess, ensure_namespace

NETWORK_POLICIES = ResourceKey("networking.k8s.io", "v1", "networkpolicies")


def test_the_operator_applies_and_removes_the_network_policy(
    operator_process: OperatorProcess,
) -> None:
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    fenced = {"enabled": True, "apiFromNamespaces": ["clients"]}
    started = time.monotonic()
    apply(cluster, deployment(networkPolicy=fenced))
    wait_ready(cluster)
    took = time.monotonic() - started
    print(f"\nFIGURE Ready with spec.networkPolicy on: {took:.1f} s")
    (policy,) = children(cluster, NETWORK_POLICIES)
    owner = cluster.get(NDS, NAMESPACE, "nano")
    assert owner is not None
    assert policy["metadata"]["name"] == "nano-api"
    assert policy["metadata"]["ownerReferences"][0]["uid"] == owner["metadata"]["uid"]
    (expression,) = policy["spec"]["ingress"][0]["from"][0]["namespaceSelector"]["matchExpressions"]
    # The operator's own namespace (its --lease-namespace: POD_NAMESPACE in a pod) is added.
    assert "clients" in expression["values"]
    assert len(expression["values"]) == 2, expression
    apply(cluster, deployment(networkPolicy={"enabled": False, "apiFromNamespaces": []}))
    cluster.wait_until(
        lambda: children(cluster, NETWORK_POLICIES) == [], seconds=30, what="policy deleted"
    )
    wait_ready(cluster)
