"""assess_readiness, reason by reason: what each pod and StatefulSet state means, which reason wins
when several apply, and how ready replicas are counted. Pure; each test can fail on its own."""

from __future__ import annotations

from typing import Any

import pytest

from nemotron_operator.status import Blocker, Readiness, assess_readiness


def pod(
    name: str = "nano-0",
    *,
    ready: bool = False,
    replica: str = "0",
    component: str = "serving",
    **status: Any,
) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "labels": {
                "app.kubernetes.io/component": component,
                "serving.nemotron.io/replica": replica,
            },
        },
        "status": {
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            **status,
        },
    }


def waiting(container: str, reason: str, message: str = "", **extra: Any) -> dict[str, Any]:
    return {
        "name": container,
        "state": {"waiting": {"reason": reason, "message": message}},
        **extra,
    }


def sts(name: str = "nano", replicas: int = 1, **status: Any) -> dict[str, Any]:
    settled = {
        "observedGeneration": 1,
        "updatedReplicas": replicas,
        "currentRevision": "a",
        "updateRevision": "a",
    }
    return {
        "metadata": {"name": name, "generation": 1},
        "spec": {"replicas": replicas},
        "status": {**settled, **status},
    }


def assess(pods: list[dict[str, Any]], **changes: Any) -> Readiness:
    args: dict[str, Any] = {
        "desired_replicas": 1,
        "nodes_per_replica": 1,
        "expected_statefulsets": ["nano"],
        "statefulsets": [sts()],
        "pods": pods,
    }
    return assess_readiness(**{**args, **changes})


def blocker(pods: list[dict[str, Any]], **changes: Any) -> Blocker:
    found = assess(pods, **changes).blocker
    assert found is not None
    return found


# Container states.


@pytest.mark.parametrize(
    "message",
    ['secret "hf-token" not found', "couldn't find key token in Secret ai/hf-token"],
)
def test_a_missing_secret_or_key_names_the_field_to_fix(message: str) -> None:
    found = blocker(
        [pod(initContainerStatuses=[waiting("download", "CreateContainerConfigError", message)])]
    )
    assert found.reason == "SecretNotFound"
    assert found.message.startswith(f"pod nano-0 container download: {message}; ")
    assert found.message.endswith(
        "create the Secret (and key) named in spec.model.source.huggingFace.tokenSecretRef in "
        "this namespace"
    )


def test_the_secret_check_ignores_case() -> None:
    message = 'Secret "HF" NOT FOUND'
    found = blocker(
        [pod(containerStatuses=[waiting("vllm", "CreateContainerConfigError", message)])]
    )
    assert found.reason == "SecretNotFound"


@pytest.mark.parametrize(
    ("message", "shown"),
    [
        ('configmap "parser" not found', 'configmap "parser" not found'),
        ("secret has an invalid key", "secret has an invalid key"),
        ("", "CreateContainerConfigError"),
    ],
)
def test_other_config_errors_are_invalid_pod_config(message: str, shown: str) -> None:
    found = blocker(
        [pod(containerStatuses=[waiting("vllm", "CreateContainerConfigError", message)])]
    )
    assert found == Blocker("InvalidPodConfig", f"pod nano-0 container vllm: {shown}")


@pytest.mark.parametrize("reason", ["ImagePullBackOff", "ErrImagePull", "InvalidImageName"])
def test_image_pull_failures_point_at_the_image_field(reason: str) -> None:
    found = blocker([pod(containerStatuses=[waiting("vllm", reason, "manifest unknown")])])
    assert found == Blocker(
        "ImagePullBackOff",
        "pod nano-0 container vllm: manifest unknown; check spec.engine.image",
    )
    bare = blocker([pod(containerStatuses=[waiting("vllm", reason)])])
    assert bare.message == f"pod nano-0 container vllm: {reason}; check spec.engine.image"


def test_a_crash_loop_shows_the_restarts_and_the_last_line_of_the_last_error() -> None:
    last = {"terminated": {"message": "Traceback...\nValueError: bad\nerror: unrecognized --x"}}
    crashing = waiting("vllm", "CrashLoopBackOff", "back-off 5m", restartCount=7, lastState=last)
    found = blocker([pod(containerStatuses=[crashing])])
    assert found == Blocker(
        "CrashLoop",
        "pod nano-0 container vllm keeps crashing (restarts: 7): error: unrecognized --x",
    )


def test_a_crash_loop_without_a_termination_message_falls_back() -> None:
    only_waiting = waiting("vllm", "CrashLoopBackOff", "back-off 10s restarting")
    assert blocker([pod(containerStatuses=[only_waiting])]).message.endswith(
        "(restarts: 0): back-off 10s restarting"
    )
    silent = waiting("vllm", "CrashLoopBackOff")
    assert blocker([pod(containerStatuses=[silent])]).message.endswith(": see kubectl logs")


def test_init_containers_are_looked_at_before_the_serving_container() -> None:
    found = blocker(
        [
            pod(
                initContainerStatuses=[waiting("download", "ErrImagePull")],
                containerStatuses=[waiting("vllm", "CrashLoopBackOff")],
            )
        ]
    )
    assert found.reason == "ImagePullBackOff"
    assert "container download" in found.message


def test_a_ready_pod_has_no_blocker_whatever_its_containers_say() -> None:
    ready = pod(ready=True, containerStatuses=[waiting("sidecar", "CrashLoopBackOff")])
    assert assess([ready]) == Readiness(1, None)


def test_an_unknown_waiting_reason_is_not_a_blocker_of_its_own() -> None:
    found = blocker(
        [pod(phase="Pending", containerStatuses=[waiting("vllm", "ContainerCreating")])]
    )
    assert found == Blocker("WaitingForPods", "pod nano-0 is Pending")


# Pod states.


def test_an_unschedulable_pod_says_what_the_scheduler_said() -> None:
    unschedulable = pod()
    unschedulable["status"]["conditions"].append(
        {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": "0/3 nodes",
        }
    )
    assert blocker([unschedulable]) == Blocker(
        "Unschedulable", "pod nano-0 cannot be scheduled: 0/3 nodes"
    )


def test_a_pod_waiting_for_its_claims_to_bind_waits_for_storage_not_capacity() -> None:
    waiting = pod()
    said = "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims."
    waiting["status"]["conditions"].append(
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": said}
    )
    assert blocker([waiting]) == Blocker(
        "WaitingForStorage", f"pod nano-0 waits for its volume claims to bind: {said}"
    )


@pytest.mark.parametrize(
    "condition",
    [
        {"type": "PodScheduled", "status": "True", "reason": "Unschedulable"},
        {"type": "PodScheduled", "status": "False", "reason": "SchedulerError"},
        {"type": "Initialized", "status": "False", "reason": "Unschedulable"},
    ],
)
def test_only_an_unschedulable_pod_scheduled_condition_counts(condition: dict[str, str]) -> None:
    other = pod()
    other["status"]["conditions"].append(condition)
    assert blocker([other]).reason == "WaitingForPods"


def test_a_running_pod_or_a_running_download_is_loading_the_model() -> None:
    assert blocker([pod(phase="Running")]) == Blocker(
        "LoadingModel",
        "pod nano-0: Loading (vLLM is loading the weights, compiling and capturing CUDA graphs)",
    )
    downloading = pod(
        phase="Pending",
        initContainerStatuses=[
            {"name": "download", "state": {"running": {"startedAt": "2026-05-01T12:00:00Z"}}}
        ],
    )
    assert blocker([downloading]) == Blocker(
        "LoadingModel",
        "pod nano-0: Downloading (downloading the weights into the cache) since "
        "2026-05-01T12:00:00Z",
    )


def test_a_pending_pod_is_waited_for_by_name_and_phase() -> None:
    assert blocker([pod(phase="Pending")]).message == "pod nano-0 is Pending"
    assert blocker([pod()]).message == "pod nano-0 is Pending"  # no phase yet
    assert blocker([pod(phase="Failed")]).message == "pod nano-0 is Failed"


# StatefulSets.


@pytest.mark.parametrize(
    "status",
    [
        {"updateRevision": "b"},  # pods are being replaced with a new revision
        {"updatedReplicas": 0, "replicas": 1},  # a pod it counts is not updated
    ],
)
def test_a_statefulset_still_rolling_out_blocks(status: dict[str, Any]) -> None:
    rolling = sts(**{k: v for k, v in status.items() if k != "replicas"})
    rolling["status"].update({k: v for k, v in status.items() if k == "replicas"})
    found = blocker([pod(ready=True)], statefulsets=[rolling])
    assert found.reason == "RolloutInProgress"
    updated = status.get("updatedReplicas", 1)
    assert found.message == f"StatefulSet nano: {updated} of 1 pod(s) updated"


def test_a_statefulset_whose_status_is_stale_says_so_instead_of_a_count() -> None:
    """kube-controller-manager has not observed the latest generation (it is down, or slow):
    the counts in status describe an older spec."""
    stale = sts(replicas=2, observedGeneration=1, updatedReplicas=2)
    stale["metadata"]["generation"] = 2
    found = blocker([pod(ready=True)], desired_replicas=2, statefulsets=[stale])
    assert found.reason == "RolloutInProgress"
    assert found.message == (
        "StatefulSet nano: its status is stale (observedGeneration 1, generation 2): "
        "kube-controller-manager's StatefulSet controller has not acted on the change yet"
    )
    assert "pod(s) updated" not in found.message


def test_a_settled_statefulset_without_an_update_revision_is_not_rolling() -> None:
    settled = sts(updateRevision=None)
    assert assess([pod(ready=True)], statefulsets=[settled]) == Readiness(1, None)


def test_replicas_default_to_one_and_missing_counts_to_zero() -> None:
    bare = {"metadata": {"name": "nano", "generation": 1}, "spec": {}, "status": {}}
    # Never observed (no revision yet): a new StatefulSet, nothing to roll; once a revision
    # exists, a status behind the generation is a rollout not acted on yet.
    assert assess([pod(ready=True)], statefulsets=[bare]).blocker is None
    bare["status"] = {"currentRevision": "a"}
    found = blocker([pod(ready=True)], statefulsets=[bare])
    assert found.reason == "RolloutInProgress"
    assert "its status is stale (observedGeneration 0, generation 1)" in found.message


@pytest.mark.parametrize(
    "status",
    [{}, {"observedGeneration": 1, "updatedReplicas": 0}, {"updateRevision": "b"}],
    # (the first: the StatefulSet never observed; a Pending pod can precede its status)
    ids=["never observed", "observed, no pod yet", "scaled from zero, new revision"],
)
def test_no_serving_pod_yet_is_waiting_for_pods_not_a_rollout(status: dict[str, Any]) -> None:
    # A new StatefulSet's status lags its creation: no RolloutInProgress while no pod exists
    # (it made every create flip WaitingForPods -> RolloutInProgress -> WaitingForPods).
    new = sts(**status)
    if not status:
        new["status"] = {}
    waiting = Blocker("WaitingForPods", "0 of 1 serving pod(s) exist")
    assert blocker([], statefulsets=[new]) == waiting


def test_a_missing_statefulset_is_waited_for_by_name() -> None:
    found = blocker([], expected_statefulsets=["nano", "nano-w"], statefulsets=[sts()])
    assert found.reason == "WaitingForPods"
    assert found.message in ("StatefulSet nano-w not created yet", "0 of 1 serving pod(s) exist")
    only_missing = blocker(
        [pod(ready=True)], expected_statefulsets=["nano", "nano-w"], statefulsets=[sts()]
    )
    assert only_missing == Blocker("WaitingForPods", "StatefulSet nano-w not created yet")


# Counting and priority.


def test_too_few_pods_are_counted_against_the_replicas_times_nodes() -> None:
    found = blocker(
        [pod("a-0", ready=True, replica="0")],
        desired_replicas=2,
        nodes_per_replica=2,
        expected_statefulsets=[],
        statefulsets=[],
    )
    assert found == Blocker("WaitingForPods", "1 of 4 serving pod(s) exist")


def test_all_pods_present_but_not_enough_ready_says_how_many() -> None:
    pods = [pod("a-0", ready=True, replica="0"), pod("b-0", ready=True, replica="1")]
    found = assess(pods, desired_replicas=3, expected_statefulsets=[], statefulsets=[])
    assert found == Readiness(2, Blocker("WaitingForPods", "2 of 3 serving pod(s) exist"))


def test_only_serving_pods_count() -> None:
    helper = pod("download-job", ready=True, component="download")
    assert assess([helper]).ready_replicas == 0
    assert assess([helper, pod(ready=True)]) == Readiness(1, None)


def test_ready_replicas_never_exceed_the_desired_count() -> None:
    pods = [pod(f"nano-{i}", ready=True, replica=str(i)) for i in range(3)]
    assert assess(pods, desired_replicas=2).ready_replicas == 2
    assert assess(pods, desired_replicas=0) == Readiness(0, None)


def test_a_multi_node_replica_is_ready_when_all_its_pods_are() -> None:
    pods = [
        pod("r0-leader", ready=True, replica="0"),
        pod("r0-worker", ready=True, replica="0"),
        pod("r1-leader", ready=True, replica="1"),
        pod("r1-worker", ready=False, replica="1", phase="Running"),
    ]
    found = assess(
        pods, desired_replicas=2, nodes_per_replica=2, expected_statefulsets=[], statefulsets=[]
    )
    assert found.ready_replicas == 1
    assert found.blocker is not None
    assert found.blocker.reason == "LoadingModel"
    assert found.blocker.message.startswith("pod r1-worker: Loading")
    pods[3]["status"]["conditions"][0]["status"] = "True"
    everything = assess(
        pods, desired_replicas=2, nodes_per_replica=2, expected_statefulsets=[], statefulsets=[]
    )
    assert everything == Readiness(2, None)


def test_a_single_node_replica_counts_each_ready_pod() -> None:
    pods = [pod("a", ready=True, replica="0"), pod("b", ready=True, replica="0")]
    # nodes_per_replica 1: pods are replicas, whatever their replica label says.
    assert assess(pods, desired_replicas=2, expected_statefulsets=[], statefulsets=[]) == (
        Readiness(2, None)
    )


def test_the_most_specific_reason_wins() -> None:
    secret = pod(
        "p-secret",
        initContainerStatuses=[waiting("d", "CreateContainerConfigError", 'secret "s" not found')],
    )
    image = pod("p-image", containerStatuses=[waiting("v", "ImagePullBackOff")])
    crash = pod("p-crash", containerStatuses=[waiting("v", "CrashLoopBackOff")])
    config = pod("p-config", containerStatuses=[waiting("v", "CreateContainerConfigError", "x")])
    unschedulable = pod("p-unsched")
    unschedulable["status"]["conditions"].append(
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "m"}
    )
    loading = pod("p-loading", phase="Running")
    order = [secret, image, crash, config, unschedulable, loading]
    expected = [
        "SecretNotFound",
        "ImagePullBackOff",
        "CrashLoop",
        "InvalidPodConfig",
        "Unschedulable",
        "LoadingModel",
        "RolloutInProgress",
    ]
    rolling = [sts(updateRevision="b")]
    for index, reason in enumerate(expected):
        # the winner is listed last; a rollout is about pods that exist (one Ready here)
        pods = list(reversed(order[index:])) or [pod("p-ready", ready=True)]
        found = blocker(pods, desired_replicas=len(pods) or 1, statefulsets=rolling)
        assert found.reason == reason


# Objects with fields missing, as a half-written or foreign object can come.


def test_missing_names_and_messages_read_as_question_marks_and_nothing() -> None:
    nameless = pod(containerStatuses=[{"state": {"waiting": {"reason": "ErrImagePull"}}}])
    del nameless["metadata"]["name"]
    assert blocker([nameless]).message == (
        "pod ? container ?: ErrImagePull; check spec.engine.image"
    )
    unschedulable = pod()
    unschedulable["status"]["conditions"].append(
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
    )
    assert blocker([unschedulable]).message == "pod nano-0 cannot be scheduled: "


def test_a_pod_without_labels_is_not_a_serving_pod() -> None:
    bare = {"metadata": {"name": "x"}, "status": {"phase": "Running"}}
    assert assess([bare, pod(ready=True)]) == Readiness(1, None)


def test_a_statefulset_of_several_replicas_is_rolled_out_when_all_are_updated() -> None:
    assert assess([pod(ready=True)], statefulsets=[sts(replicas=3)]) == Readiness(1, None)
    three = sts(replicas=3, updatedReplicas=2)
    three["status"]["replicas"] = 3  # three pods counted, two updated
    behind = blocker([pod(ready=True)], statefulsets=[three])
    assert behind == Blocker("RolloutInProgress", "StatefulSet nano: 2 of 3 pod(s) updated")


def test_a_statefulset_without_generations_is_not_stale() -> None:
    unnumbered = sts()
    del unnumbered["metadata"]["generation"]
    del unnumbered["status"]["observedGeneration"]
    assert assess([pod(ready=True)], statefulsets=[unnumbered]) == Readiness(1, None)


def test_every_pod_present_and_ready_yet_a_replica_short_says_how_many_replicas() -> None:
    # Three ready pods carry replica 0's label and one carries replica 1's: four pods exist for
    # two 2-node replicas, but only replica 0 is whole.
    pods = [
        pod("a", ready=True, replica="0"),
        pod("b", ready=True, replica="0"),
        pod("c", ready=True, replica="0"),
        pod("d", ready=True, replica="1"),
    ]
    found = assess(
        pods, desired_replicas=2, nodes_per_replica=2, expected_statefulsets=[], statefulsets=[]
    )
    assert found == Readiness(1, Blocker("WaitingForPods", "1 of 2 replica(s) ready"))


# A node lost: kube-controller-manager marked it not Ready.
def _on(node: str, item: dict[str, Any]) -> dict[str, Any]:
    return {**item, "spec": {"nodeName": node}}


def test_a_pod_on_a_lost_node_is_not_ready_and_the_node_and_pod_are_named() -> None:
    pods = [_on("gpu-a", pod("nano-0", ready=True)), _on("gpu-b", pod("nano-1", ready=True))]
    found = assess(pods, desired_replicas=2, statefulsets=[sts(replicas=2)],
                   not_ready_nodes=frozenset({"gpu-a"}))  # fmt: skip
    # Its own status may still say Ready (kube-controller-manager marks pods a moment later).
    assert found.ready_replicas == 1
    assert found.blocker is not None
    assert found.blocker.reason == "NodeLost"
    assert "node gpu-a: pod(s) nano-0" in found.blocker.message
    assert "gpu-b" not in found.blocker.message
    assert "nano-1" not in found.blocker.message


def test_node_lost_outranks_what_the_pod_itself_says() -> None:
    crashing = pod("nano-0", containerStatuses=[waiting("vllm", "CrashLoopBackOff")])
    assert blocker([_on("gpu-a", crashing)], not_ready_nodes=frozenset({"gpu-a"})).reason == (
        "NodeLost"
    )
    # Another node not Ready, where none of this deployment's pods runs: no effect.
    other = assess([_on("gpu-a", pod("nano-0", ready=True))], not_ready_nodes=frozenset({"x"}))
    assert other == Readiness(1, None)
