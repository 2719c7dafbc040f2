"""The download Job of a shared cache (render/download_job.py): rendered only for a shared cache
filled from Hugging Face, its container the init container's (same function), the serving pods
without the base-weights download, a new Job name for a new revision."""

from __future__ import annotations

from typing import Any

from nemotron_operator.render import download_job, names
from nemotron_operator.render.storage import DOWNLOAD_SCRIPT
from tests.unit.render.fakes import GIB, make_plan, of_kind, pod_spec, render

SHARED: dict[str, Any] = {"storage": {"cache": {"shared": True, "accessModes": ["ReadWriteMany"]}}}
TOKEN = {"huggingFace": {"tokenSecretRef": {"name": "hf", "key": "token"}}}
LIMITS = {"maxLoras": 2, "maxLoraRank": 16, "runtimeUpdates": False}
ADAPTER = {"name": "sql", "rank": 8, "source": {"huggingFace": {"id": "org/sql", "revision": "v2"}}}


def job_of(objects: list[dict[str, Any]]) -> dict[str, Any]:
    (job,) = of_kind(objects, "Job")
    return dict(job)


def env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def test_a_shared_cache_is_filled_by_one_job_and_the_pods_do_not_download() -> None:
    objects = render(SHARED | {"replicas": 3, "model": {"source": TOKEN}}, name="chat")
    job = job_of(objects)
    (claim,) = of_kind(objects, "PersistentVolumeClaim")
    assert job["metadata"]["name"].startswith("chat-download-")
    assert job["metadata"]["labels"][names.COMPONENT] == names.COMPONENT_DOWNLOAD
    assert job["spec"]["backoffLimit"] == download_job.BACKOFF_LIMIT
    assert job["spec"]["activeDeadlineSeconds"] > download_job.DEADLINE_BASE_SECONDS
    template = job["spec"]["template"]
    assert template["metadata"]["labels"] == job["metadata"]["labels"]
    assert template["spec"]["restartPolicy"] == "Never"
    (container,) = template["spec"]["containers"]
    assert container["command"] == ["sh", "-c", DOWNLOAD_SCRIPT]
    variables = env(container)
    assert variables["MODEL_ID"] == "nvidia/NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-BF16"
    assert variables["HF_TOKEN"] == {"secretKeyRef": {"name": "hf", "key": "token"}}
    assert "ADAPTERS" not in variables
    assert container["terminationMessagePolicy"] == "FallbackToLogsOnError"
    volume = next(v for v in template["spec"]["volumes"] if v["name"] == "weights")
    assert volume["persistentVolumeClaim"] == {"claimName": claim["metadata"]["name"]}
    # The serving pods mount the same claim and download nothing.
    assert "initContainers" not in pod_spec(objects)


def test_the_job_runs_what_the_init_container_of_a_claim_per_pod_runs() -> None:
    per_pod = render({"model": {"source": TOKEN}})
    (init,) = pod_spec(per_pod)["initContainers"]
    assert of_kind(per_pod, "Job") == []
    shared = render(SHARED | {"model": {"source": TOKEN}})
    (container,) = job_of(shared)["spec"]["template"]["spec"]["containers"]
    without_policy = {k: v for k, v in container.items() if k != "terminationMessagePolicy"}
    assert without_policy == init
    assert (
        job_of(shared)["spec"]["template"]["spec"]["securityContext"]
        == pod_spec(per_pod)["securityContext"]
    )


def test_no_job_without_a_hub_download() -> None:
    claim = render({"model": {"source": {"pvc": {"claimName": "w"}}}})
    assert of_kind(claim, "Job") == []
    assert of_kind(render({}), "Job") == []


def test_adapters_stay_with_the_serving_pods() -> None:
    objects = render(SHARED | {"engine": {"lora": LIMITS}, "adapters": [ADAPTER]})
    (init,) = pod_spec(objects)["initContainers"]
    variables = env(init)
    assert variables["MODEL_ID"] == ""  # the Job fetched the base weights
    assert variables["ADAPTERS"].startswith("org/sql v2 ")
    assert "ADAPTERS" not in env(job_of(objects)["spec"]["template"]["spec"]["containers"][0])


def test_a_new_revision_is_a_new_job_and_the_deadline_grows_with_the_weights() -> None:
    main = job_of(render(SHARED))
    pinned = job_of(render(SHARED | {"model": {"revision": "v1.1"}}))
    assert main["metadata"]["name"] != pinned["metadata"]["name"]
    assert pinned["metadata"]["annotations"][names.MODEL_REVISION] == "v1.1"
    assert job_of(render(SHARED))["metadata"]["name"] == main["metadata"]["name"]  # stable
    small = job_of(render(SHARED, plan=make_plan(weights_total_bytes=10 * GIB)))
    large = job_of(render(SHARED, plan=make_plan(weights_total_bytes=500 * GIB)))
    assert small["spec"]["activeDeadlineSeconds"] < large["spec"]["activeDeadlineSeconds"]
    assert download_job.deadline_seconds(253_000_000_000) == 1800 + 12_650
