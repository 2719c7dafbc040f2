"""The weight download Job of a shared cache (``storage.cache.shared`` with a Hugging Face source).

One ``batch/v1`` Job runs the download once into the shared claim, before any serving pod
starts: the serving pods then have no download of the base weights (the controller applies their
StatefulSets only once the Job has succeeded: controller/decide/download.py). Its container is the
serving pods' init container (``storage.build_download_container``: same script, variables,
token reference and security context), without the LoRA adapters, which the serving pods keep
fetching as before.

The Job's name carries a digest of its pod template: a new model id or revision (or image, or
token Secret) is a new Job, and the old one is pruned like any child no longer rendered. A Job's
template is immutable, so it could not be updated in place anyway.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

from nemotron_operator.api import NemotronDeployment
from nemotron_operator.render import names as n
from nemotron_operator.render import storage
from nemotron_operator.render.names import Names
from nemotron_operator.render.pod import (
    SCRATCH_MOUNT,
    SCRATCH_SIZE,
    container_security_context,
    pod_security_context,
    tolerations,
)

# Three attempts: hf download resumes a partial download (its metadata lives beside the files in
# --local-dir), and what survives its own HTTP retries is mostly persistent (a bad token, a
# missing revision, a full volume). The Job controller backs off 10 s, 20 s between attempts.
BACKOFF_LIMIT = 2
# The deadline: 30 minutes plus the weight bytes at 20 MB/s, a slow link (160 Mbit/s) for a Hub
# download; Nemotron Ultra's 253 GB get about 3.9 hours.
DEADLINE_BASE_SECONDS = 1800
DEADLINE_BYTES_PER_SECOND = 20_000_000
DIGEST_LENGTH = 8


def uses_download_job(deployment: NemotronDeployment) -> bool:
    """The base weights are downloaded by a Job: a shared cache filled from Hugging Face."""
    return storage.builds_shared_claim(deployment)


def deadline_seconds(weight_bytes: int) -> int:
    return DEADLINE_BASE_SECONDS + math.ceil(weight_bytes / DEADLINE_BYTES_PER_SECOND)


def _digest(template: dict[str, Any]) -> str:
    payload = json.dumps(template, sort_keys=True).encode()
    return hashlib.sha256(payload).hexdigest()[:DIGEST_LENGTH]


def build_download_job(
    deployment: NemotronDeployment, names: Names, *, model_dir: str, weight_bytes: int
) -> dict[str, Any] | None:
    """The Job, or None when the cache is not a shared one filled from Hugging Face."""
    if not uses_download_job(deployment):
        return None
    scratch = {"name": "scratch", "mountPath": SCRATCH_MOUNT}
    container = storage.build_download_container(
        deployment,
        deployment.spec.engine.image,
        model_dir,
        container_security_context(),
        scratch,
        adapter_weights=False,
    )
    assert container is not None  # a Hugging Face source: the base weights are fetched
    # The last lines of the log are the pod's termination message when it fails: the condition
    # quotes it (hf's error), as no script writes /dev/termination-log.
    container["terminationMessagePolicy"] = "FallbackToLogsOnError"
    labels = n.labels(names, n.COMPONENT_DOWNLOAD)
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "securityContext": pod_security_context(),
        # It needs no GPU, but may run where the serving pods do (GPU nodes are often tainted).
        "tolerations": tolerations(deployment),
        "containers": [container],
        "volumes": [
            storage.weights_volume(deployment, names),
            {"name": "scratch", "emptyDir": {"sizeLimit": SCRATCH_SIZE}},
        ],
    }
    template = {"metadata": {"labels": dict(labels)}, "spec": pod_spec}
    spec = deployment.spec
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": names.download_job(_digest(template)),
            "namespace": names.namespace,
            "labels": labels,
            "annotations": {
                n.MODEL: spec.model.id,
                n.MODEL_REVISION: spec.model.revision,
            },
        },
        "spec": {
            "backoffLimit": BACKOFF_LIMIT,
            "activeDeadlineSeconds": deadline_seconds(weight_bytes),
            "template": template,
        },
    }
