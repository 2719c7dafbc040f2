"""Every name, label and annotation key of the rendered objects, from one place.

Names are deterministic (no ``generateName``) and fit Kubernetes' limits: a name that would be too
long keeps a readable prefix and gets an 8-character hash of the full name, so two long names never
collide. Service names must be DNS-1035 labels (start with a letter); a StatefulSet name must leave
room for the ``controller-revision-hash`` label (``<name>-<10 characters>`` ≤ 63), hence ≤ 52.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

DOMAIN = "serving.nemotron.io"
MANAGED_BY = "nemotron-operator"
APP_NAME = "vllm"
PART_OF = "nemotron"

NAME = "app.kubernetes.io/name"
INSTANCE = "app.kubernetes.io/instance"
COMPONENT = "app.kubernetes.io/component"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
PART_OF_LABEL = "app.kubernetes.io/part-of"
ROLE = f"{DOMAIN}/role"  # leader: runs the API server; worker: a headless rank of a replica
REPLICA = f"{DOMAIN}/replica"  # index of a multi-node replica

# The pod readiness gate the operator sets once a pod passed the behavioural check.
VERIFIED_CONDITION = f"{DOMAIN}/verified"

CONFIG_HASH = f"{DOMAIN}/config-hash"
PLAN = f"{DOMAIN}/plan"
# The LoRA adapters the serving pods should serve (runtime loading; render/adapters.py).
ADAPTERS = f"{DOMAIN}/adapters"
MODEL = f"{DOMAIN}/model"
# An annotation of the download Job (render/download_job.py): the revision it fetches (its name
# carries a digest of everything it runs, so a new revision is a new Job).
MODEL_REVISION = f"{DOMAIN}/model-revision"
OWNER = f"{DOMAIN}/owner"  # namespace/name of the NemotronDeployment, on cluster-scoped objects

WEIGHTS_VOLUME = "weights"  # the pod volume of the weight cache (render/storage.py)

COMPONENT_SERVING = "serving"
COMPONENT_WEIGHTS = "weights"
COMPONENT_DOWNLOAD = "weights-download"  # the download Job and its pods
COMPONENT_NODE_POOL = "node-pool"
COMPONENT_MONITORING = "monitoring"
COMPONENT_GATEWAY = "inference-gateway"
COMPONENT_ENDPOINT_PICKER = "endpoint-picker"
COMPONENT_AUTOSCALING = "autoscaling"
ROLE_LEADER = "leader"
ROLE_WORKER = "worker"

MAX_NAME = 63
# The StatefulSet controller labels pods with "<statefulset>-<10-character hash>" (≤ 63).
MAX_STATEFULSET_NAME = 52
_HASH_LEN = 8


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:_HASH_LEN]


def dns_label(text: str, max_len: int = MAX_NAME) -> str:
    """``text`` as a DNS-1035 label of at most ``max_len`` characters, deterministically."""
    clean = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    clean = re.sub(r"-{2,}", "-", clean)
    if not clean or not clean[0].isalpha():
        clean = f"nd-{clean}".rstrip("-")
    if clean == text and len(clean) <= max_len:
        return clean
    # Shortened or rewritten (e.g. "a.b" → "a-b"): the hash keeps distinct inputs distinct.
    keep = max_len - _HASH_LEN - 1
    return f"{clean[:keep].rstrip('-')}-{_digest(text)}"


def with_suffix(base: str, suffix: str, max_len: int = MAX_NAME) -> str:
    """``<base>-<suffix>``, shortening ``base`` (never the suffix) to fit ``max_len``."""
    full = f"{base}-{suffix}"
    if len(full) <= max_len:
        return full
    keep = max_len - len(suffix) - _HASH_LEN - 2
    return f"{base[:keep].rstrip('-')}-{_digest(full)}-{suffix}"


def label_value(text: str) -> str:
    """``text`` as a label value (≤ 63, alphanumeric at both ends)."""
    clean = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-_.")
    if clean == text and len(clean) <= MAX_NAME:
        return clean
    return f"{clean[: MAX_NAME - _HASH_LEN - 1].rstrip('-_.')}-{_digest(text)}"


@dataclass(frozen=True)
class Names:
    """The names of one NemotronDeployment's children."""

    deployment: str
    namespace: str

    @property
    def base(self) -> str:
        # Leaves room for "-<replica>-w" on multi-node StatefulSets within 52 characters.
        return dns_label(self.deployment, MAX_STATEFULSET_NAME - 5)

    @property
    def instance(self) -> str:
        return label_value(self.deployment)

    @property
    def service(self) -> str:
        return self.base

    @property
    def headless_service(self) -> str:
        return with_suffix(self.base, "headless")

    @property
    def statefulset(self) -> str:
        return self.base

    def leader_statefulset(self, replica: int) -> str:
        return with_suffix(self.base, str(replica), MAX_STATEFULSET_NAME)

    def worker_statefulset(self, replica: int) -> str:
        return with_suffix(self.base, f"{replica}-w", MAX_STATEFULSET_NAME)

    @property
    def leader_worker_set(self) -> str:
        """Not ``<name>``: LWS names its own headless Service (the pods' subdomain, the leader
        address) after the LeaderWorkerSet, and skips creating it when that name is taken, as
        it would be by the API Service. Its worker StatefulSets add ``-<group>``."""
        return with_suffix(self.base, "lws", MAX_STATEFULSET_NAME - 3)

    @property
    def pod_disruption_budget(self) -> str:
        return self.base

    @property
    def pod_monitor(self) -> str:
        return self.base

    @property
    def scaled_object(self) -> str:
        """The KEDA ScaledObject (autoscaling.provider KEDA); KEDA names its HPA after it."""
        return self.base

    @property
    def inference_pool(self) -> str:
        return self.base

    @property
    def endpoint_picker(self) -> str:
        """The picker's Deployment, Service, ServiceAccount, Role, RoleBinding and ConfigMap."""
        return with_suffix(self.base, "epp")

    @property
    def http_route(self) -> str:
        return self.base

    @property
    def shared_cache_claim(self) -> str:
        return with_suffix(self.base, "weights")

    def download_job(self, digest: str) -> str:
        """The weight download Job of a shared cache; ``digest`` names what it runs."""
        return with_suffix(self.base, f"download-{digest}")

    @property
    def node_pool(self) -> str:
        # Cluster-scoped: the namespace is part of the identity.
        return dns_label(f"nd-{self.namespace}-{self.deployment}")

    def pod_dns(self, statefulset: str, ordinal: int) -> str:
        """Stable DNS name of a StatefulSet pod through the headless Service."""
        return f"{statefulset}-{ordinal}.{self.headless_service}.{self.namespace}.svc"

    def endpoint(self, port: int) -> str:
        return f"http://{self.service}.{self.namespace}.svc:{port}/v1"


def selector_labels(names: Names) -> dict[str, str]:
    return {NAME: APP_NAME, INSTANCE: names.instance}


def labels(names: Names, component: str) -> dict[str, str]:
    return {
        **selector_labels(names),
        COMPONENT: component,
        MANAGED_BY_LABEL: MANAGED_BY,
        PART_OF_LABEL: PART_OF,
    }


def serving_selector(
    names: Names, role: str | None = None, replica: int | None = None
) -> dict[str, str]:
    """Labels that select serving pods: all of them, one role, or one multi-node replica's."""
    selector = {**selector_labels(names), COMPONENT: COMPONENT_SERVING}
    if role is not None:
        selector[ROLE] = role
    if replica is not None:
        selector[REPLICA] = str(replica)
    return selector


def leader_selector_string(names: Names) -> str:
    """The serving leaders as a label selector string (``status.selector`` for the scale
    subresource: one pod per replica)."""
    return ",".join(f"{k}={v}" for k, v in serving_selector(names, ROLE_LEADER).items())
