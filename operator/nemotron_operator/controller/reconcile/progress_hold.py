"""Steps of progress before the first Ready are written together: a status write may wait.

A new deployment's status goes through steps while its pods start — ``Ready=False`` with reason
``WaitingForPods`` → ``LoadingModel`` → ``Verifying`` → ``Ready=True`` — and each step the
operator observed was a status patch of its own: 3.0–3.8 of the 10–12 writes a deployment cost
until Ready on the benchmark (docs/benchmarks.md, issue 41), competing with the next
deployments' creates. Coalesced, not dropped:

- only a change that is *nothing but progress* may wait: the stored status exists, every
  condition keeps its status (only a reason or message moves) — but ``Verified`` may pass
  (Unknown → True: the check passed, and ``Ready`` follows once the kubelet has seen the pod's
  gate) —, ``Ready`` stays False for a reason of progress, no condition is or was a warning,
  and nothing else changed but the summary (``phase``, ``ready``, ``readyReplicas``) and
  ``startup``;
- it waits at most ``seconds`` (``--progress-hold-seconds``, default 5) from the first
  unwritten change: whatever the status is then is written, so a step that lasts reaches status
  within ``seconds``, and steps that follow each other faster are written together;
- anything else — the plan at create, a spec change, a warning, a recovery, ``Ready=True``, the
  loss of Ready — is written at once, with whatever progress was waiting.

``lastTransitionTime`` moves only when a condition's status flips (never inside a hold;
``Verified``'s is the pods' gate time, so a pass written with ``Ready`` keeps its moment),
``startup.since`` comes from the pod, and the start's phases are in ``startup.lastObserved``
(scheduling, download, load and verification seconds) once Ready is written.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable

from nemotron_operator.api import Condition, NemotronDeploymentStatus
from nemotron_operator.controller.queue import Key
from nemotron_operator.controller.reconcile.event_types import event_type

# Besides the conditions, what a step of progress may change without being written at once.
_PROGRESS_FIELDS = frozenset({"conditions", "phase", "ready", "readyReplicas", "startup"})


def progress_only(old: NemotronDeploymentStatus | None, new: NemotronDeploymentStatus) -> bool:
    """True when ``new`` differs from the stored ``old`` by steps of progress alone."""
    if old is None:
        return False
    old_wire, new_wire = old.to_wire(), new.to_wire()
    changed = {k for k in {*old_wire, *new_wire} if old_wire.get(k) != new_wire.get(k)}
    if not changed or changed - _PROGRESS_FIELDS:
        return False
    before = {c.type: c for c in old.conditions}
    after = {c.type: c for c in new.conditions}
    if before.keys() != after.keys():
        return False
    for type_, condition in after.items():
        previous = before[type_]
        if previous.status != condition.status and not _passed(type_, previous, condition):
            return False
        if event_type(previous) == "Warning" or event_type(condition) == "Warning":
            return False
    ready = after.get("Ready")
    return ready is not None and ready.status == "False"


def _passed(type_: str, before: Condition, after: Condition) -> bool:
    """``Verified`` passing: a step toward ``Ready``, which the kubelet sets moments later."""
    return type_ == "Verified" and before.status == "Unknown" and after.status == "True"


class ProgressHold:
    """The per-deployment part (``controller/part.py``) that remembers since when a write of
    progress has been waiting."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds = seconds
        self._clock = clock
        self._waiting_since: dict[Key, float] = {}

    def wait(
        self, key: Key, old: NemotronDeploymentStatus | None, new: NemotronDeploymentStatus
    ) -> float | None:
        """Seconds the write of ``new`` should still wait (re-queue then); None: write now."""
        if self.seconds <= 0 or not progress_only(old, new):
            self._waiting_since.pop(key, None)
            return None
        now = self._clock()
        since = self._waiting_since.setdefault(key, now)
        left = since + self.seconds - now
        if left <= 0:
            del self._waiting_since[key]
            return None
        return left

    def settled(self, key: Key) -> None:
        """The stored status is what the reconcile computed: nothing waits."""
        self._waiting_since.pop(key, None)

    def revision(self, key: Key) -> Hashable:
        # A waiting write re-queues the reconcile (Outcome.retry_after), and a re-queued
        # reconcile is never skipped as unchanged: nothing to add to the fingerprint.
        return None

    def forget(self, key: Key) -> None:
        self._waiting_since.pop(key, None)

    def __len__(self) -> int:
        return len(self._waiting_since)
