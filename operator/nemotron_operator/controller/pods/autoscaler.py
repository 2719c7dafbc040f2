"""The built-in autoscaler in the running operator (docs/observability.md, "Autoscaling").

Driven by the scrape timer only (``Scraper.after_tick``), never by a reconcile: after each
deployment's scrape it applies the pure rule (``nemotron_operator.autoscale.decide``) to the last
figures and what the last reconcile saw (:class:`AutoscaleView`), sets ``spec.replicas`` through
the scale subresource as an HPA would (``kube.writes.scale``), and posts an Event. When the
cluster's GPUs hold fewer replicas than it wants, it tells the reconcile (``seen`` returns the
message for ``CapacityAvailable=False``) and queues the deployment so that status says so.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from nemotron_operator.api import Plan
from nemotron_operator.api.autoscaling import AutoscalingSpec
from nemotron_operator.autoscale import AutoscaleInputs, AutoscaleState, decide
from nemotron_operator.controller.queue import Key, WorkQueue
from nemotron_operator.kube import ApiError, KubeClient, writes
from nemotron_operator.observe.throughput import ThroughputFigures

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class AutoscaleView:
    """What the last reconcile saw of one deployment."""

    owner: Mapping[str, Any]  # name, namespace, uid, resourceVersion: for Events
    autoscaling: AutoscalingSpec | None  # None: not autoscaled
    plan: Plan | None
    replicas: int  # spec.replicas
    ready_replicas: int
    # Replicas the cluster's GPUs of the plan's product hold (None: elastic or unknown).
    replicas_that_fit: int | None


def _idle(figures: ThroughputFigures) -> bool | None:
    """No request running or waiting, and none served since the last scrape (the prompt and
    generation token counters did not move); None until a rate exists."""
    if figures.requests_running or figures.requests_waiting:
        return False
    if figures.pods_with_rates < max(1, figures.pods_sampled):
        return None
    return figures.prompt_tokens_per_second == 0 and figures.generation_tokens_per_second == 0


class Autoscaler:
    def __init__(self, kube: KubeClient, queue: WorkQueue) -> None:
        self.kube = kube
        self.queue = queue
        self._views: dict[Key, AutoscaleView] = {}
        self._memory: dict[Key, AutoscaleState] = {}  # the rule's stabilization windows
        self._problems: dict[Key, str] = {}  # wanted more replicas than fit: for status

    def seen(self, key: Key, view: AutoscaleView) -> str | None:
        """Remember what the reconcile saw; the capacity problem status should show, if any.
        With autoscaling.provider KEDA the deployment counts as not autoscaled here: KEDA sets
        spec.replicas, and two writers of one field fight."""
        if view.autoscaling is not None and not view.autoscaling.built_in:
            view = replace(view, autoscaling=None)
        self._views[key] = view
        if view.autoscaling is None:
            self._problems.pop(key, None)
        return self._problems.get(key)

    def scales(self, key: Key) -> bool:
        """``key`` has autoscaling: its figures must be scraped at the busy pace."""
        view = self._views.get(key)
        return view is not None and view.autoscaling is not None

    def revision(self, key: Key) -> str | None:
        """The capacity problem status shows for ``key`` (``DeploymentPart``: the fingerprint)."""
        return self._problems.get(key)

    def forget(self, key: Key) -> None:
        """The deployment is gone."""
        self._views.pop(key, None)
        self._memory.pop(key, None)
        self._problems.pop(key, None)

    async def tick(self, key: Key, figures: ThroughputFigures | None) -> None:
        """Decide on the last figures; scale and post Events. API errors are logged: the next
        tick decides again."""
        try:
            await self._decide(key, figures)
        except ApiError as exc:
            logger.warning("%s/%s: autoscaling failed: %s", *key, exc)

    async def _decide(self, key: Key, figures: ThroughputFigures | None) -> None:
        view = self._views.get(key)
        if view is None or view.autoscaling is None or view.plan is None:
            return
        plan = view.plan
        answered = figures is not None and figures.pods_sampled > 0
        decision = decide(
            view.autoscaling,
            AutoscaleInputs(
                replicas=view.replicas,
                ready_replicas=view.ready_replicas,
                requests_waiting=figures.requests_waiting if answered and figures else None,
                kv_cache_usage=figures.kv_cache_usage if answered and figures else None,
                gpu_product=plan.gpu_product,
                gpus_per_replica=plan.gpus_per_replica,
                replicas_that_fit=view.replicas_that_fit,
                idle=_idle(figures) if answered and figures else None,
            ),
            self._memory.get(key, AutoscaleState()),
            time.monotonic(),
        )
        self._memory[key] = decision.state
        changed = decision.changed(view.replicas)
        # The status message is stable (no live figure in it), so a stuck autoscaler writes
        # status and posts its Warning once, not every tick.
        problem = None
        if decision.capacity_limited and not changed:
            problem = (
                f"autoscaling wants more replicas than the cluster's {plan.gpu_product} GPUs "
                f"hold ({view.replicas_that_fit} replicas of {plan.gpus_per_replica} GPUs): "
                f"add {plan.gpu_product} nodes or lower spec.autoscaling.maxReplicas"
            )
        if problem != self._problems.get(key):
            if problem is None:
                self._problems.pop(key, None)
            else:
                self._problems[key] = problem
            self.queue.add(key)
            if problem is not None:
                await self._event(view.owner, decision.reason, decision.message, warning=True)
        if changed:
            await writes.scale(self.kube, key[0], key[1], decision.replicas)
            if self._views.get(key) is view:  # until the next reconcile reads spec.replicas
                self._views[key] = replace(view, replicas=decision.replicas)
            logger.info("%s/%s: %s", *key, decision.message)
            await self._event(
                view.owner, decision.reason, decision.message, warning=decision.capacity_limited
            )

    async def _event(
        self, owner: Mapping[str, Any], reason: str, message: str, *, warning: bool
    ) -> None:
        with contextlib.suppress(ApiError):  # an Event is a courtesy; losing one is no failure
            await writes.post_event(
                self.kube,
                owner,
                type_="Warning" if warning else "Normal",
                reason=reason,
                message=message,
                now=datetime.now(UTC),
            )
