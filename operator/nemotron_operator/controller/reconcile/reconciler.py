"""The one reconcile: read the NemotronDeployment → GPU inventory → plan → render → apply what
differs → readiness, scrapes and autoscaler → status (written only when it changed) → Events for
condition changes.

Level-based: it reads everything each time and never looks at what changed, so it is safe to run
any number of times, for any reason. API errors propagate as ``ApiError`` for the worker to
re-queue with a delay; an invalid or infeasible spec is a status. Writes go through ``kube.writes``.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from nemotron_operator.api import NemotronDeployment
from nemotron_operator.api.errors import SpecError
from nemotron_operator.api.status import NodePoolStatus
from nemotron_operator.controller.decide import desired, download, gateway, keda, multinode
from nemotron_operator.controller.decide.desired import Planned
from nemotron_operator.controller.decide.plan_memo import PlanMemo
from nemotron_operator.controller.decide.rollout import Held
from nemotron_operator.controller.pods.autoscaler import AutoscaleView
from nemotron_operator.controller.queue import Key
from nemotron_operator.controller.reconcile import apply, finalizer
from nemotron_operator.controller.reconcile.endpoint import routed_endpoint
from nemotron_operator.controller.reconcile.events import write_status
from nemotron_operator.controller.reconcile.outcome import Outcome, ReadState
from nemotron_operator.controller.reconcile.parts import Parts
from nemotron_operator.controller.reconcile.unchanged import Fingerprint, LastInputs, fingerprint
from nemotron_operator.controller.settings import OperatorConfig
from nemotron_operator.controller.watch.deployment_store import DeploymentStore
from nemotron_operator.controller.watch.inventory import InventoryReader
from nemotron_operator.controller.watch.served_kinds import ServedKinds, served_children
from nemotron_operator.kube import Action, ApiError, KubeClient
from nemotron_operator.kube.resources import (
    DEPLOYMENTS,
    LEADER_WORKER_SETS,
    NODE_POOLS,
    PODS,
    SCALED_OBJECTS,
    STATEFULSETS,
    Resource,
    resource_of,
)
from nemotron_operator.render import names as n
from nemotron_operator.render.engine import SERVE_PORT
from nemotron_operator.status import (
    Problem,
    StatusInputs,
    assess_readiness,
    check_capacity,
    node_pool_problem,
    startup,
)

__all__ = ["Outcome", "Reconciler"]
_EVENT_OWNER_FIELDS = ("name", "namespace", "uid", "resourceVersion")  # an Event's involvedObject
logger = logging.getLogger(__name__)


class Reconciler:
    def __init__(
        self,
        kube: KubeClient,
        config: OperatorConfig,
        *,
        deployments: DeploymentStore,
        cache: apply.Cache,
        inventory: InventoryReader,
        discovery: ServedKinds,
        parts: Parts,
    ) -> None:
        self.kube = kube
        self.config = config
        # Every read is served by a watch the Controller runs: kopf's of the objects, the
        # watch cache's of children and pods, the GPU inventory's, the served kinds'.
        self.deployments = deployments
        self.cache = cache
        self.inventory = inventory
        self.discovery = discovery
        self.parts = parts  # beside the reconcile, per deployment (controller/part.py)
        self.last_inputs = LastInputs()
        self.plans = PlanMemo()  # each deployment's last plan, while its inputs are equal

    def forget(self, key: Key) -> None:
        """``key`` is gone: every part and the fingerprint forget it."""
        self.last_inputs.forget(key)
        self.plans.forget(key)
        self.parts.forget(key)

    async def served(self) -> frozenset[Resource]:
        """Child kinds the cluster serves (discovery.served_children)."""
        return served_children(
            await self.discovery.current(), inference_gateway=self.config.inference_gateway,
            dra=self.inventory.dra_served, unserved=self.cache.unserved(),
        )  # fmt: skip

    async def reconcile(self, namespace: str, name: str) -> Outcome:
        key = (namespace, name)
        raw = await self.deployments.read(self.kube, namespace, name)
        if raw is None:
            self.forget(key)
            return Outcome("gone")
        if (raw.get("metadata") or {}).get("deletionTimestamp"):
            self.last_inputs.forget(key)
            return await self._finalize(raw)
        served = await self.served()
        fingerprint = self._fingerprint(raw, served)
        if self.last_inputs.unchanged(key, fingerprint):
            return Outcome("unchanged", created=raw["metadata"].get("creationTimestamp"))
        self.last_inputs.forget(key)
        outcome = await self._converge(await self._read(raw, served), served)
        if outcome.backoff is None and outcome.retry_after is None:
            self.last_inputs.remember(key, fingerprint)
        return outcome

    def _fingerprint(self, raw: dict[str, Any], served: frozenset[Resource]) -> Fingerprint | None:
        """Every input of a reconcile, as versions (``reconcile/unchanged.py``); None when one
        of them is not cached, or the reconcile reads a Gateway (no watch of it)."""
        if not self.inventory.watched or gateway.reads_a_gateway(raw, self.config):
            return None
        key = (raw["metadata"]["namespace"], raw["metadata"]["name"])
        # What the scraper, the autoscaler, the behavioural check and the adapter sync add to
        # status; a failed pod or adapter load whose back-off has passed is tried again; a
        # rollout whose progress deadline passed is judged.
        beside = self.parts.revisions(key)
        return fingerprint(raw, served, self.cache, self.inventory.generation, beside)

    async def _read(self, raw: dict[str, Any], served: frozenset[Resource]) -> ReadState:
        """Parse, read the GPU inventory, plan and render."""
        metadata = raw["metadata"]
        names = n.Names(metadata["name"], metadata["namespace"])
        deployment: NemotronDeployment | None = None
        found: Planned | Problem | None = None
        try:
            deployment = desired.parse(raw, default_image=self.config.default_image)
        except SpecError as exc:
            found = Problem(desired.INVALID_SPEC, "; ".join(str(e) for e in exc.errors))
        inventory = await self.inventory.read(names.namespace, names.instance)
        lws = LEADER_WORKER_SETS in served
        if lws and deployment is not None and deployment.spec.multi_node.backend is None:
            where = (names.namespace, names.instance)
            lws = multinode.lws_by_default(
                served,
                await apply.read_instance(self.kube, self.cache, STATEFULSETS, *where),
                await apply.read_instance(self.kube, self.cache, LEADER_WORKER_SETS, *where),
            )
        if deployment is not None:
            found = await self.plans.plan(
                (names.namespace, names.deployment),
                raw,
                deployment,
                self.inventory.planning_view(),  # the nodes, not their use: all a plan reads
                config=self.config,
                dra_served=self.inventory.dra_served,
                leader_worker_set_served=lws,
            )
        return ReadState(
            raw,
            names,
            desired.stored_status(raw),
            deployment,
            desired.own_kind(inventory, deployment),
            planned=found if isinstance(found, Planned) else None,
            problem=found if isinstance(found, Problem) else None,
        )

    async def _converge(self, read: ReadState, served: frozenset[Resource]) -> Outcome:
        raw, names = read.raw, read.names
        live = await apply.read_live(
            self.kube, self.cache, names, uid=raw["metadata"]["uid"], served=served
        )
        if not self.config.inference_gateway:
            # Without --inference-gateway (and its RBAC) the gateway's objects are left alone,
            # its picker's Service too, which is among the Services the operator reads.
            live.objects = {
                k: o for k, o in live.objects.items() if not gateway.is_gateway_object(o)
            }
        outcome = Outcome(
            "ok" if read.problem is None else "infeasible",
            created=raw["metadata"].get("creationTimestamp"),
        )
        apply_error: str | None = None
        pods, download_pods = download.split_pods(
            await apply.read_instance(self.kube, self.cache, PODS, names.namespace, names.instance)
        )
        held, waiting = Held([], frozenset(), None), download.Gated([], frozenset(), None)
        multi_node = None  # the MultiNodeBackend condition (decide/multinode.py)
        gateway_state = gateway.assess(
            read.deployment,
            served,
            enabled_in_operator=self.config.inference_gateway,
            names=names,
        )
        # While the spec cannot be planned nothing is applied or deleted: the pods of an earlier
        # spec keep serving, and status says why nothing changes.
        if read.planned is not None:
            held = self._rollout(read, live, pods)
            # A shared cache: the serving pods wait for the download Job (decide/download.py).
            waiting = download.gate(held.desired, live.objects, download_pods)
            desired = waiting.desired
            if gateway_state is not None and gateway_state[0] != "True":
                desired = gateway.without_gateway(desired)
            wants_pool = any(resource_of(o) == NODE_POOLS for o in desired) and NODE_POOLS in served
            if wants_pool:
                await finalizer.hold(self.kube, self.deployments, raw, True)
            layout = multinode.decide(
                read.deployment, read.planned.result.plan, desired, live.objects, served
            )
            desired, multi_node = layout.desired, layout.condition
            keep = held.keep | waiting.keep | layout.keep
            apply_error = await self._sync(desired, live, served, outcome, keep=keep)
            await apply.restart_failed_groups(self.kube, pods, names)
            deleted = set(outcome.deleted)
            pools_left = [
                p for p in live.of(NODE_POOLS) if f"NodePool/{p['metadata']['name']}" not in deleted
            ]
            if not wants_pool and not pools_left:
                await finalizer.hold(self.kube, self.deployments, raw, False)
        inputs = await self._status_inputs(read, live, pods, apply_error)
        outcome.startup = inputs.startup
        inputs = dataclasses.replace(inputs, rollout=held.state, download=waiting.blocker)
        routed = None
        if gateway_state is not None and gateway_state[0] == "True" and read.deployment:
            routed = await routed_endpoint(self.kube, read.deployment, names.namespace)
        picker = live.objects.get((DEPLOYMENTS, names.endpoint_picker))
        inputs = dataclasses.replace(
            inputs,
            gateway=gateway.with_picker_readiness(gateway_state, picker, names),
            endpoint=routed or inputs.endpoint,
            autoscaling=keda.assess(
                read.deployment,
                served,
                names,
                live.objects.get((SCALED_OBJECTS, names.scaled_object)),
            ),
            multi_node=multi_node,
        )
        await write_status(
            self.kube, self.deployments, raw, inputs, previous=read.previous, outcome=outcome,
            hold=self.parts.progress,
        )  # fmt: skip
        return outcome

    async def _sync(
        self,
        desired: list[dict[str, Any]],
        live: apply.Live,
        served: frozenset[Resource],
        outcome: Outcome,
        *,
        keep: frozenset[tuple[Resource, str]],
    ) -> str | None:
        """Apply and prune the children (but those ``keep`` names); what the server refused."""
        try:
            synced = await apply.sync(
                self.kube, self.cache, desired, live, served=served, keep=keep
            )
        except ApiError as exc:
            if exc.status == 404:
                # A kind discovery said was served is not (its CRD was just removed): look
                # again before the retry, or the missing kind would read as a gone object.
                self.discovery.forget()
                raise ApiError(503, "KindNotServed", exc.message, exc.method, exc.url) from exc
            if exc.action is not Action.REPORT:
                raise
            # The server refuses what we rendered (an immutable field, an admission policy):
            # say so in status and try again later, not in a tight loop.
            outcome.backoff = self.config.retry_max_seconds
            return f"{exc.method} {exc.url}: {exc.status} {exc.reason}: {exc.message}"
        outcome.applied, outcome.deleted = synced.applied, synced.deleted
        return None

    def _rollout(self, read: ReadState, live: apply.Live, pods: list[dict[str, Any]]) -> Held:
        """spec.rollout: what is held back, and whether the rollout stalled."""
        if read.planned is None or read.deployment is None:
            return Held([], frozenset(), None)
        plan = read.planned.result.plan
        return self.parts.rollouts.hold(
            read.key,
            read.deployment.spec.rollout,
            read.planned.desired,
            live_statefulsets=live.of(STATEFULSETS),
            pods=pods,
            replicas=plan.replicas,
            nodes_per_replica=plan.nodes_per_replica,
            previous=read.previous,
        )

    async def _status_inputs(
        self,
        read: ReadState,
        live: apply.Live,
        pods: list[dict[str, Any]],
        apply_error: str | None,
    ) -> StatusInputs:
        """Everything status is computed from, once: the plan, the children's readiness, the
        capacity, and what the scraper and the autoscaler contribute. A ready serving pod never
        sampled is scraped first, so this status carries its figures."""
        raw, names, deployment = read.raw, read.names, read.deployment
        plan = read.planned.result.plan if read.planned is not None else None
        readiness = capacity = node_pool = predicted = replicas_that_fit = pool_problem = None
        if read.planned is not None and plan is not None and deployment is not None:
            predicted = startup.predict_for(deployment, plan)
            readiness = assess_readiness(
                desired_replicas=plan.replicas,
                nodes_per_replica=plan.nodes_per_replica,
                expected_statefulsets=[
                    o["metadata"]["name"]
                    for o in read.planned.desired
                    if resource_of(o) == STATEFULSETS
                ],
                statefulsets=live.of(STATEFULSETS),
                pods=pods,
                not_ready_nodes=frozenset(x.name for x in read.inventory.nodes if not x.ready),
                predicted=predicted,
            )
            capacity = check_capacity(read.inventory, plan, karpenter=read.karpenter)
            desired_pools = [o for o in read.planned.desired if resource_of(o) == NODE_POOLS]
            if read.karpenter and desired_pools and not capacity.available:
                live_pools = {p["metadata"]["name"]: p for p in live.of(NODE_POOLS)}
                pool = desired_pools[0]
                pool_problem = node_pool_problem(
                    pool, live_pools.get(pool["metadata"]["name"]), plan.gpus_per_node
                )
            if not read.karpenter:
                replicas_that_fit = capacity.slots_free // max(1, plan.nodes_per_replica)
            node_pool = NodePoolStatus.model_validate(
                {
                    "gpuProduct": plan.gpu_product,
                    "gpusPerNode": plan.gpus_per_node,
                    "nodes": plan.nodes,
                    "provisioner": deployment.spec.node_pool.provisioner,
                    "objectName": names.node_pool if read.karpenter else None,
                }
            )
        spec_replicas = int((raw.get("spec") or {}).get("replicas", 1) or 0)
        desired = read.planned.desired if read.planned is not None else []
        scraped = await self.parts.scraper.seen(read.key, plan, pods, read.previous, desired)
        autoscale_problem = self.parts.autoscaler.seen(
            read.key,
            AutoscaleView(
                owner={k: raw["metadata"].get(k) for k in _EVENT_OWNER_FIELDS},
                autoscaling=deployment.spec.autoscaling if deployment is not None else None,
                plan=plan,
                replicas=spec_replicas,
                ready_replicas=readiness.ready_replicas if readiness is not None else 0,
                replicas_that_fit=replicas_that_fit,
            ),
        )
        accurate = scraped.plan_accurate
        verified = await self.parts.verifier.seen(read.key, deployment, read.planned, pods)
        adapters = await self.parts.adapters.seen(read.key, deployment, pods)
        return StatusInputs(
            generation=raw["metadata"].get("generation"),
            replicas=plan.replicas if plan is not None else spec_replicas,
            selector=n.leader_selector_string(names),
            endpoint=names.endpoint(SERVE_PORT),
            plan=plan,
            problem=read.problem,
            capacity=capacity,
            karpenter=read.karpenter,
            node_pool=node_pool,
            node_pool_problem=pool_problem,
            readiness=readiness,
            apply_error=apply_error,
            throughput=scraped.throughput,
            plan_check=scraped.plan_check,
            plan_accurate=None
            if accurate is None
            else (accurate.status, accurate.reason, accurate.message),
            autoscale_capacity_problem=autoscale_problem,
            verified=verified,
            adapters=adapters,
            startup=startup.assess_startup(pods) if readiness is not None else None,
            predicted_startup=predicted,
        )

    async def _finalize(self, raw: dict[str, Any]) -> Outcome:
        """Deletion: the namespaced children go by garbage collection (owner references); the
        cluster-scoped NodePool has no owner, so it is deleted here before the finalizer goes."""
        metadata = raw["metadata"]
        if not finalizer.holds(raw):
            return Outcome("gone")
        names = n.Names(metadata["name"], metadata["namespace"])
        pools = frozenset({NODE_POOLS}) & await self.served()
        live = await apply.read_live(
            self.kube, self.cache, names, uid=metadata["uid"], served=pools
        )
        if not await apply.delete_node_pools(self.kube, live):
            return Outcome(
                "finalizing",
                deleted=[f"NodePool/{p['metadata']['name']}" for p in live.of(NODE_POOLS)],
                retry_after=1.0,
            )
        await finalizer.hold(self.kube, self.deployments, raw, False)
        return Outcome("finalized")
