"""Weights prepared once (issue 21): with a shared cache the download runs once as a Job before
the serving pods start, on the real control plane (kube-controller-manager's Job controller runs
it; the stand-in kubelet runs its pod to completion: nemotron_sim/kubelet/batch_pods.py).

Three replicas: one Job, one download; the serving pods have no download init container and are
created only after the Job completed; status says the weights are downloading meanwhile. A
revision the stand-in Hub does not have (the ``missing`` prefix) fails every attempt: the
condition carries the Job's reason and the failing pod's message (hf's error).

A node-local cache (``spec.storage.cache.nodeLocal``, a hostPath): the second start on a node
skips the download.
"""

from __future__ import annotations

import time
import uuid
from datetime import datetime

from nemotron_sim.kubeapi.resources import ResourceKey
from tests.integration.operator.helpers import (
    CLAIMS,
    NAMESPACE,
    PODS,
    STATEFULSETS,
    apply,
    children,
    condition,
    deployment,
    restart_and_observe,
    status,
    wait_ready,
)
from tests.integration.operator_process import OperatorProcess, ensure_namespace

JOBS = ResourceKey("batch", "v1", "jobs")
SHARED = {"cache": {"shared": True, "accessModes": ["ReadWriteMany"]}}
DOWNLOAD_SECONDS = 3.0


def _time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def test_one_download_job_for_three_replicas_then_the_pods_start(
    operator_process: OperatorProcess,
) -> None:
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    cluster.call(lambda c: c.set_startup_seconds(download=DOWNLOAD_SECONDS))
    started = time.monotonic()
    apply(cluster, deployment(replicas=3, storage=SHARED, verification={"enabled": False}))
    cluster.wait_until(
        lambda: condition(cluster, "Progressing").get("reason") == "DownloadingWeights",
        seconds=30,
        what="Progressing=DownloadingWeights",
    )
    message = condition(cluster, "Progressing")["message"]
    print(f"while downloading: {message}")
    assert "downloads nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16@main" in message
    assert condition(cluster, "Ready")["reason"] == "DownloadingWeights"
    assert children(cluster, STATEFULSETS) == []  # no serving pod before the weights
    wait_ready(cluster, seconds=90)
    print(f"shared cache, 3 replicas: Ready {time.monotonic() - started:.1f} s after apply")
    jobs = children(cluster, JOBS)
    assert len(jobs) == 1, [j["metadata"]["name"] for j in jobs]
    job = jobs[0]
    assert job["status"].get("succeeded") == 1
    assert not job["status"].get("failed")
    completed = _time(job["status"]["completionTime"])
    pods = [p for p in children(cluster, PODS) if p["metadata"]["name"].startswith("nano-")]
    serving = [p for p in pods if "job-name" not in p["metadata"]["labels"]]
    assert len(serving) == 3
    assert len(pods) == 4  # and one download pod: the weights were fetched once
    for pod in serving:
        assert "initContainers" not in pod["spec"]  # no download in the serving pods
        assert _time(pod["metadata"]["creationTimestamp"]) >= completed
    statefulset = children(cluster, STATEFULSETS)[0]
    assert _time(statefulset["metadata"]["creationTimestamp"]) >= completed
    assert status(cluster)["phase"] == "Ready"

    # A new revision is a new Job; the old one is pruned. The stand-in Hub has no "missing-…"
    # revision: every attempt fails, and the condition says why.
    body = deployment(replicas=3, storage=SHARED, verification={"enabled": False})
    body["spec"]["model"]["revision"] = "missing-rev"
    cluster.call(lambda c: c.set_startup_seconds(download=0.05))
    apply(cluster, body)
    cluster.wait_until(
        lambda: condition(cluster, "Degraded").get("reason") == "DownloadFailed",
        seconds=90,
        what="Degraded=DownloadFailed",
    )
    failed = condition(cluster, "Degraded")["message"]
    print(f"failed download: {failed}")
    assert "BackoffLimitExceeded" in failed
    assert "RevisionNotFoundError" in failed
    assert "missing-rev" in failed
    assert "kubectl delete job" in failed
    assert condition(cluster, "Progressing")["status"] == "False"
    names = [j["metadata"]["name"] for j in children(cluster, JOBS)]
    assert len(names) == 1, names
    assert names[0] != job["metadata"]["name"]  # the old revision's Job was pruned
    # The serving pods of the old revision were held as they were: still three, still serving.
    assert status(cluster)["readyReplicas"] == 3


def test_a_node_local_cache_makes_the_second_start_on_a_node_skip_the_download(
    operator_process: OperatorProcess,
) -> None:
    """spec.storage.cache.nodeLocal: the weights in a directory of the node (the stand-in
    kubelet's per-node directory for a hostPath); the second start on that node finds the
    download's marker, and its Downloading phase is about 0 s instead of the download's."""
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    # A load of 1.5 s: the second start's readyAt (to the second) differs from the first's.
    cluster.call(lambda c: c.set_startup_seconds(download=DOWNLOAD_SECONDS, load=1.5))
    # A directory of its own: the simulated nodes' disks outlive a test in the shared cluster.
    local = {"cache": {"nodeLocal": {"path": f"/var/lib/nemotron/{uuid.uuid4().hex[:8]}"}}}
    # One B200 node in the cluster: every start of this pod is on the same node.
    only_b200 = {"gpu": {"products": ["NVIDIA-B200"]}}
    apply(
        cluster,
        deployment(storage=local, capacity=only_b200, verification={"enabled": False}),
    )
    wait_ready(cluster, seconds=60)
    cold = status(cluster)["startup"]["lastObserved"]
    [pod] = [p for p in children(cluster, PODS) if "job-name" not in p["metadata"]["labels"]]
    node = pod["spec"]["nodeName"]
    volume = next(v for v in pod["spec"]["volumes"] if v["name"] == "weights")
    assert volume["hostPath"]["type"] == "DirectoryOrCreate"
    assert [c["name"] for c in pod["spec"]["initContainers"]] == ["cache-owner", "download"]
    assert children(cluster, CLAIMS) == []
    warm = restart_and_observe(cluster, pod, cold)
    print(f"node-local cache: first start {cold}\nsecond start on {node}: {warm}")
    [again] = [p for p in children(cluster, PODS) if "job-name" not in p["metadata"]["labels"]]
    assert again["spec"]["nodeName"] == node
    assert cold["downloadingSeconds"] >= DOWNLOAD_SECONDS - 1  # timestamps are to the second
    assert warm["downloadingSeconds"] <= 1
