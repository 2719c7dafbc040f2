"""``DeploymentPart``: what every per-deployment part of the controller is told, and answers.

A part keeps something per NemotronDeployment beside the reconcile — the scraper its samples,
the autoscaler its windows, the behavioural check and the adapter sync their back-offs, the
rollouts their deadlines. Each is told the same two things, by one caller each:

- ``revision(key)``: what the part would now add to the deployment's status, as a version. It
  goes into the reconcile's fingerprint (``reconcile/unchanged.py``), so a reconcile is skipped
  only while no part has anything new (a new sample, a back-off or a deadline passed).
- ``forget(key)``: the deployment is gone (deleted, finalized, or not listed again by kopf):
  drop what is kept for it. ``Reconciler.forget`` tells every part, so no list of parts to
  forget is kept anywhere else.

The ``Controller`` (``runtime/controller.py``) builds every part and hands them to the
``Reconciler`` as one ``Parts`` (``reconcile/parts.py``).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Protocol

from nemotron_operator.controller.queue import Key


class DeploymentPart(Protocol):
    def revision(self, key: Key) -> Hashable:
        """Changes whenever what this part gives ``key``'s status would change."""
        ...

    def forget(self, key: Key) -> None:
        """``key`` is gone: drop everything kept for it."""
        ...
