"""Which condition changes of a NemotronDeployment are news, and of which Kubernetes Event type.

Pure: read by ``events.py`` (which Events to post) and ``progress_hold.py`` (which status
writes may wait).
"""

from __future__ import annotations

from nemotron_operator.api import Condition

# A condition in this state is bad news: a Warning Event; anything else is Normal.
_WARNING = {
    ("Feasible", "False"),
    ("CapacityAvailable", "False"),
    ("Degraded", "True"),
    ("PlanAccurate", "False"),  # vLLM got materially less KV cache than planned
    ("Verified", "False"),  # a serving pod failed the behavioural check: it takes no traffic
    ("Autoscaling", "False"),  # autoscaling.provider KEDA without KEDA: nothing scales it
}

# Ready=False for these reasons is progress, not trouble: a Normal Event.
_PROGRESS = frozenset(
    {
        "LoadingModel",
        "DownloadingWeights",  # a shared cache's download Job runs (status/download.py)
        "Verifying",
        "WaitingForPods",
        "RolloutInProgress",
        "NotPlanned",
        "ScaledToZero",  # scale to zero (autoscaling.minReplicas 0): idle, by design
    }
)


def event_type(condition: Condition) -> str:
    if (condition.type, condition.status) in _WARNING:
        return "Warning"
    if condition.type == "Ready" and condition.status == "False":
        return "Normal" if condition.reason in _PROGRESS else "Warning"
    return "Normal"


def worth_an_event(
    before: Condition | None, after: Condition, *, first_ready: bool = False
) -> bool:
    """Warnings, the loss of Ready, Ready regained, and recoveries from a warning. Not a
    condition's first healthy value, not a step of progress while the deployment was not Ready
    yet (WaitingForPods → LoadingModel → Verifying), and not its first Ready (``first_ready``:
    no serving pod of it had been Ready before). Those are in status — the conditions (reason,
    message, ``lastTransitionTime``) and ``startup.lastObserved`` (the first start, phase by
    phase) — as Kubernetes' own workload controllers leave a Deployment becoming available to
    its status. An Event each made 4 of the 12 writes a deployment cost until Ready
    (docs/benchmarks.md, issue 41): a healthy create posts none."""
    if event_type(after) == "Warning":
        return True
    if before is not None and event_type(before) == "Warning":
        return True  # a recovery
    if after.type == "Ready":
        if after.status == "True":
            return not first_ready
        return before is not None and before.status == "True"
    return False


def event_message(condition: Condition) -> str:
    return f"{condition.type}={condition.status}: {condition.message}"
