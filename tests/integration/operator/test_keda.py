"""autoscaling.provider KEDA on the real control plane, against KEDA's own ScaledObject CRD
(github.com/kedacore/keda/v2 v2.20.2; no KEDA controller runs): the operator applies a
ScaledObject owned by the deployment and never writes spec.replicas itself; without the CRD the
Autoscaling condition names it and nothing is asked of keda.sh; back on the built-in autoscaler,
the operator writes spec.replicas again (so the first check could fail)."""

from __future__ import annotations

import pytest

from nemotron_sim.kubeapi.resources import ResourceKey
from tests.integration.operator.helpers import (
    NAMESPACE,
    NDS,
    apply,
    condition,
    deployment,
    status,
    wait_ready,
)
from tests.integration.operator_process import OperatorProcess, ensure_namespace

SCALED_OBJECTS = ResourceKey("keda.sh", "v1alpha1", "scaledobjects")
KEDA_CRD = "scaledobjects.keda.sh"
PROMETHEUS = {"serverAddress": "http://prom.monitoring:9090", "query": "sum(q)", "threshold": 2}
SCRAPE_ARGS = ["--scrape-seconds=0.3", "--scrape-timeout-seconds=0.5"]


def spec_replicas(operator: OperatorProcess) -> int:
    return int((operator.cluster.get(NDS, NAMESPACE, "nano") or {})["spec"]["replicas"])


def replica_writes(operator: OperatorProcess, since: int) -> list[str]:
    """The operator's writes of spec.replicas: the scale subresource (or a merge patch)."""
    return [
        f"{r['method']} {r['path']}"
        for r in operator.writes(since)
        if "/nemotrondeployments/" in r["path"] and r["path"].endswith("/scale")
    ]


@pytest.mark.parametrize("operator_process", [SCRAPE_ARGS], indirect=True)
def test_keda_scaled_object_is_owned_the_operator_leaves_replicas_and_a_missing_crd_is_named(
    operator_process: OperatorProcess,
) -> None:
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    start = operator_process.mark()
    # spec.replicas 1 below minReplicas 2: the built-in autoscaler would correct it at its first
    # tick; with KEDA only KEDA may.
    keda = {
        "provider": "KEDA",
        "minReplicas": 2,
        "maxReplicas": 3,
        "keda": {"prometheus": PROMETHEUS},
    }
    apply(cluster, deployment(replicas=1, autoscaling=keda))
    wait_ready(cluster)
    uid = cluster.get(NDS, NAMESPACE, "nano")["metadata"]["uid"]  # type: ignore[index]
    scaled = cluster.get(SCALED_OBJECTS, NAMESPACE, "nano")
    assert scaled is not None, "no ScaledObject: KEDA's CRD refused it, or it was not applied"
    (owner,) = scaled["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"], owner["controller"]) == ("NemotronDeployment", uid, True)
    assert scaled["spec"]["scaleTargetRef"] == {
        "apiVersion": "serving.nemotron.io/v1alpha1",
        "kind": "NemotronDeployment",
        "name": "nano",
    }
    assert (scaled["spec"]["minReplicaCount"], scaled["spec"]["maxReplicaCount"]) == (2, 3)
    autoscaling = condition(cluster, "Autoscaling")
    assert (autoscaling["status"], autoscaling["reason"]) == ("True", "ScaledObjectApplied")
    # Scraped (the autoscaler's tick follows each scrape), then several resyncs more.
    cluster.wait_until(lambda: bool(status(cluster).get("throughput")), what="a scrape")
    operator_process.wait_reconciles(2)
    assert replica_writes(operator_process, start) == []
    assert spec_replicas(operator_process) == 1

    # Without KEDA's CRD: the condition names it, and nothing is asked of keda.sh any more.
    cluster.kubectl("delete", "crd", KEDA_CRD)
    cluster.wait_until(
        lambda: condition(cluster, "Autoscaling").get("reason") == "CRDNotInstalled",
        what="Autoscaling=False CRDNotInstalled",
    )
    missing = condition(cluster, "Autoscaling")
    assert missing["status"] == "False"
    assert "ScaledObject (scaledobjects.keda.sh, v1alpha1)" in missing["message"]
    assert status(cluster)["phase"] == "Ready"  # serving goes on
    quiet = operator_process.mark()
    operator_process.wait_reconciles(2)
    assert [
        r["path"] for r in operator_process.requests()[quiet:] if "/keda.sh/" in r["path"]
    ] == []
    assert replica_writes(operator_process, start) == []

    # The control: the built-in autoscaler does write spec.replicas (to minReplicas 2).
    apply(cluster, deployment(replicas=1, autoscaling={"minReplicas": 2, "maxReplicas": 3}))
    cluster.wait_until(lambda: spec_replicas(operator_process) == 2, what="scaled to 2")
    assert replica_writes(operator_process, start)
    cluster.wait_until(
        lambda: not condition(cluster, "Autoscaling"), what="the Autoscaling condition gone"
    )
