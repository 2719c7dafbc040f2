"""LoRA adapters on the real control plane with stand-in vLLMs: the adapters of the spec are
loaded into the running pod, one added later is loaded into the same container (no restart, no
new pod, the pod template unchanged), one removed is unloaded, and ``status.adapters`` says what
the pod serves, read from its ``/v1/models``."""

from __future__ import annotations

from typing import Any

from nemotron_sim.vllm.lora import SIMULATED_RANK
from tests.integration.operator.helpers import (
    NAMESPACE,
    PODS,
    STATEFULSETS,
    apply,
    children,
    deployment,
    status,
    wait_ready,
)
from tests.integration.operator_process import OperatorProcess, ensure_namespace
from tests.kube import KubeHandle


def adapter(name: str) -> dict[str, Any]:
    return {"name": name, "rank": 8, "source": {"huggingFace": {"id": f"example-org/{name}"}}}


def with_adapters(*names: str) -> dict[str, Any]:
    return deployment(
        engine={"lora": {"maxLoras": 2, "maxLoraRank": 16}},
        adapters=[adapter(n) for n in names],
    )


def served(cluster: KubeHandle) -> list[dict[str, Any]] | None:
    found: list[dict[str, Any]] | None = status(cluster).get("adapters")
    return found


def wait_served(cluster: KubeHandle, names: list[str]) -> None:
    expected = [{"pod": "nano-0", "adapters": names}]
    cluster.wait_until(
        lambda: served(cluster) == expected, seconds=45, what=f"status.adapters == {names}"
    )


def vllm_identity(cluster: KubeHandle) -> tuple[str, int, str]:
    [pod] = children(cluster, PODS)
    [container] = [c for c in pod["status"]["containerStatuses"] if c["name"] == "vllm"]
    started = container["state"]["running"]["startedAt"]
    return pod["metadata"]["uid"], container["restartCount"], started


def test_adapters_load_and_unload_without_a_restart(operator_process: OperatorProcess) -> None:
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    apply(cluster, with_adapters("sql"))
    wait_ready(cluster)
    wait_served(cluster, ["sql"])
    pod_before = vllm_identity(cluster)
    [sts] = children(cluster, STATEFULSETS)
    template = sts["spec"]["template"]

    apply(cluster, with_adapters("sql", "law"))
    wait_served(cluster, ["law", "sql"])
    apply(cluster, with_adapters("law"))
    wait_served(cluster, ["law"])

    assert vllm_identity(cluster) == pod_before  # same pod, same container, never restarted
    [sts] = children(cluster, STATEFULSETS)
    assert sts["spec"]["template"] == template
    assert '"name":"law"' in sts["metadata"]["annotations"]["serving.nemotron.io/adapters"]
    assert status(cluster).get("phase") == "Ready"


def test_a_pinned_adapter_is_fetched_by_the_download_step_and_served_offline(
    operator_process: OperatorProcess,
) -> None:
    """Without runtime updates every Hugging Face adapter is fetched by the pod's download step
    into the adapter cache, and vLLM (offline) loads it from there as a --lora-modules entry.
    The stand-in vLLM sees the pod's volumes: it serves the adapter only if the download step
    left an ``adapter_config.json`` at the path the operator named, on a volume both containers
    mount (a wrong path, mount or subPath leaves the pod crash-looping on "No adapter found")."""
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    pinned = adapter("sql") | {
        "source": {"huggingFace": {"id": "example-org/sql", "revision": "v1"}}
    }
    apply(
        cluster,
        deployment(
            engine={"lora": {"maxLoras": 2, "maxLoraRank": 16, "runtimeUpdates": False}},
            adapters=[pinned, adapter("law")],
        ),
    )
    wait_ready(cluster)
    wait_served(cluster, ["law", "sql"])

    [sts] = children(cluster, STATEFULSETS)
    [vllm] = [c for c in sts["spec"]["template"]["spec"]["containers"] if c["name"] == "vllm"]
    assert {"name": "HF_HUB_OFFLINE", "value": "1"} in vllm["env"]
    stub = cluster.call(lambda c: c.stub(NAMESPACE, "nano-0"))
    assert stub is not None
    loaded = {a.name: (a.path, a.rank) for a in stub.lora.loaded.values()}
    assert loaded == {
        "sql": ("/adapter-cache/fetched/example-org--sql/v1", SIMULATED_RANK),
        "law": ("/adapter-cache/fetched/example-org--law/main", SIMULATED_RANK),
    }
