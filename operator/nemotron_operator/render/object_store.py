"""Weights streamed from an object store (``spec.model.source.objectStore``) with vLLM's Run:ai
model streamer: what the vLLM container gets instead of a weight-cache volume and a download.

vLLM takes the bucket URI as its model (``vllm serve s3://bucket/prefix --load-format
runai_streamer``), pulls config.json and the tokenizer files into ``$HOME/.cache/vllm/assets`` and
streams the safetensors shards onto the GPUs (vLLM docs, "Loading models with Run:ai Model
Streamer"; vllm/transformers_utils/runai_utils.py; vllm/config/vllm.py refuses another load format
for an object-store model). The streamer reads S3 credentials from ``AWS_ACCESS_KEY_ID`` /
``AWS_SECRET_ACCESS_KEY`` (``AWS_SESSION_TOKEN`` for temporary ones), an S3-compatible endpoint
from ``AWS_ENDPOINT_URL`` with ``RUNAI_STREAMER_S3_USE_VIRTUAL_ADDRESSING=0`` and
``AWS_EC2_METADATA_DISABLED=true``; a GCS bucket through its S3-compatible XML API with an HMAC
key (run-ai/runai-model-streamer docs/src/usage.md and env-vars.md). docs/startup.md has the
sources and the trade-offs.

The streamer's CPU buffer is bounded here and counted in the pod's memory request: vLLM's loader
streams the whole checkpoint in every worker process (one per GPU) unless ``distributed`` is set,
and each process reads it into a CPU buffer of min(``memory_limit``, checkpoint bytes) — 40 GB
by default (runai_model_streamer/file_streamer/requests_iterator.py ``DEFAULT_MEMORY_LIMIT_STRING``
and ``with_memory_cap``; docs/src/usage.md "CPU Memory Capping"). docs/rendering.md has the rule.
"""

from __future__ import annotations

import json
import math
from typing import Any

from nemotron_operator.api import NemotronDeployment, ObjectStoreSource

LOAD_FORMAT = "runai_streamer"
# The keys the credentials Secret must hold, named as the variables they become.
ACCESS_KEY_ID = "AWS_ACCESS_KEY_ID"
SECRET_ACCESS_KEY = "AWS_SECRET_ACCESS_KEY"  # noqa: S105 - a variable name, not a secret
SESSION_TOKEN = "AWS_SESSION_TOKEN"  # noqa: S105 - a variable name, not a secret
# GCS's S3-compatible endpoint for HMAC keys (cloud.google.com/storage/docs/interoperability).
GCS_ENDPOINT = "https://storage.googleapis.com"

GIB = 1024**3
# memory_limit of each worker's CPU buffer. The streamer refuses a limit below the largest tensor
# ("Memory limit supplied: N cannot be smaller than: M"); in these checkpoints that is the input
# embedding or the LM head, vocab × hidden in BF16: 1 GiB for Super (131072 × 4096), 2 GiB for
# Ultra (131072 × 8192). 4 GiB is twice the largest, and a 10th of the streamer's 40 GB default.
# The buffer is reused between batches of at most this many bytes (usage.md, "Limited").
BUFFER_BYTES = 4 * GIB
EMBEDDING_BYTES_PER_PARAMETER = 2  # BF16: embeddings stay BF16 in the FP8 and NVFP4 checkpoints


def source_of(deployment: NemotronDeployment) -> ObjectStoreSource | None:
    return deployment.spec.model.source.object_store


def streams(deployment: NemotronDeployment) -> bool:
    """Whether the weights are streamed from an object store (no weight-cache volume)."""
    return source_of(deployment) is not None


def buffer_bytes(deployment: NemotronDeployment) -> int:
    """The CPU buffer each worker process may use (``memory_limit``): BUFFER_BYTES, or for a
    model outside the catalog whose embedding matrix is larger, that matrix rounded up to a GiB."""
    architecture = deployment.spec.model.architecture
    largest = 0
    if architecture is not None:
        embedding = architecture.vocab_size * architecture.hidden_size
        largest = embedding * EMBEDDING_BYTES_PER_PARAMETER
    return max(BUFFER_BYTES, math.ceil(largest / GIB) * GIB)


def memory_request_bytes(deployment: NemotronDeployment, *, gpus: int, weight_bytes: int) -> int:
    """What streaming adds to a pod's memory: one buffer per worker process (one per GPU), each
    no larger than the checkpoint (the streamer allocates min(memory_limit, bytes to read))."""
    if not streams(deployment):
        return 0
    return gpus * min(buffer_bytes(deployment), weight_bytes)


def load_args(deployment: NemotronDeployment) -> list[str]:
    """``--load-format runai_streamer`` and the loader's extra config: the concurrency when set,
    and always the bounded CPU buffer."""
    source = source_of(deployment)
    if source is None:
        return []
    extra: dict[str, int] = {}
    if source.concurrency is not None:
        extra["concurrency"] = source.concurrency
    extra["memory_limit"] = buffer_bytes(deployment)
    config = json.dumps(extra, separators=(",", ":"))
    return ["--load-format", LOAD_FORMAT, "--model-loader-extra-config", config]


def _from_secret(variable: str, secret: str, *, optional: bool = False) -> dict[str, Any]:
    ref: dict[str, Any] = {"name": secret, "key": variable}
    if optional:
        ref["optional"] = True
    return {"name": variable, "valueFrom": {"secretKeyRef": ref}}


def endpoint(source: ObjectStoreSource) -> str | None:
    """The S3 endpoint the streamer talks to: the spec's, GCS's for gs://, None for AWS S3."""
    if source.endpoint is not None:
        return source.endpoint
    return GCS_ENDPOINT if source.uri.startswith("gs://") else None


def container_env(deployment: NemotronDeployment) -> list[dict[str, Any]]:
    """The vLLM container's variables for the streamer. Credentials by reference only: the
    kubelet resolves them, the operator never reads the Secret (no Secret RBAC)."""
    source = source_of(deployment)
    if source is None:
        return []
    secret = source.credentials_secret_ref.name
    env = [
        _from_secret(ACCESS_KEY_ID, secret),
        _from_secret(SECRET_ACCESS_KEY, secret),
        _from_secret(SESSION_TOKEN, secret, optional=True),
    ]
    url = endpoint(source)
    if url is not None:
        env += [
            {"name": "AWS_ENDPOINT_URL", "value": url},
            # Path-style addressing and no EC2 metadata lookups: what the streamer's docs ask
            # for every S3-compatible store (GCS included).
            {"name": "RUNAI_STREAMER_S3_USE_VIRTUAL_ADDRESSING", "value": "0"},
            {"name": "AWS_EC2_METADATA_DISABLED", "value": "true"},
        ]
    if source.uri.startswith("gs://"):
        # A gs:// URI with an HMAC key goes through the streamer's S3 backend, not its GCS SDK
        # backend (which would look for service-account credentials instead).
        env.append({"name": "RUNAI_STREAMER_OVERRIDE_OBJ_PLUGIN", "value": "s3"})
    return env
