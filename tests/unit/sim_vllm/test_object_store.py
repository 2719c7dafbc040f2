"""The stand-in vLLM checks a model streamed from a bucket as vLLM and the Run:ai streamer do
(nemotron_sim/vllm/object_store.py): the load format, the loader's extra config, credentials."""

from __future__ import annotations

import json
from collections.abc import Mapping

import pytest

from nemotron_sim.kubelet.stand_ins import declared_secret_env
from nemotron_sim.vllm import object_store, parse_serve_argv
from nemotron_sim.vllm.__main__ import main
from nemotron_sim.vllm.args import StubVllmArgumentError, StubVllmStartError

S3 = "s3://models/nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
GS = "gs://models/nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
KEYS = {"AWS_ACCESS_KEY_ID": "AKIAEXAMPLE", "AWS_SECRET_ACCESS_KEY": "example"}


def check(model: str, *flags: str, env: Mapping[str, str] = KEYS) -> None:
    object_store.check(parse_serve_argv(["vllm", "serve", model, *flags]), env)


def start_error(model: str, *flags: str, env: Mapping[str, str] = KEYS) -> str:
    with pytest.raises(StubVllmStartError) as caught:
        check(model, *flags, env=env)
    return str(caught.value)


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        (S3, True),
        (GS, True),
        ("az://container/model", True),
        ("S3://Models/x", True),  # vLLM lower-cases the scheme before comparing
        ("/models/nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", False),
        ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", False),
        ("https://models/x", False),
    ],
)
def test_which_models_are_object_store_uris(model: str, expected: bool) -> None:
    assert object_store.is_object_store(model) is expected


@pytest.mark.parametrize(
    "flags",
    [
        (),  # auto: vLLM switches it to the streamer
        ("--load-format", "auto"),
        ("--load-format", "runai_streamer"),
        ("--load-format", "runai_streamer_sharded"),
        ("--load-format", "runai_streamer", "--model-loader-extra-config", '{"concurrency":16}'),
        (
            "--load-format", "runai_streamer",
            "--model-loader-extra-config",
            '{"concurrency":8,"memory_limit":4294967296,"distributed":false}',
        ),
    ],
)  # fmt: skip
def test_what_vllm_accepts_for_a_bucket(flags: tuple[str, ...]) -> None:
    check(S3, *flags)  # raises on refusal


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--load-format", "safetensors"), "'load_format' must be 'runai_streamer'"),
        (("--load-format", "pt"), "but got 'pt'"),
        (
            ("--model-loader-extra-config", '{"threads":4}'),
            "Unexpected extra config keys for runai_streamer: ['threads']",
        ),
        (("--model-loader-extra-config", '{"concurrency":0}'), "positive int, got 0"),
        (("--model-loader-extra-config", '{"concurrency":"16"}'), "positive int, got '16'"),
        (("--model-loader-extra-config", '{"concurrency":true}'), "positive int, got True"),
        (("--model-loader-extra-config", "[16]"), "must be a JSON object"),
    ],
)
def test_what_vllm_refuses_for_a_bucket(flags: tuple[str, ...], message: str) -> None:
    error = start_error(S3, *flags)
    assert message in error
    assert not error.startswith("usage:")  # a start-up failure, not an argparse error


def test_a_local_model_is_not_checked_for_streamer_settings() -> None:
    check("/models/x", "--load-format", "safetensors", env={})  # nothing to refuse


# (model, environment, expected error or None when the start goes ahead)
CREDENTIALS = [
    pytest.param(S3, KEYS, None, id="s3-keys"),
    pytest.param(S3, {}, "NoCredentialsError", id="s3-nothing"),
    pytest.param(
        S3,
        {"AWS_ACCESS_KEY_ID": "AKIAEXAMPLE"},
        "(AWS_SECRET_ACCESS_KEY not set)",
        id="s3-half",
    ),
    pytest.param(S3, {"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": ""}, "NoCredentialsError",
                 id="s3-empty"),
    pytest.param(GS, KEYS, None, id="gs-hmac"),
    pytest.param(GS, {"GOOGLE_APPLICATION_CREDENTIALS": "/var/key.json"}, None, id="gs-adc"),
    pytest.param(GS, {}, "could not load Google credentials", id="gs-nothing"),
    pytest.param(
        GS,
        {"RUNAI_STREAMER_OVERRIDE_OBJ_PLUGIN": "s3", "GOOGLE_APPLICATION_CREDENTIALS": "/k"},
        "NoCredentialsError",
        id="gs-through-s3-needs-keys",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("model", "env", "error"), CREDENTIALS)
def test_credentials(model: str, env: Mapping[str, str], error: str | None) -> None:
    if error is None:
        check(model, "--load-format", "runai_streamer", env=env)
    else:
        assert error in start_error(model, "--load-format", "runai_streamer", env=env)


def test_a_start_error_is_exit_status_1_and_an_argument_error_2(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in (*KEYS, "GOOGLE_APPLICATION_CREDENTIALS", "RUNAI_STREAMER_GCS_CREDENTIAL_FILE"):
        monkeypatch.delenv(key, raising=False)
    assert main(["serve", S3, "--load-format", "runai_streamer"]) == 1
    assert "Unable to locate credentials" in capsys.readouterr().err
    assert main(["serve", S3, "--not-a-flag"]) == 2
    assert issubclass(StubVllmStartError, StubVllmArgumentError)  # callers catching both


def test_the_kubelet_declares_secret_variables_without_their_values() -> None:
    container = {
        "env": [
            {"name": "HOME", "value": "/tmp"},
            {
                "name": "AWS_ACCESS_KEY_ID",
                "valueFrom": {"secretKeyRef": {"name": "keys", "key": "AWS_ACCESS_KEY_ID"}},
            },
            {
                "name": "AWS_SESSION_TOKEN",
                "valueFrom": {
                    "secretKeyRef": {"name": "keys", "key": "AWS_SESSION_TOKEN", "optional": True}
                },
            },
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        ]
    }
    declared = declared_secret_env(container)
    assert declared == {"AWS_ACCESS_KEY_ID": "(from Secret keys)"}  # optional ones may be absent


NANO_EMBEDDING = 131072 * 2688 * 2  # vocab × hidden in BF16, from the hub's config.json


@pytest.mark.parametrize(
    ("model", "limit", "refused"),
    [
        (S3, 4 * 1024**3, False),  # what the operator renders
        (S3, NANO_EMBEDDING, False),  # exactly the largest tensor
        (S3, NANO_EMBEDDING - 1, True),
        (S3, 100_000_000, True),
        (S3, -1, False),  # unlimited
        (S3, 0, False),  # the largest tensor, by the streamer's own sizing
        (S3, -5, True),  # not a mode: a cap below every tensor
        ("s3://models/org/unknown-model", 1, False),  # no config.json: nothing to compare
    ],
)
def test_a_cpu_buffer_smaller_than_the_largest_tensor_fails_the_load(
    model: str, limit: int, refused: bool
) -> None:
    extra = json.dumps({"memory_limit": limit})
    flags = ("--load-format", "runai_streamer", "--model-loader-extra-config", extra)
    if refused:
        error = start_error(model, *flags)
        assert "RunaiStreamerMemoryLimitException" in error
        assert f"cannot be smaller than: {NANO_EMBEDDING}" in error
    else:
        check(model, *flags)


def test_the_largest_tensor_comes_from_the_checkpoints_config() -> None:
    assert object_store.largest_tensor_bytes(S3) == NANO_EMBEDDING
    ultra = "s3://models/nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16"
    assert object_store.largest_tensor_bytes(ultra) == 131072 * 8192 * 2  # 2 GiB, under 4 GiB
    assert object_store.largest_tensor_bytes("s3://models/org/unknown-model") is None
