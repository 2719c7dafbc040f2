"""A model streamed from an object store (``vllm serve s3://bucket/prefix --load-format
runai_streamer``), checked the way vLLM and the Run:ai model streamer check it. No bucket is ever
contacted: the stand-in reads the checkpoint's config.json from its hub by the URI's last two
path segments (``s3://bucket/nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16``), as vLLM would pull it
from the bucket.

What vLLM does, and the stand-in after it:
- an object-store model needs ``--load-format runai_streamer`` (or ``runai_streamer_sharded``;
  ``auto`` is switched to it); any other load format is a ValueError (vllm/config/vllm.py);
- ``--model-loader-extra-config`` takes only ``distributed``, ``concurrency`` and
  ``memory_limit`` for the streamer, ``concurrency`` an integer
  (vllm/model_executor/model_loader/runai_streamer_loader.py);
- a ``memory_limit`` (the CPU buffer, bytes; -1 unlimited, 0 the largest tensor) smaller than the
  checkpoint's largest tensor fails the load: ``RunaiStreamerMemoryLimitException: Memory limit
  supplied: N cannot be smaller than: M`` (runai_model_streamer/file_streamer/
  requests_iterator.py ``with_memory_cap``). The stand-in takes the largest tensor to be the
  embedding matrix of its config.json, vocab_size × hidden_size in BF16;
- the streamer needs credentials: ``AWS_ACCESS_KEY_ID`` and ``AWS_SECRET_ACCESS_KEY`` for s3://
  (and for gs:// with an HMAC key), or Google credentials for gs:// through its GCS backend
  (run-ai/runai-model-streamer docs/src/usage.md). Without them the start fails the way boto3
  fails: ``NoCredentialsError: Unable to locate credentials``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nemotron_sim.vllm import hf_config
from nemotron_sim.vllm.args import ServeConfig, StubVllmStartError

SCHEMES = ("s3://", "gs://", "az://")  # vllm/transformers_utils/runai_utils.py SUPPORTED_SCHEMES
STREAMER_FORMATS = ("runai_streamer", "runai_streamer_sharded")
EXTRA_CONFIG_KEYS = frozenset({"distributed", "concurrency", "memory_limit"})
S3_KEYS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
GOOGLE_CREDENTIALS = ("GOOGLE_APPLICATION_CREDENTIALS", "RUNAI_STREAMER_GCS_CREDENTIAL_FILE")
NO_CREDENTIALS = "botocore.exceptions.NoCredentialsError: Unable to locate credentials"
EMBEDDING_BYTES_PER_PARAMETER = 2  # BF16


def is_object_store(model: str) -> bool:
    return model.lower().startswith(SCHEMES)


def check(config: ServeConfig, env: Mapping[str, str]) -> None:
    """Raise StubVllmStartError when vLLM would not start streaming ``config.model``."""
    if not is_object_store(config.model):
        return
    load_format = config.options.get("--load-format", "auto")
    if load_format not in ("auto", *STREAMER_FORMATS):
        raise StubVllmStartError(
            "ValueError: To load a model from S3, 'load_format' must be 'runai_streamer' or "
            f"'runai_streamer_sharded', but got '{load_format}'. Model: {config.model}"
        )
    extra = config.options.get("--model-loader-extra-config")
    _check_extra_config(extra)
    _check_credentials(config.model, env)
    if isinstance(extra, dict):
        _check_memory_limit(config.model, extra.get("memory_limit"))


def _check_extra_config(extra: Any) -> None:
    if extra is None:
        return
    if not isinstance(extra, dict):
        raise StubVllmStartError(
            f"ValueError: --model-loader-extra-config must be a JSON object, got {extra!r}"
        )
    unexpected = set(extra) - EXTRA_CONFIG_KEYS
    if unexpected:
        raise StubVllmStartError(
            f"ValueError: Unexpected extra config keys for runai_streamer: {sorted(unexpected)}"
        )
    concurrency = extra.get("concurrency")
    if concurrency is not None and (
        isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1
    ):
        raise StubVllmStartError(
            f"ValueError: concurrency must be a positive int, got {concurrency!r}"
        )


def _check_credentials(model: str, env: Mapping[str, str]) -> None:
    if all(env.get(key) for key in S3_KEYS):
        return
    gcs_backend = env.get("RUNAI_STREAMER_OVERRIDE_OBJ_PLUGIN", "gcs") != "s3"
    if model.lower().startswith("gs://") and gcs_backend:
        if any(env.get(key) for key in GOOGLE_CREDENTIALS):
            return
        missing = " or ".join(GOOGLE_CREDENTIALS)
        raise StubVllmStartError(
            f"RuntimeError: could not load Google credentials for {model}: set {missing}, or "
            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (an HMAC key) "
            "(stand-in vLLM: no metadata server)"
        )
    missing = ", ".join(key for key in S3_KEYS if not env.get(key))
    raise StubVllmStartError(f"{NO_CREDENTIALS} for {model} ({missing} not set)")


def largest_tensor_bytes(model: str) -> int | None:
    """The checkpoint's largest tensor as the stand-in models it: the embedding matrix of the
    config.json it finds for ``model`` (None without one)."""
    entry = hf_config.load_model(model)
    if entry is None:
        return None
    return entry.vocab_size * entry.hidden_size * EMBEDDING_BYTES_PER_PARAMETER


def _check_memory_limit(model: str, limit: Any) -> None:
    # vLLM passes an int on as RUNAI_STREAMER_MEMORY_LIMIT and ignores anything else; the
    # streamer treats -1 (unlimited) and 0 (the largest tensor) as modes, any other value as a cap.
    if isinstance(limit, bool) or not isinstance(limit, int) or limit in (-1, 0):
        return
    largest = largest_tensor_bytes(model)
    if largest is not None and limit < largest:
        raise StubVllmStartError(
            "runai_model_streamer.file_streamer.requests_iterator."
            f"RunaiStreamerMemoryLimitException: Memory limit supplied: {limit} cannot be "
            f"smaller than: {largest}"
        )
