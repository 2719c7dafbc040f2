"""Weights streamed from an object store (spec.model.source.objectStore) on the real control
plane: a pod whose credentials Secret is missing is held by the kubelet in
CreateContainerConfigError, which the operator's condition reports with the field to fix; once
the Secret exists the pod starts — no download init container, no weight claim — streams (the
stand-in vLLM refuses to start without the credentials in its environment) and turns Ready.
"""

from __future__ import annotations

from typing import Any

from tests.integration.operator.helpers import (
    CLAIMS,
    NAMESPACE,
    NANO,
    PODS,
    STATEFULSETS,
    apply,
    children,
    condition,
    deployment,
    status,
    wait_ready,
)
from tests.integration.operator_process import OperatorProcess, ensure_namespace

URI = f"s3://models/{NANO}"
SECRET = "s3-credentials"
SOURCE = {
    "objectStore": {
        "uri": URI,
        "credentialsSecretRef": {"name": SECRET},
        "endpoint": "http://minio.storage.svc:9000",
        "concurrency": 16,
    }
}


def _vllm_waiting(pod: dict[str, Any]) -> dict[str, Any]:
    for container in (pod.get("status") or {}).get("containerStatuses") or []:
        if container.get("name") == "vllm":
            return dict((container.get("state") or {}).get("waiting") or {})
    return {}


def test_streamed_weights_wait_for_the_secret_then_serve_without_a_download(
    operator_process: OperatorProcess,
) -> None:
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    apply(cluster, deployment(model={"id": NANO, "source": SOURCE}))
    cluster.wait_until(
        lambda: condition(cluster, "Ready").get("reason") == "SecretNotFound",
        what="Ready=False SecretNotFound",
    )
    (pod,) = children(cluster, PODS)
    waiting = _vllm_waiting(pod)
    assert waiting["reason"] == "CreateContainerConfigError"
    assert waiting["message"] == f'secret "{SECRET}" not found'
    ready = condition(cluster, "Ready")
    assert f'container vllm: secret "{SECRET}" not found' in ready["message"]
    assert "spec.model.source.objectStore.credentialsSecretRef" in ready["message"]

    cluster.kubectl(
        "create",
        "secret",
        "generic",
        SECRET,
        "-n",
        NAMESPACE,
        "--from-literal=AWS_ACCESS_KEY_ID=AKIAEXAMPLE",
        "--from-literal=AWS_SECRET_ACCESS_KEY=example-secret",
    )
    wait_ready(cluster)
    (statefulset,) = children(cluster, STATEFULSETS)
    template = statefulset["spec"]["template"]["spec"]
    assert "initContainers" not in template
    assert "volumeClaimTemplates" not in statefulset["spec"]
    assert children(cluster, CLAIMS) == []
    args = template["containers"][0]["args"]
    assert args[0] == URI
    assert args[args.index("--load-format") + 1] == "runai_streamer"
    extra = '{"concurrency":16,"memory_limit":4294967296}'  # a 4 GiB CPU buffer per worker
    assert args[args.index("--model-loader-extra-config") + 1] == extra
    gpus = int(template["containers"][0]["resources"]["limits"]["nvidia.com/gpu"])
    # 16 GiB + 8 GiB per GPU + /dev/shm (8 GiB at least), and the streamer's 4 GiB per GPU.
    memory = 16 + 8 * gpus + max(8, 4 * gpus) + 4 * gpus
    assert template["containers"][0]["resources"]["requests"]["memory"] == f"{memory}Gi"
    startup = status(cluster)["startup"]
    # 63.2 GB of Nano BF16 weights: no download, streamed at the prediction's 1 GB/s.
    assert startup["predicted"]["downloadSeconds"] == 0
    assert startup["predicted"]["loadSeconds"] == 64
    observed = startup["lastObserved"]
    assert "downloadingSeconds" not in observed  # no download phase at all
    assert observed["loadingSeconds"] >= 0
