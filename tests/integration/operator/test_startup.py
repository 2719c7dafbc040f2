"""Start-up you can see, on the real control plane with stand-in vLLMs that take configurable
times to load, compile and capture CUDA graphs: the operator reports the phase a pod is in
(LoadingModel names it and since when), the last observed start phase by phase with the plan's
prediction, and the start-up histogram; the second start of the same layout on the same claim
finds the compile cache warm and is reported faster."""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from tests.integration.operator.helpers import (
    NAMESPACE,
    PODS,
    apply,
    children,
    condition,
    deployment,
    restart_and_observe,
    status,
    wait_ready,
)
from tests.integration.operator_process import OperatorProcess, ensure_namespace

LOAD, COMPILE, CAPTURE = 2.0, 6.0, 1.0


def startup_counts(operator: OperatorProcess) -> dict[str, float]:
    with urllib.request.urlopen(operator.metrics_url, timeout=5) as response:  # noqa: S310
        text = response.read().decode()
    return {
        sample.labels["phase"]: sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "nemotron_deployment_startup_seconds_count"
        and sample.labels.get("name") == "nano"
    }


def test_each_phase_is_reported_and_a_warm_compile_cache_starts_faster(
    operator_process: OperatorProcess,
) -> None:
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    cluster.call(lambda c: c.set_startup_seconds(load=LOAD, compile_=COMPILE, capture=CAPTURE))
    # Verification off: the Ready pod is then up as soon as vLLM is (no Verifying phase).
    apply(cluster, deployment(verification={"enabled": False}))
    cluster.wait_until(
        lambda: (
            "Loading (vLLM is loading the weights, compiling"
            in condition(cluster, "Progressing").get("message", "")
        ),
        seconds=30,
        what="Progressing=LoadingModel in the Loading phase",
    )
    progressing = condition(cluster, "Progressing")
    assert progressing["reason"] == "LoadingModel"
    assert " since 20" in progressing["message"]
    assert "the plan expects about" in progressing["message"]
    assert status(cluster)["startup"]["phase"] == "Loading"
    wait_ready(cluster, seconds=60)
    first = status(cluster)["startup"]
    assert "phase" not in first
    cold = first["lastObserved"]
    assert cold["pod"] == "nano-0"
    assert cold["loadingSeconds"] >= LOAD + COMPILE + CAPTURE - 1  # timestamps are to the second
    assert cold["totalSeconds"] >= cold["loadingSeconds"]
    assert "downloadingSeconds" in cold
    assert "schedulingSeconds" in cold
    predicted = first["predicted"]
    assert predicted["totalSeconds"] == (
        predicted["downloadSeconds"] + predicted["loadSeconds"] + predicted["compileSeconds"]
    )
    assert predicted["downloadSeconds"] > 0  # the weights come from Hugging Face
    # Observed when the reconcile that wrote Ready returns, a moment after the status write.
    once = {"scheduling": 1, "downloading": 1, "loading": 1, "total": 1}
    cluster.wait_until(
        lambda: startup_counts(operator_process) == once, seconds=10, what=f"start-up counts {once}"
    )

    # The pod goes; the StatefulSet makes it again on the same claim, whose compile cache holds
    # this layout now: no torch.compile this time.
    [pod] = children(cluster, PODS)
    warm = restart_and_observe(cluster, pod, cold)
    print(f"cold start: {cold}\nwarm start: {warm}\npredicted: {predicted}")  # shown on failure
    assert warm["loadingSeconds"] <= LOAD + CAPTURE + 1
    assert warm["loadingSeconds"] < cold["loadingSeconds"] - COMPILE / 2
    operator_process.wait_reconciles(2)
    assert startup_counts(operator_process)["loading"] == 2
