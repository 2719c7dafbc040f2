"""The one reconcile: read the NemotronDeployment → GPU inventory → plan → render → apply what
differs → observe → status (written only when it changed) → Events for condition changes.

Level-based: it reads everything it needs each time and never looks at what changed since the
last run, so it is safe to run any number of times, for any reason (a create, an edit, a child's
event, the resync timer, a restart). API errors propagate as ``ApiError`` for the worker to
re-queue with a delay; an invalid or infeasible spec is not an error but a status.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from nemotron_operator.api import DEFAULT_IMAGE, NemotronDeployment, NemotronDeploymentStatus
from nemotron_operator.api.errors import SpecError, parse_deployment
from nemotron_operator.api.status import NodePoolStatus
from nemotron_operator.controller import children
from nemotron_operator.controller.events import post_events
from nemotron_operator.controller.inventory import InventoryReader
from nemotron_operator.controller.observability import Observability
from nemotron_operator.controller.settings import OperatorConfig
from nemotron_operator.kube import Action, ApiError, KubeClient
from nemotron_operator.kube.resources import (
    CHILD_RESOURCES,
    NEMOTRON_DEPLOYMENTS,
    NODE_POOLS,
    OPTIONAL_RESOURCES,
    PODS,
    STATEFULSETS,
    Resource,
    resource_of,
)
from nemotron_operator.render import RenderError, RenderOptions, render_all
from nemotron_operator.render import names as n
from nemotron_operator.render.engine import SERVE_PORT
from nemotron_operator.render.inputs import Owner
from nemotron_operator.sizing import PlanningError, PlanResult, plan_deployment
from nemotron_operator.status import (
    Problem,
    StatusInputs,
    check_capacity,
    compute_status,
    flipped,
    observe,
)

FINALIZER = f"{n.DOMAIN}/node-pool-cleanup"
INVALID_SPEC = "InvalidSpec"
DISCOVERY_TTL = 30.0
logger = logging.getLogger(__name__)


@dataclass
class Outcome:
    """What one reconcile did (for logs, metrics and tests)."""

    result: str  # "ok", "infeasible", "gone", "finalizing", "finalized"
    applied: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    status_written: bool = False
    status: NemotronDeploymentStatus | None = None
    plan_result: PlanResult | None = None
    retry_after: float | None = None  # re-queue sooner than the resync (e.g. finalizing)
    created: str | None = None  # metadata.creationTimestamp (time-to-ready metric)
    backoff: float | None = None  # re-queue no sooner than this (a refused apply)


def _pools_left(live: children.Live, deleted: list[str]) -> list[dict[str, Any]]:
    """This deployment's NodePools that the reconcile did not just delete."""
    return [p for p in live.of(NODE_POOLS) if f"NodePool/{p['metadata']['name']}" not in deleted]


def _now() -> datetime:
    return datetime.now(UTC)


def _timestamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse(raw: dict[str, Any]) -> NemotronDeployment:
    metadata = raw.get("metadata") or {}
    keep = {
        k: metadata[k]
        for k in ("name", "namespace", "labels", "generation", "uid")
        if k in metadata
    }
    return parse_deployment(
        {
            "apiVersion": raw.get("apiVersion"),
            "kind": raw.get("kind"),
            "metadata": keep,
            "spec": raw.get("spec"),
        }
    )


def _previous_status(raw: dict[str, Any]) -> NemotronDeploymentStatus | None:
    try:
        return NemotronDeploymentStatus.model_validate(raw.get("status") or {})
    except ValidationError:
        return None


def _key(raw: dict[str, Any]) -> tuple[str, str]:
    return raw["metadata"]["namespace"], raw["metadata"]["name"]


def _merge_patch(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """A JSON merge patch turning ``old`` into ``new``: a key no longer set is sent as null, at
    every depth (a merge patch merges nested objects, so e.g. a throughput figure that became
    None would otherwise linger)."""
    body: dict[str, Any] = {}
    for key, value in new.items():
        before = old.get(key)
        if isinstance(value, dict) and isinstance(before, dict):
            body[key] = _merge_patch(before, value)
        else:
            body[key] = value
    for key in old:
        body.setdefault(key, None)
    return body


class Reconciler:
    def __init__(self, kube: KubeClient, config: OperatorConfig) -> None:
        self.kube = kube
        self.config = config
        self.inventory = InventoryReader(kube, ttl=min(5.0, config.resync_seconds / 2))
        self._served: frozenset[Resource] | None = None
        self._served_at = -1e9
        self.observability: Observability | None = None  # set by the runtime
        self.cache: children.Cache | None = None  # the watch cache, set by the runtime

    async def served(self) -> frozenset[Resource]:
        """Child kinds the cluster serves (PodMonitor and NodePool need their CRDs)."""
        if self._served is None or time.monotonic() - self._served_at > DISCOVERY_TTL:
            found = {r for r in CHILD_RESOURCES if r not in OPTIONAL_RESOURCES}
            for resource in OPTIONAL_RESOURCES:
                if await self.kube.served(resource):
                    found.add(resource)
            self._served, self._served_at = frozenset(found), time.monotonic()
        if self.cache is not None:  # a CRD removed since discovery: its watch got a 404
            return self._served - self.cache.unserved()
        return self._served

    async def reconcile(self, namespace: str, name: str) -> Outcome:
        raw = await self.kube.get(NEMOTRON_DEPLOYMENTS, namespace, name)
        if raw is None:
            return Outcome("gone")
        if (raw.get("metadata") or {}).get("deletionTimestamp"):
            return await self._finalize(raw)
        return await self._converge(raw)

    def _plan(
        self, deployment: NemotronDeployment, inventory: Any
    ) -> tuple[PlanResult | None, list[dict[str, Any]], Problem | None]:
        try:
            result = plan_deployment(deployment.spec, inventory=inventory)
        except PlanningError as exc:
            where = f"{exc.field}: " if exc.field else ""
            return None, [], Problem(exc.reason, where + exc.message)
        metadata = deployment.metadata
        options = RenderOptions(
            owner=Owner(name=metadata.name, uid=metadata.uid or ""),
            allow_remote_code=self.config.allow_remote_code,
        )
        try:
            objects = render_all(deployment, result, options)
        except RenderError as exc:
            return None, [], Problem(INVALID_SPEC, "; ".join(str(e) for e in exc.errors))
        return result, objects, None

    async def _converge(self, raw: dict[str, Any]) -> Outcome:
        metadata = raw["metadata"]
        namespace, name = metadata["namespace"], metadata["name"]
        names = n.Names(name, namespace)
        problem: Problem | None = None
        result: PlanResult | None = None
        desired: list[dict[str, Any]] = []
        deployment: NemotronDeployment | None = None
        try:
            deployment = _parse(raw)
        except SpecError as exc:
            problem = Problem(INVALID_SPEC, "; ".join(str(e) for e in exc.errors))
        inventory = await self.inventory.read(namespace, names.instance)
        if deployment is not None:
            if deployment.spec.engine.image == DEFAULT_IMAGE != self.config.default_image:
                engine = deployment.spec.engine.model_copy(
                    update={"image": self.config.default_image}
                )
                spec = deployment.spec.model_copy(update={"engine": engine})
                deployment = deployment.model_copy(update={"spec": spec})
            # Planning and rendering are pure CPU work (tens of milliseconds, more for large
            # searches): off the event loop, so watches, renewals and probes keep their pace.
            result, desired, problem = await asyncio.to_thread(self._plan, deployment, inventory)
        served = await self.served()
        live = await children.read_live(
            self.kube, namespace, names, uid=metadata["uid"], served=served, cache=self.cache
        )
        outcome = Outcome(
            "ok" if problem is None else "infeasible",
            plan_result=result,
            created=metadata.get("creationTimestamp"),
        )
        apply_error: str | None = None
        karpenter = deployment is not None and deployment.spec.node_pool.provisioner == "Karpenter"
        if result is not None:
            wants_pool = any(resource_of(o) == NODE_POOLS for o in desired) and NODE_POOLS in served
            if wants_pool:
                await self._ensure_finalizer(raw)
            apply_error = await self._sync(desired, live, served, outcome)
            if not wants_pool and not _pools_left(live, outcome.deleted):
                await self._drop_finalizer(raw)
        pods = await children.read_instance(self.kube, PODS, namespace, names.instance, self.cache)
        observation = None
        capacity = None
        node_pool = None
        if result is not None and deployment is not None:
            plan = result.plan
            observation = observe(
                desired_replicas=plan.replicas,
                nodes_per_replica=plan.nodes_per_replica,
                expected_statefulsets=[
                    o["metadata"]["name"] for o in desired if resource_of(o) == STATEFULSETS
                ],
                statefulsets=live.of(STATEFULSETS),
                pods=pods,
            )
            capacity = check_capacity(inventory, plan, karpenter=karpenter)
            node_pool = NodePoolStatus.model_validate(
                {
                    "gpuProduct": plan.gpu_product,
                    "gpusPerNode": plan.gpus_per_node,
                    "nodes": plan.nodes,
                    "provisioner": deployment.spec.node_pool.provisioner,
                    "objectName": names.node_pool if karpenter else None,
                }
            )
        replicas = int((raw.get("spec") or {}).get("replicas", 1) or 0)
        inputs = StatusInputs(
            generation=metadata.get("generation"),
            replicas=result.plan.replicas if result is not None else replicas,
            selector=n.leader_selector_string(names),
            endpoint=names.endpoint(SERVE_PORT),
            plan=result.plan if result is not None else None,
            problem=problem,
            capacity=capacity,
            karpenter=karpenter,
            node_pool=node_pool,
            observation=observation,
            apply_error=apply_error,
        )
        # The metrics scraper's part (throughput, planCheck, PlanAccurate, autoscaler capacity).
        inputs = await self._with_observed(raw, deployment, result, pods, inputs)
        await self._write_status(raw, inputs, outcome)
        return outcome

    async def _sync(
        self,
        desired: list[dict[str, Any]],
        live: children.Live,
        served: frozenset[Resource],
        outcome: Outcome,
    ) -> str | None:
        """Apply and prune the children; what the server refused, for status."""
        try:
            synced = await children.sync(self.kube, desired, live, served=served, cache=self.cache)
        except ApiError as exc:
            if exc.status == 404:
                # A kind discovery said was served is not (its CRD was just removed): look
                # again before the retry, or the missing kind would read as a gone object.
                self._served = None
                raise ApiError(503, "KindNotServed", exc.message, exc.method, exc.url) from exc
            if exc.action is not Action.REPORT:
                raise
            # The server refuses what we rendered (an immutable field, an admission policy):
            # say so in status and try again later, not in a tight loop.
            outcome.backoff = self.config.retry_max_seconds
            return f"{exc.method} {exc.url}: {exc.status} {exc.reason}: {exc.message}"
        outcome.applied, outcome.deleted = synced.applied, synced.deleted
        return None

    async def _with_observed(
        self,
        raw: dict[str, Any],
        deployment: NemotronDeployment | None,
        result: PlanResult | None,
        pods: list[dict[str, Any]],
        inputs: StatusInputs,
    ) -> StatusInputs:
        """What the metrics scraper contributes to status (controller.observability): a ready
        serving pod never sampled is scraped first, so this status carries its figures."""
        if self.observability is None:
            return inputs
        fit = None
        if inputs.capacity is not None and result is not None and not inputs.karpenter:
            fit = inputs.capacity.slots_free // max(1, result.plan.nodes_per_replica)
        observation = inputs.observation
        parts = await self.observability.seen(
            raw,
            deployment,
            result.plan if result is not None else None,
            pods,
            ready_replicas=observation.ready_replicas if observation is not None else 0,
            replicas_that_fit=fit,
            previous=_previous_status(raw),
        )
        accurate = parts.plan_accurate
        return dataclasses.replace(
            inputs,
            throughput=parts.throughput,
            plan_check=parts.plan_check,
            plan_accurate=None
            if accurate is None
            else (accurate.status, accurate.reason, accurate.message),
            autoscale_capacity_problem=parts.capacity_problem,
        )

    async def _write_status(
        self, raw: dict[str, Any], inputs: StatusInputs, outcome: Outcome
    ) -> None:
        previous = _previous_status(raw)
        moment = _now()
        status = compute_status(inputs, previous, now=_timestamp(moment))
        outcome.status = status
        new_wire = status.to_wire()
        old_wire = previous.to_wire() if previous is not None else None
        if new_wire == old_wire:
            return
        old = old_wire or {}
        changed = sorted(k for k in {*new_wire, *old} if new_wire.get(k) != old.get(k))
        logger.debug("%s/%s: status changes in %s", *_key(raw), changed)
        body = _merge_patch(raw.get("status") or {}, new_wire)
        metadata = raw["metadata"]
        patch = {"metadata": {"resourceVersion": metadata["resourceVersion"]}, "status": body}
        await self.kube.patch(
            NEMOTRON_DEPLOYMENTS,
            metadata["namespace"],
            metadata["name"],
            patch,
            subresource="status",
        )
        outcome.status_written = True
        before = list(previous.conditions) if previous is not None else []
        await post_events(self.kube, raw, before, flipped(before, status.conditions), moment)

    async def _patch_finalizers(self, raw: dict[str, Any], value: list[str]) -> None:
        """Set ``metadata.finalizers`` if the object is still the version read: a JSON patch
        whose ``test`` fails (422) means someone wrote first, which is a conflict (re-read and
        retry soon), not a bad request."""
        metadata = raw["metadata"]
        ops: list[dict[str, Any]] = [
            {
                "op": "test",
                "path": "/metadata/resourceVersion",
                "value": metadata["resourceVersion"],
            },
            {"op": "add", "path": "/metadata/finalizers", "value": value},
        ]
        try:
            updated = await self.kube.patch(
                NEMOTRON_DEPLOYMENTS, metadata["namespace"], metadata["name"], ops, json_patch=True
            )
        except ApiError as exc:
            if exc.status == 422:
                raise ApiError(409, "Conflict", exc.message, exc.method, exc.url) from exc
            raise
        raw["metadata"] = updated.get("metadata", metadata)

    async def _ensure_finalizer(self, raw: dict[str, Any]) -> None:
        current = list(raw["metadata"].get("finalizers") or [])
        if FINALIZER not in current:
            await self._patch_finalizers(raw, [*current, FINALIZER])

    async def _drop_finalizer(self, raw: dict[str, Any]) -> bool:
        current = list(raw["metadata"].get("finalizers") or [])
        if FINALIZER not in current:
            return False
        await self._patch_finalizers(raw, [f for f in current if f != FINALIZER])
        return True

    async def _finalize(self, raw: dict[str, Any]) -> Outcome:
        """Deletion: the namespaced children go by garbage collection (owner references); the
        cluster-scoped NodePool has no owner, so it is deleted here before the finalizer goes."""
        metadata = raw["metadata"]
        if FINALIZER not in (metadata.get("finalizers") or []):
            return Outcome("gone")
        names = n.Names(metadata["name"], metadata["namespace"])
        served = await self.served()
        pools = frozenset({NODE_POOLS}) & served
        live = await children.read_live(
            self.kube,
            metadata["namespace"],
            names,
            uid=metadata["uid"],
            served=pools,
            cache=self.cache,
        )
        if not await children.delete_node_pools(self.kube, live):
            return Outcome(
                "finalizing",
                deleted=[f"NodePool/{p['metadata']['name']}" for p in live.of(NODE_POOLS)],
                retry_after=1.0,
            )
        await self._drop_finalizer(raw)
        return Outcome("finalized")
