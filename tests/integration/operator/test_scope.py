"""What the operator serves: only its namespaces; optional kinds only when their CRD exists;
JSON logs."""

from __future__ import annotations

import json

import pytest

from tests.integration.operator.helpers import (
    NAMESPACE,
    NDS,
    apply,
    deployment,
    status,
    wait_ready,
)
from tests.integration.operator_process import OperatorProcess, ensure_namespace


@pytest.mark.parametrize(
    "operator_process", [["--namespaces=ai", "--log-format=json"]], indirect=True
)
def test_only_served_namespaces_and_no_pod_monitor_without_its_crd(
    operator_process: OperatorProcess,
) -> None:
    cluster = operator_process.cluster
    # The CRD is gone before the operator starts (its discovery, at start, finds no PodMonitors).
    operator_process.stop()
    cluster.kubectl("delete", "crd", "podmonitors.monitoring.coreos.com")
    start = operator_process.mark()
    operator_process.start()
    ensure_namespace(cluster, NAMESPACE)
    ensure_namespace(cluster, "elsewhere")
    other = deployment("other")
    other["metadata"]["namespace"] = "elsewhere"
    apply(cluster, other)
    apply(cluster, deployment(monitoring={"podMonitor": {"enabled": True}}))
    wait_ready(cluster)
    assert not [
        r
        for r in operator_process.requests()[start:]
        if "/monitoring.coreos.com/v1/" in r["path"] and "podmonitors" in r["path"]
    ]
    # The deployment outside --namespaces is left alone, several resyncs later.
    operator_process.wait_reconciles(5)
    assert not (cluster.get(NDS, "elsewhere", "other") or {}).get("status")
    assert status(cluster)["phase"] == "Ready"
    # Every log line is one JSON object.
    lines = [line for line in operator_process.log().splitlines() if line.strip()]
    assert lines
    messages = [json.loads(line)["message"] for line in lines]
    assert any("reconciled ai/nano" in m for m in messages)
