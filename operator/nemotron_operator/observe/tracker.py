"""What the operator remembers about one deployment between scrapes, and what each scrape
changes: the throughput figures, whether status needs them, and the plan check once per pod
start. Pure: scrape results and time come in, decisions go out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from nemotron_operator.api.plan import Plan
from nemotron_operator.api.status import PlanCheck, Throughput
from nemotron_operator.observe import change, plan_check
from nemotron_operator.observe.plan_check import ObservedCache, PlanCheckResult
from nemotron_operator.observe.samples import PodSample
from nemotron_operator.observe.throughput import ThroughputFigures, aggregate

UNRESPONSIVE_AFTER = 2  # consecutive failed scrapes before status lists a pod as unresponsive


@dataclass(frozen=True)
class TrackerUpdate:
    figures: ThroughputFigures
    throughput: Throughput  # what status should show now (the old one when nothing moved)
    throughput_changed: tuple[str, ...]  # figures that moved meaningfully; empty: no write
    plan_check: PlanCheckResult | None
    plan_check_status: PlanCheck | None
    plan_check_changed: bool  # a pod started (or went) since the last comparison


@dataclass
class DeploymentTracker:
    """One per NemotronDeployment, kept by the controller while the object exists."""

    shown: Throughput | None = None  # status.throughput as last written
    previous: dict[str, PodSample] = field(default_factory=dict)
    checked: dict[str, ObservedCache] = field(default_factory=dict)  # by pod key (uid)
    plan_check_status: PlanCheck | None = None
    last_figures: ThroughputFigures | None = None
    last_plan_check: PlanCheckResult | None = None
    misses: dict[str, int] = field(default_factory=dict)  # consecutive failed scrapes, by pod

    def update(
        self,
        plan: Plan | None,
        samples: Mapping[str, PodSample],
        pod_names: Mapping[str, str],
        unresponsive: Sequence[str],
        *,
        sampled_at: str,
        shortfall_threshold: float = plan_check.DEFAULT_SHORTFALL_THRESHOLD,
        current: frozenset[str] | None = None,
    ) -> TrackerUpdate:
        """``current``: the pods (keys) running the rendered revision, the only ones the plan
        is checked against (an old pod of a rollout runs another command); None: every pod."""
        # A pod's first sample is a base: rates need a second one.
        figures = aggregate(self.previous, samples, unresponsive)
        # A pod that did not answer keeps its last sample, so its next answer still has a base.
        self.previous = {
            key: sample
            for key, sample in {**self.previous, **samples}.items()
            if key in samples or pod_names.get(key) in unresponsive
        }
        self.last_figures = figures
        candidate = change.to_status(figures, sampled_at)
        # Pods answered but none has rates yet. With no pod's figures shown (a new deployment at
        # its first Ready: the reconcile samples it then) and no request in flight, the figures
        # are the base's: rates 0, nothing served yet but the operator's own check (whose tokens
        # are not serving figures). Otherwise — an operator restart, or a pod answering with
        # requests in flight — keep what status shows until the second sample gives rates.
        fresh = self.shown is None or self.shown.pods_sampled == 0
        idle = figures.requests_running == 0 and figures.requests_waiting == 0
        base_only = figures.pods_sampled > 0 and figures.pods_with_rates == 0
        warming_up = base_only and not (fresh and idle)
        # No serving pod yet (still deploying) and nothing shown: nothing to show, no write.
        nothing = self.shown is None and not samples and not unresponsive
        # One missed scrape (a slow answer on a busy node) is not "unresponsive": status changes
        # only once a pod has missed UNRESPONSIVE_AFTER scrapes in a row; /metrics shows each.
        self.misses = {pod: self.misses.get(pod, 0) + 1 for pod in unresponsive}
        passing = any(count < UNRESPONSIVE_AFTER for count in self.misses.values())
        moved = (
            ()
            if warming_up or nothing or passing
            else change.changed_figures(self.shown, candidate)
        )
        if moved:
            self.shown = candidate
        result, check_changed = self._check_plan(
            plan, samples, pod_names, sampled_at, shortfall_threshold, current=current
        )
        self.last_plan_check = result
        return TrackerUpdate(
            figures=figures,
            throughput=self.shown if self.shown is not None else candidate,
            throughput_changed=moved,
            plan_check=result,
            plan_check_status=self.plan_check_status,
            plan_check_changed=check_changed,
        )

    def _check_plan(
        self,
        plan: Plan | None,
        samples: Mapping[str, PodSample],
        pod_names: Mapping[str, str],
        checked_at: str,
        threshold: float,
        *,
        current: frozenset[str] | None,
    ) -> tuple[PlanCheckResult | None, bool]:
        if plan is None:
            return None, False
        changed = False
        for key, sample in samples.items():
            if key in self.checked or sample.cache_config is None:
                continue  # once per pod start: vLLM publishes its cache config once
            if current is not None and key not in current:
                continue  # started for another revision (and plan): not this plan's to meet
            observed = plan_check.observed_cache(pod_names.get(key, key), sample.cache_config, plan)
            if observed is not None:
                self.checked[key] = observed
                changed = True
        result = plan_check.compare(plan, list(self.checked.values()), threshold)
        if not changed or result is None:
            return result, False
        fresh = plan_check.to_status(result, checked_at)
        if (
            self.plan_check_status is not None
            and fresh.model_copy(update={"checked_at": self.plan_check_status.checked_at})
            == self.plan_check_status
        ):
            return result, False  # the same figures (e.g. re-checked after an operator restart)
        self.plan_check_status = fresh
        return result, True

    def sampled(self, key: str) -> bool:
        """Whether this pod has been sampled (a base for rates) or checked against the plan."""
        return key in self.previous or key in self.checked

    def forget_pods(self, live_keys: set[str]) -> None:
        """Drop what is known about pods that no longer exist (deleted or replaced)."""
        self.checked = {k: v for k, v in self.checked.items() if k in live_keys}
        self.previous = {k: v for k, v in self.previous.items() if k in live_keys}

    def replan(self) -> None:
        """The plan changed: every pod must be checked against the new one."""
        self.checked.clear()
        self.plan_check_status = None
        self.last_plan_check = None
