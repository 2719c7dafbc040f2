"""The weight cache: a claim per pod (volumeClaimTemplates) or one shared claim, filled by an init
container that downloads the checkpoint once; or an existing claim that already holds it."""

from __future__ import annotations

import hashlib
import math
from typing import Any

from nemotron_operator.api import NemotronDeployment, Plan
from nemotron_operator.render import names as n
from nemotron_operator.render.engine import DOWNLOAD_MARKER, MODEL_MOUNT
from nemotron_operator.render.names import Names

WEIGHTS_VOLUME = n.WEIGHTS_VOLUME
GIB = 1024**3
# Headroom over the checkpoint's bytes for tokenizer files, the download's metadata and a
# partially written shard (api: "the checkpoint's bytes plus 10% headroom").
CACHE_HEADROOM = 1.10

# Runs in the vLLM image (it ships huggingface_hub and its `hf` CLI). The marker records which
# id@revision completed, so a restarted pod skips the download and a new revision fetches again.
DOWNLOAD_SCRIPT = f"""\
set -eu
want="$MODEL_ID@$MODEL_REVISION"
marker="$MODEL_DIR/{DOWNLOAD_MARKER}"
if [ -f "$marker" ] && [ "$(cat "$marker")" = "$want" ]; then
  echo "weights for $want already complete in $MODEL_DIR"
  exit 0
fi
mkdir -p "$MODEL_DIR"
hf download "$MODEL_ID" --revision "$MODEL_REVISION" --local-dir "$MODEL_DIR"
echo "$want" > "$marker"
echo "downloaded $want into $MODEL_DIR"
"""


def gibibytes(num_bytes: int) -> str:
    return f"{max(1, math.ceil(num_bytes / GIB))}Gi"


def cache_size(deployment: NemotronDeployment, weight_bytes: int) -> str:
    storage = deployment.spec.storage
    if storage is not None and storage.cache.size is not None:
        return storage.cache.size
    return gibibytes(int(weight_bytes * CACHE_HEADROOM))


def uses_claim_template(deployment: NemotronDeployment) -> bool:
    """One claim per pod: the default for Hugging Face sources."""
    if deployment.spec.model.source.hugging_face is None:  # an existing claim, or streamed
        return False
    storage = deployment.spec.storage
    return storage is None or not storage.cache.shared


def _claim_spec(deployment: NemotronDeployment, weight_bytes: int) -> dict[str, Any]:
    storage = deployment.spec.storage
    cache = storage.cache if storage is not None else None
    spec: dict[str, Any] = {
        "accessModes": list(cache.access_modes) if cache else ["ReadWriteOnce"],
        "resources": {"requests": {"storage": cache_size(deployment, weight_bytes)}},
    }
    if cache is not None and cache.storage_class_name is not None:
        spec["storageClassName"] = cache.storage_class_name
    return spec


def build_volume_claim_template(
    deployment: NemotronDeployment, names: Names, weight_bytes: int
) -> dict[str, Any]:
    return {
        "metadata": {"name": WEIGHTS_VOLUME, "labels": n.labels(names, n.COMPONENT_WEIGHTS)},
        "spec": _claim_spec(deployment, weight_bytes),
    }


def build_persistent_volume_claim(
    deployment: NemotronDeployment, names: Names, weight_bytes: int
) -> dict[str, Any]:
    """The shared cache claim (``storage.cache.shared``), mounted by every pod."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": names.shared_cache_claim,
            "namespace": names.namespace,
            "labels": n.labels(names, n.COMPONENT_WEIGHTS),
        },
        "spec": _claim_spec(deployment, weight_bytes),
    }


def has_weights_volume(deployment: NemotronDeployment) -> bool:
    """False when the weights are streamed from an object store: no cache, no volume."""
    return deployment.spec.model.source.object_store is None


def builds_shared_claim(deployment: NemotronDeployment) -> bool:
    """The shared cache claim ``<name>-weights`` is rendered (``storage.cache.shared``)."""
    source = deployment.spec.model.source
    return source.hugging_face is not None and not uses_claim_template(deployment)


def weights_volume(deployment: NemotronDeployment, names: Names) -> dict[str, Any] | None:
    """The pod volume for the weights; None when volumeClaimTemplates provide it or the weights
    are streamed (no volume)."""
    if not has_weights_volume(deployment):
        return None
    pvc = deployment.spec.model.source.pvc
    if pvc is not None:
        claim = {"claimName": pvc.claim_name, "readOnly": True}
        return {"name": WEIGHTS_VOLUME, "persistentVolumeClaim": claim}
    if uses_claim_template(deployment):
        return None
    return {
        "name": WEIGHTS_VOLUME,
        "persistentVolumeClaim": {"claimName": names.shared_cache_claim},
    }


def build_download_container(
    deployment: NemotronDeployment,
    image: str,
    model_dir: str,
    security_context: dict[str, Any],
    scratch_mount: dict[str, Any],
) -> dict[str, Any] | None:
    """The init container that fills the cache; None when weights come from an existing claim."""
    source = deployment.spec.model.source
    if source.hugging_face is None:
        return None
    env: list[dict[str, Any]] = [
        {"name": "MODEL_ID", "value": deployment.spec.model.id},
        {"name": "MODEL_REVISION", "value": deployment.spec.model.revision},
        {"name": "MODEL_DIR", "value": model_dir},
        {"name": "HOME", "value": scratch_mount["mountPath"]},
        {"name": "HF_HUB_DISABLE_TELEMETRY", "value": "1"},
    ]
    token = source.hugging_face.token_secret_ref
    if token is not None:
        # The kubelet resolves the Secret; the operator never reads it (no Secret RBAC).
        ref = {"name": token.name, "key": token.key}
        env.append({"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": ref}})
    return {
        "name": "download",
        "image": image,
        "command": ["sh", "-c", DOWNLOAD_SCRIPT],
        "env": env,
        # No memory limit: the download streams hundreds of GB through the page cache.
        "resources": {"requests": {"cpu": "1", "memory": "2Gi"}},
        "securityContext": security_context,
        "volumeMounts": [
            {"name": WEIGHTS_VOLUME, "mountPath": MODEL_MOUNT},
            scratch_mount,
        ],
    }


# The compile cache: vLLM keeps torch.compile's output under $VLLM_CACHE_ROOT (in
# torch_compile_cache/<hash of its config>, and Inductor's cache inside it); Triton's kernel cache
# is not moved there on vLLM's AOT-compile path, so TRITON_CACHE_DIR is set beside it. On the
# weight cache they outlive the pod: the next start of the same layout loads the compiled model
# instead of compiling it again (CUDA graphs are captured on every start). docs/startup.md.
COMPILE_CACHE_MOUNT = "/compile-cache"
COMPILE_CACHE_SUBPATH = ".compile-cache"


def compile_cache_key(deployment: NemotronDeployment, plan: Plan) -> str:
    """What invalidates a compiled model: the vLLM build (the image), the checkpoint and the
    layout. A readable prefix and a hash of all of them."""
    spec = deployment.spec
    parts = [
        spec.engine.image,
        spec.model.id,
        spec.model.revision,
        plan.gpu_product,
        f"tp{plan.tensor_parallel}",
        f"pp{plan.pipeline_parallel}",
        f"nodes{plan.nodes_per_replica}",
    ]
    digest = hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]
    return f"tp{plan.tensor_parallel}-pp{plan.pipeline_parallel}-{digest}"


def compile_cache(
    deployment: NemotronDeployment, plan: Plan
) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
    """The vLLM container's mount and variables for the compile cache on the weight-cache volume;
    None when that volume is an existing claim the pods mount read-only, or when the weights are
    streamed (no volume: vLLM compiles into $HOME on the scratch emptyDir, docs/startup.md)."""
    if deployment.spec.model.source.hugging_face is None:
        return None
    root = f"{COMPILE_CACHE_MOUNT}/{compile_cache_key(deployment, plan)}"
    mount = {
        "name": WEIGHTS_VOLUME,
        "mountPath": COMPILE_CACHE_MOUNT,
        "subPath": COMPILE_CACHE_SUBPATH,
    }
    env = [
        {"name": "VLLM_CACHE_ROOT", "value": f"{root}/vllm"},
        {"name": "TRITON_CACHE_DIR", "value": f"{root}/triton"},
    ]
    return mount, env
