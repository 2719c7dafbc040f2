"""Readiness: what the serving pods and StatefulSets say, reduced to the ready replicas and one
blocking reason. Pure.

The reasons, most specific first: a pod on a node that is not Ready (lost), a missing Secret, an
image that cannot be pulled, a crash loop, another pod configuration error, a pod the scheduler
cannot place, a pod waiting for its volume claims to bind (storage, not capacity), a model still
loading, a rollout still running, pods not created yet.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nemotron_operator.render import names as n
from nemotron_operator.render.multinode import GROUP_INDEX_LABEL
from nemotron_operator.status import startup, verification

NODE_LOST = "NodeLost"  # a serving pod's node is not Ready: its kubelet stopped reporting
SECRET_NOT_FOUND = "SecretNotFound"  # noqa: S105 (a reason, not a password)
IMAGE_PULL_BACK_OFF = "ImagePullBackOff"
CRASH_LOOP = "CrashLoop"
INVALID_POD_CONFIG = "InvalidPodConfig"
UNSCHEDULABLE = "Unschedulable"
# The scheduler waits for a claim to bind (an Immediate StorageClass's provisioner has not made
# the volume yet): storage, not a shortage of GPUs.
WAITING_FOR_STORAGE = "WaitingForStorage"
_UNBOUND_CLAIMS = "unbound immediate PersistentVolumeClaims"
LOADING_MODEL = "LoadingModel"
VERIFYING = "Verifying"  # vLLM is up; the behavioural check runs before it takes traffic
VERIFICATION_FAILED = "VerificationFailed"
ROLLOUT_IN_PROGRESS = "RolloutInProgress"
WAITING_FOR_PODS = "WaitingForPods"

# Blockers that need a human: waiting does not help.
STUCK = frozenset(
    {SECRET_NOT_FOUND, IMAGE_PULL_BACK_OFF, CRASH_LOOP, INVALID_POD_CONFIG, VERIFICATION_FAILED}
)
# Blockers that degrade the deployment (waiting may help, but it is not serving as planned).
DEGRADING = STUCK | {NODE_LOST}
_ORDER = (
    NODE_LOST,
    SECRET_NOT_FOUND,
    IMAGE_PULL_BACK_OFF,
    CRASH_LOOP,
    INVALID_POD_CONFIG,
    VERIFICATION_FAILED,
    UNSCHEDULABLE,
    WAITING_FOR_STORAGE,
    LOADING_MODEL,
    VERIFYING,
    ROLLOUT_IN_PROGRESS,
    WAITING_FOR_PODS,
)


@dataclass(frozen=True)
class Blocker:
    reason: str
    message: str


@dataclass(frozen=True)
class Readiness:
    ready_replicas: int
    blocker: Blocker | None  # None when every desired replica is ready and up to date


def pod_ready(pod: Mapping[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name", "?"))


def _secret_fields(container: str) -> str:
    """The spec fields whose Secret a container reads: the download's Hugging Face token; the
    vLLM container's object-store credentials or adapter tokens (render/object_store.py,
    render/adapters.py)."""
    if container == startup.DOWNLOAD_CONTAINER:
        return "spec.model.source.huggingFace.tokenSecretRef"
    return (
        "spec.model.source.objectStore.credentialsSecretRef (keys AWS_ACCESS_KEY_ID, "
        "AWS_SECRET_ACCESS_KEY) or spec.adapters[].source.huggingFace.tokenSecretRef"
    )


def _container_blocker(pod: Mapping[str, Any]) -> Blocker | None:
    status = pod.get("status") or {}
    statuses = [
        *(status.get("initContainerStatuses") or []),
        *(status.get("containerStatuses") or []),
    ]
    for container in statuses:
        waiting = (container.get("state") or {}).get("waiting") or {}
        reason = str(waiting.get("reason") or "")
        message = str(waiting.get("message") or "")
        where = f"pod {_name(pod)} container {container.get('name', '?')}"
        if reason == "CreateContainerConfigError":
            lowered = message.lower()
            if "secret" in lowered and ("not found" in lowered or "couldn't find key" in lowered):
                return Blocker(
                    SECRET_NOT_FOUND,
                    f"{where}: {message}; create the Secret (and key) named in "
                    f"{_secret_fields(str(container.get('name', '')))} in this namespace",
                )
            return Blocker(INVALID_POD_CONFIG, f"{where}: {message or reason}")
        if reason in ("ImagePullBackOff", "ErrImagePull", "InvalidImageName"):
            return Blocker(
                IMAGE_PULL_BACK_OFF, f"{where}: {message or reason}; check spec.engine.image"
            )
        if reason == "CrashLoopBackOff":
            last = (container.get("lastState") or {}).get("terminated") or {}
            detail = str(last.get("message") or message or "").strip()
            tail = detail.splitlines()[-1] if detail else "see kubectl logs"
            return Blocker(
                CRASH_LOOP,
                f"{where} keeps crashing (restarts: {container.get('restartCount', 0)}): {tail}",
            )
    return None


def pod_blocker(
    pod: Mapping[str, Any], predicted: startup.Prediction | None = None
) -> Blocker | None:
    if pod_ready(pod):
        return None
    found = _container_blocker(pod)
    if found is not None:
        return found
    status = pod.get("status") or {}
    unplaced = _scheduling_blocker(pod)
    if unplaced is not None:
        return unplaced
    gated = _gate_blocker(pod)
    if gated is not None:
        return gated
    if status.get("phase") == "Running" or any(
        "running" in (c.get("state") or {}) for c in status.get("initContainerStatuses") or []
    ):
        # Which phase of the start, since when, and the plan's figure (status/startup.py).
        return Blocker(LOADING_MODEL, startup.describe(startup.pod_startup(pod), predicted))
    return Blocker(WAITING_FOR_PODS, f"pod {_name(pod)} is {status.get('phase') or 'Pending'}")


def _scheduling_blocker(pod: Mapping[str, Any]) -> Blocker | None:
    """What kube-scheduler said of a pod it could not place: storage or capacity."""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if (
            condition.get("type") == "PodScheduled"
            and condition.get("status") == "False"
            and condition.get("reason") == "Unschedulable"
        ):
            said = str(condition.get("message", ""))
            if _UNBOUND_CLAIMS in said:
                return Blocker(
                    WAITING_FOR_STORAGE,
                    f"pod {_name(pod)} waits for its volume claims to bind: {said}",
                )
            return Blocker(UNSCHEDULABLE, f"pod {_name(pod)} cannot be scheduled: {said}")
    return None


def _gate_blocker(pod: Mapping[str, Any]) -> Blocker | None:
    """A pod whose vLLM is up but whose readiness gate (the behavioural check) holds it back."""
    if not verification.has_gate(pod):
        return None
    status, reason, message = verification.gate_status(pod)
    if (status, reason) == ("False", verification.CHECK_FAILED):
        return Blocker(
            VERIFICATION_FAILED,
            f"pod {_name(pod)} failed the behavioural check and takes no traffic: {message}",
        )
    if verification.containers_ready(pod):
        return Blocker(
            VERIFYING, f"pod {_name(pod)}: vLLM is up; checking it before it takes traffic"
        )
    return None


def _rollout_blocker(statefulsets: Sequence[Mapping[str, Any]]) -> Blocker | None:
    for sts in statefulsets:
        metadata, spec, status = (
            sts.get("metadata") or {},
            sts.get("spec") or {},
            sts.get("status") or {},
        )
        replicas = int(spec.get("replicas", 1))
        if not status.get("currentRevision"):
            # Never observed by its controller: a new StatefulSet, no revision of it to replace
            # yet. Its pod can exist (Pending) before its status does; its pods are awaited.
            continue
        stale = int(status.get("observedGeneration") or 0) < int(metadata.get("generation") or 0)
        updating = status.get("updateRevision") not in (None, status.get("currentRevision"))
        # One revision: no pod is being replaced, a pod its status has not counted yet is
        # awaited (the pod blockers say why); behind only against the pods it counts.
        behind = int(status.get("updatedReplicas") or 0) < (
            replicas if updating else int(status.get("replicas") or 0)
        )
        if stale:  # how far the rollout is cannot be known: say so instead of a count
            return Blocker(
                ROLLOUT_IN_PROGRESS,
                f"StatefulSet {_name(sts)}: its status is stale (observedGeneration "
                f"{int(status.get('observedGeneration') or 0)}, generation "
                f"{int(metadata.get('generation') or 0)}): kube-controller-manager's StatefulSet "
                "controller has not acted on the change yet",
            )
        if updating or behind:
            return Blocker(
                ROLLOUT_IN_PROGRESS,
                f"StatefulSet {_name(sts)}: {status.get('updatedReplicas') or 0} of {replicas} "
                "pod(s) updated",
            )
    return None


def _node_lost_blocker(
    serving: Sequence[Mapping[str, Any]], not_ready_nodes: frozenset[str]
) -> Blocker | None:
    """The serving pods bound to nodes that are not Ready, by node: which replicas are hit."""
    hit: dict[str, list[str]] = {}
    for pod in serving:
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        if node in not_ready_nodes:
            hit.setdefault(node, []).append(_name(pod))
    if not hit:
        return None
    where = "; ".join(f"node {node}: pod(s) {', '.join(sorted(pods))}" for node, pods in
                      sorted(hit.items()))  # fmt: skip
    return Blocker(
        NODE_LOST,
        f"{len(hit)} node(s) not Ready (kube-controller-manager lost their heartbeat or their "
        f"kubelet reports NotReady), serving pods on them do not serve: {where}; they return "
        "when the node does, or once the pod is deleted and another node has room",
    )


def assess_readiness(
    *,
    desired_replicas: int,
    nodes_per_replica: int,
    expected_statefulsets: Iterable[str],
    statefulsets: Sequence[Mapping[str, Any]],
    pods: Sequence[Mapping[str, Any]],
    not_ready_nodes: frozenset[str] = frozenset(),
    predicted: startup.Prediction | None = None,
) -> Readiness:
    """Ready replicas (a multi-node replica is ready when all of its pods are) and the most
    specific reason why not all desired replicas are ready and up to date. A pod on one of
    ``not_ready_nodes`` is not counted ready, whatever its own status still says."""
    serving = [
        p
        for p in pods
        if (p.get("metadata") or {}).get("labels", {}).get(n.COMPONENT) == n.COMPONENT_SERVING
    ]
    lost = _node_lost_blocker(serving, not_ready_nodes)
    if lost is not None:
        serving = [
            {**p, "status": {**(p.get("status") or {}), "conditions": []}}
            if str((p.get("spec") or {}).get("nodeName") or "") in not_ready_nodes
            else p
            for p in serving
        ]
    if nodes_per_replica <= 1:
        ready = sum(1 for p in serving if pod_ready(p))
    else:
        by_replica: dict[str, list[Mapping[str, Any]]] = {}
        for pod in serving:
            labels = (pod.get("metadata") or {}).get("labels", {})
            # The StatefulSet layout labels a replica; LWS labels its groups.
            replica = labels.get(n.REPLICA) or labels.get(GROUP_INDEX_LABEL, "")
            by_replica.setdefault(str(replica), []).append(pod)
        ready = sum(
            1
            for group in by_replica.values()
            if len(group) >= nodes_per_replica and all(pod_ready(p) for p in group)
        )
    ready = min(ready, desired_replicas)
    blockers = [b for b in (pod_blocker(p, predicted) for p in serving) if b is not None]
    if lost is not None:
        blockers.append(lost)
    present = {_name(s) for s in statefulsets}
    missing = [name for name in expected_statefulsets if name not in present]
    if missing:
        blockers.append(Blocker(WAITING_FOR_PODS, f"StatefulSet {missing[0]} not created yet"))
    # No serving pod at all (a new deployment, one scaled from zero): nothing is being replaced,
    # the pods are awaited (WaitingForPods, below). A new StatefulSet's status lags its pod, and
    # saying RolloutInProgress then made every new deployment flip WaitingForPods →
    # RolloutInProgress → WaitingForPods: two status patches for no news (docs/benchmarks.md,
    # "Writes until Ready").
    rollout = _rollout_blocker(statefulsets) if serving else None
    if rollout is not None:
        blockers.append(rollout)
    expected_pods = desired_replicas * max(1, nodes_per_replica)
    if len(serving) < expected_pods and ready < desired_replicas:
        blockers.append(
            Blocker(WAITING_FOR_PODS, f"{len(serving)} of {expected_pods} serving pod(s) exist")
        )
    if not blockers and ready < desired_replicas:
        blockers.append(
            Blocker(WAITING_FOR_PODS, f"{ready} of {desired_replicas} replica(s) ready")
        )
    blocker = min(blockers, key=lambda b: _ORDER.index(b.reason)) if blockers else None
    return Readiness(ready, blocker)
