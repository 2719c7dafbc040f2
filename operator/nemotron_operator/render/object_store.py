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
"""

from __future__ import annotations

import json
from typing import Any

from nemotron_operator.api import NemotronDeployment, ObjectStoreSource

LOAD_FORMAT = "runai_streamer"
# The keys the credentials Secret must hold, named as the variables they become.
ACCESS_KEY_ID = "AWS_ACCESS_KEY_ID"
SECRET_ACCESS_KEY = "AWS_SECRET_ACCESS_KEY"  # noqa: S105 - a variable name, not a secret
SESSION_TOKEN = "AWS_SESSION_TOKEN"  # noqa: S105 - a variable name, not a secret
# GCS's S3-compatible endpoint for HMAC keys (cloud.google.com/storage/docs/interoperability).
GCS_ENDPOINT = "https://storage.googleapis.com"


def source_of(deployment: NemotronDeployment) -> ObjectStoreSource | None:
    return deployment.spec.model.source.object_store


def streams(deployment: NemotronDeployment) -> bool:
    """Whether the weights are streamed from an object store (no weight-cache volume)."""
    return source_of(deployment) is not None


def load_args(deployment: NemotronDeployment) -> list[str]:
    """``--load-format runai_streamer`` and, with a concurrency, the loader's extra config."""
    source = source_of(deployment)
    if source is None:
        return []
    args = ["--load-format", LOAD_FORMAT]
    if source.concurrency is not None:
        extra = json.dumps({"concurrency": source.concurrency}, separators=(",", ":"))
        args += ["--model-loader-extra-config", extra]
    return args


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
