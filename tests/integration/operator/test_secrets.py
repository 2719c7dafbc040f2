"""A canary Hugging Face token never leaves its Secret: not into the operator's DEBUG log, its
Events, annotations, status or metrics."""

from __future__ import annotations

import json
import urllib.request

import pytest

from tests.integration.operator.helpers import (
    CLAIMS,
    EVENTS,
    NAMESPACE,
    NDS,
    PDBS,
    PODS,
    SERVICES,
    STATEFULSETS,
    apply,
    deployment,
    wait_ready,
)
from tests.integration.operator_process import OperatorProcess, ensure_namespace

CANARY = "hf_CANARYtokenNeverLeavesItsSecret0123456789"


@pytest.mark.parametrize("operator_process", [["--log-level=DEBUG"]], indirect=True)
def test_canary_token_appears_nowhere(operator_process: OperatorProcess) -> None:
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    cluster.kubectl(
        "create", "secret", "generic", "hf-token", "-n", NAMESPACE, f"--from-literal=token={CANARY}"
    )
    source = {"huggingFace": {"tokenSecretRef": {"name": "hf-token", "key": "token"}}}
    apply(cluster, deployment(model={"source": source}))
    wait_ready(cluster)
    # The operator did its work at DEBUG (kopf's own debug lines are there too).
    log = operator_process.log()
    assert "DEBUG" in log
    assert "hf-token" in json.dumps(cluster.list(STATEFULSETS, NAMESPACE))  # referenced by name
    assert CANARY not in log
    for key in (NDS, STATEFULSETS, SERVICES, PDBS, PODS, CLAIMS, EVENTS):
        for obj in cluster.list(key, NAMESPACE):
            assert CANARY not in json.dumps(obj), f"{key}: {obj['metadata']['name']}"
    with urllib.request.urlopen(operator_process.metrics_url, timeout=5) as response:  # noqa: S310
        assert CANARY not in response.read().decode()
