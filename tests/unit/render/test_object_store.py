"""Weights streamed from an object store (render/object_store.py): the load flags, the
credentials and endpoint variables, and what a streamed pod does without (no weights volume, no
download, no compile-cache mount)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from nemotron_operator.render import RenderError, object_store
from nemotron_operator.render.output import plan_header
from tests.unit.render.fakes import (
    GIB,
    flag_value,
    make_deployment,
    make_plan,
    pod_spec,
    render,
    vllm,
)

SECRET = "bucket-keys"
S3 = {"uri": "s3://models/nvidia/super", "credentialsSecretRef": {"name": SECRET}}
GS = {"uri": "gs://models/nvidia/super", "credentialsSecretRef": {"name": SECRET}}
MINIO = "http://minio.storage.svc:9000"
ENDPOINT_VARIABLES = (
    "AWS_ENDPOINT_URL",
    "RUNAI_STREAMER_S3_USE_VIRTUAL_ADDRESSING",
    "AWS_EC2_METADATA_DISABLED",
)


def streamed(source: dict[str, Any]) -> dict[str, Any]:
    return {"model": {"source": {"objectStore": source}}}


def variables(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in vllm(objects)["env"]}


def test_the_bucket_uri_is_the_model_with_the_streamer_load_format() -> None:
    args = vllm(render(streamed(S3)))["args"]
    assert args[0] == "s3://models/nvidia/super"
    assert flag_value(args, "--load-format") == "runai_streamer"
    extra = flag_value(args, "--model-loader-extra-config")
    assert extra is not None
    # No concurrency: the streamer's default; the CPU buffer is always bounded.
    assert json.loads(extra) == {"memory_limit": 4 * GIB}


@pytest.mark.parametrize("concurrency", [1, 16, 1024])
def test_concurrency_goes_to_the_loaders_extra_config(concurrency: int) -> None:
    args = vllm(render(streamed(S3 | {"concurrency": concurrency})))["args"]
    extra = flag_value(args, "--model-loader-extra-config")
    assert extra is not None
    assert json.loads(extra) == {"concurrency": concurrency, "memory_limit": 4 * GIB}
    assert " " not in extra  # one compact token, as the golden manifests hold it


def test_other_sources_get_no_streamer_flags_or_variables() -> None:
    for spec in ({}, {"model": {"source": {"pvc": {"claimName": "weights"}}}}):
        deployment = make_deployment(spec)
        assert not object_store.streams(deployment)
        assert object_store.load_args(deployment) == []
        assert object_store.container_env(deployment) == []
        names = set(variables(render(spec)))
        assert not names & {"AWS_ACCESS_KEY_ID", *ENDPOINT_VARIABLES}


def test_credentials_come_from_the_secret_by_reference_only() -> None:
    env = variables(render(streamed(S3)))
    for key, optional in (
        ("AWS_ACCESS_KEY_ID", False),
        ("AWS_SECRET_ACCESS_KEY", False),
        ("AWS_SESSION_TOKEN", True),
    ):
        assert "value" not in env[key]  # never a literal: the kubelet resolves it
        reference = env[key]["valueFrom"]["secretKeyRef"]
        assert reference["name"] == SECRET
        assert reference["key"] == key
        assert reference.get("optional", False) is optional


# (source, AWS_ENDPOINT_URL or None, RUNAI_STREAMER_OVERRIDE_OBJ_PLUGIN or None)
ENDPOINTS = [
    pytest.param(S3, None, None, id="s3-aws"),
    pytest.param(S3 | {"endpoint": MINIO}, MINIO, None, id="s3-compatible"),
    pytest.param(GS, "https://storage.googleapis.com", "s3", id="gs-hmac"),
    pytest.param(GS | {"endpoint": MINIO}, MINIO, "s3", id="gs-own-endpoint"),
]


@pytest.mark.parametrize(("source", "url", "plugin"), ENDPOINTS)
def test_endpoint_and_backend_by_scheme(
    source: dict[str, Any], url: str | None, plugin: str | None
) -> None:
    env = variables(render(streamed(source)))
    parsed = make_deployment(streamed(source)).spec.model.source.object_store
    assert parsed is not None
    assert object_store.endpoint(parsed) == url
    if url is None:
        assert not set(ENDPOINT_VARIABLES) & set(env)
    else:
        assert env["AWS_ENDPOINT_URL"]["value"] == url
        assert env["RUNAI_STREAMER_S3_USE_VIRTUAL_ADDRESSING"]["value"] == "0"
        assert env["AWS_EC2_METADATA_DISABLED"]["value"] == "true"
    if plugin is None:
        assert "RUNAI_STREAMER_OVERRIDE_OBJ_PLUGIN" not in env
    else:
        assert env["RUNAI_STREAMER_OVERRIDE_OBJ_PLUGIN"]["value"] == plugin


def test_a_streamed_pod_has_no_weights_volume_download_or_compile_cache() -> None:
    objects = render(streamed(S3))
    spec = pod_spec(objects)
    assert "initContainers" not in spec
    assert {v["name"] for v in spec["volumes"]}.isdisjoint({"weights"})
    mounts = {m["mountPath"] for m in vllm(objects)["volumeMounts"]}
    assert "/models" not in mounts
    assert not any("compile" in path for path in mounts)
    env = variables(objects)
    assert "VLLM_CACHE_ROOT" not in env
    assert "TRITON_CACHE_DIR" not in env
    kinds = {o["kind"] for o in objects}
    assert "PersistentVolumeClaim" not in kinds
    statefulset = next(o for o in objects if o["kind"] == "StatefulSet")
    assert "volumeClaimTemplates" not in statefulset["spec"]


def test_a_hugging_face_pod_keeps_its_volume_and_compile_cache() -> None:
    """The contrast that makes the test above able to fail."""
    objects = render({})
    assert "initContainers" in pod_spec(objects)
    mounts = {m["mountPath"] for m in vllm(objects)["volumeMounts"]}
    assert {"/models", "/compile-cache"} <= mounts
    assert "VLLM_CACHE_ROOT" in variables(objects)


def memory_request_gib(objects: list[dict[str, Any]]) -> int:
    quantity = vllm(objects)["resources"]["requests"]["memory"]
    assert quantity.endswith("Gi")
    return int(quantity.removesuffix("Gi"))


# (GPUs in the pod, checkpoint bytes, GiB added to the memory request): one buffer per worker
# process, none larger than the checkpoint.
BUFFERS = [
    pytest.param(4, int(231.8 * GIB), 16, id="super-tp4"),
    pytest.param(1, int(58.9 * GIB), 4, id="nano-1-gpu"),
    pytest.param(8, int(231.8 * GIB), 32, id="8-gpus"),
    pytest.param(2, int(2.5 * GIB), 5, id="checkpoint-smaller-than-the-buffer"),
]


@pytest.mark.parametrize(("gpus", "weight_bytes", "added_gib"), BUFFERS)
def test_streaming_adds_one_cpu_buffer_per_gpu_to_the_memory_request(
    gpus: int, weight_bytes: int, added_gib: int
) -> None:
    plan = make_plan(
        tensor_parallel=gpus,
        gpus_per_replica=gpus,
        total_gpus=gpus,
        weights_total_bytes=weight_bytes,
    )
    downloaded = memory_request_gib(render({}, plan=plan))
    assert memory_request_gib(render(streamed(S3), plan=plan)) == downloaded + added_gib
    assert object_store.memory_request_bytes(
        make_deployment(streamed(S3)), gpus=gpus, weight_bytes=weight_bytes
    ) == gpus * min(4 * GIB, weight_bytes)


def architecture(vocab: int, hidden: int) -> dict[str, Any]:
    return {
        "layerPattern": "M*M-",
        "hiddenSize": hidden,
        "numAttentionHeads": 32,
        "numKeyValueHeads": 8,
        "headDim": 128,
        "mambaNumHeads": 64,
        "mambaHeadDim": 64,
        "ssmStateSize": 128,
        "mambaNGroups": 8,
        "vocabSize": vocab,
        "maxPositionEmbeddings": 131072,
        "parameters": {"routedExperts": 0, "other": 10**10},
    }


@pytest.mark.parametrize(
    ("vocab", "hidden", "buffer_gib"),
    [
        (131072, 4096, 4),  # 1 GiB embedding: the floor
        (131072, 8192, 4),  # 2 GiB (Ultra's): still the floor
        (262144, 12288, 6),  # 6 GiB embedding: the buffer grows to hold it
        (300000, 12288, 7),  # 6.87 GiB: rounded up to a whole GiB
    ],
)
def test_the_buffer_holds_a_custom_architectures_embedding_matrix(
    vocab: int, hidden: int, buffer_gib: int
) -> None:
    spec = streamed(S3)
    spec["model"] |= {"id": "org/custom", "architecture": architecture(vocab, hidden)}
    deployment = make_deployment(spec)
    assert object_store.buffer_bytes(deployment) == buffer_gib * GIB
    assert buffer_gib * GIB >= vocab * hidden * 2  # the streamer refuses less than the largest


@pytest.mark.parametrize(
    ("extra", "field", "words"),
    [
        ({"model": {"revision": "abc123"}}, "spec.model.revision", "remove spec.model.revision"),
        (
            {"storage": {"cache": {"size": "500Gi"}}},
            "spec.storage",
            "does not apply when weights are streamed",
        ),
        (
            {"engine": {"extraArgs": ["--load-format", "safetensors"]}},
            "spec.engine.extraArgs[0]",
            "--load-format is set from spec.model.source.objectStore",
        ),
        (
            {"engine": {"extraArgs": ["--enforce-eager", '--model-loader-extra-config={"a":1}']}},
            "spec.engine.extraArgs[1]",
            "streamer's CPU buffer",
        ),
    ],
)
def test_what_a_streamed_deployment_refuses(extra: dict[str, Any], field: str, words: str) -> None:
    spec = streamed(S3)
    for key, value in extra.items():
        spec[key] = {**spec.get(key, {}), **value}
    with pytest.raises(RenderError) as refused:
        render(spec)
    assert refused.value.field == field
    assert words in str(refused.value)


def test_the_plan_header_shows_the_buffers_in_the_memory_request() -> None:
    plan = make_plan(weights_total_bytes=int(2.5 * GIB))  # 4 GPUs, a checkpoint under 4 GiB
    header = plan_header(make_deployment(streamed(S3)), plan)
    assert (
        "# Streamed from s3://models/nvidia/super: CPU buffer 4.0 GiB (memory_limit) x 4 "
        "worker(s) per pod, no larger than the checkpoint: memory request + 10.0 GiB\n"
    ) in header
    assert "Streamed from" not in plan_header(make_deployment({}), plan)
