"""The kopf side: settings, login, and thin ``on.event`` handlers that only queue work.

Why only ``on.event`` (read in kopf 1.45.2's ``_core/reactor/processing.py``): with no
``on.create/update/resume/delete/field`` handler kopf stores no ``last-handled-configuration``
annotation; with no timer, daemon or mandatory ``on.delete`` it adds no finalizer; ``on.event``
handlers are never retried, so no progress annotations; returning ``None`` patches nothing into
status. kopf therefore never writes to a NemotronDeployment. The reconcile, its retries and the
periodic resync live in :mod:`nemotron_operator.controller.runtime`.

Children are watched with a server-side label selector (``settings.watching.label_selectors``,
kopf ≥ 1.45), so only the operator's own StatefulSets, Services and pods reach it — never all
pods of the cluster.
"""

from __future__ import annotations

import logging
from typing import Any

import kopf

from nemotron_operator.controller.queue import WorkQueue
from nemotron_operator.controller.settings import OperatorConfig
from nemotron_operator.kube import Connection
from nemotron_operator.kube.resources import NEMOTRON_DEPLOYMENTS, PODS, SERVICES, STATEFULSETS
from nemotron_operator.render import names as n

CHILD_SELECTOR = f"{n.MANAGED_BY_LABEL}={n.MANAGED_BY}"
# A child event re-queues its owner a moment later, so that a burst (every pod of a rollout)
# becomes one reconcile.
CHILD_DEBOUNCE_SECONDS = 0.2
WATCHED = (NEMOTRON_DEPLOYMENTS, STATEFULSETS, SERVICES, PODS)


def _selector(resource: Any) -> tuple[str, str] | tuple[str, str, str]:
    """kopf's spelling: ("v1", "pods") for the core group, (group, version, plural) otherwise."""
    if not resource.group:
        return (resource.version, resource.plural)
    return (resource.group, resource.version, resource.plural)


def build_registry(
    config: OperatorConfig, connection: Connection, queue: WorkQueue
) -> kopf.OperatorRegistry:
    registry = kopf.OperatorRegistry()
    instances: dict[tuple[str, str], str] = {}  # (namespace, instance label) → name

    @kopf.on.startup(registry=registry)
    def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.peering.standalone = True  # the single-replica guard is our Lease
        settings.scanning.disabled = True  # fixed resources; no CRD/namespace watch or RBAC
        # Never used (no handler needs a finalizer or a diffbase), but in our group if ever.
        settings.persistence.finalizer = f"{n.DOMAIN}/kopf-finalizer"
        settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=n.DOMAIN)
        settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(prefix=n.DOMAIN)
        settings.posting.level = logging.WARNING
        # kopf ends a watcher (and 1.45 then exits) once these retries are spent on a failing
        # list or watch request: they must outlast an API server restart.
        settings.networking.error_backoffs = list(config.watch_error_backoffs)
        settings.networking.request_timeout = 60
        settings.networking.connect_timeout = 10
        settings.watching.server_timeout = 300  # a clean reconnect every 5 minutes
        settings.watching.client_timeout = 330
        settings.watching.connect_timeout = 10
        settings.watching.inactivity_timeout = 70  # a silent stream is re-opened (bookmarks)
        for resource in (STATEFULSETS, SERVICES, PODS):
            settings.watching.label_selectors[_selector(resource)] = CHILD_SELECTOR

    @kopf.on.login(registry=registry)
    def login(**_: Any) -> kopf.ConnectionInfo:
        return kopf.ConnectionInfo(
            server=connection.server,
            ca_path=connection.ca_path,
            insecure=not connection.verify,
            token=connection.token,
            certificate_path=connection.certificate_path,
            private_key_path=connection.private_key_path,
        )

    nd = NEMOTRON_DEPLOYMENTS

    @kopf.on.event(nd.group, nd.version, nd.plural, registry=registry)
    def deployment_event(**kwargs: Any) -> None:
        name, namespace = str(kwargs["name"]), str(kwargs["namespace"])
        instances[(namespace, n.label_value(name))] = name
        if kwargs.get("type") == "DELETED":
            return
        queue.add((namespace, name))

    def owner_from_references(body: Any) -> str | None:
        for ref in body.get("metadata", {}).get("ownerReferences") or []:
            if ref.get("kind") == nd.kind and ref.get("apiVersion") == nd.api_version:
                return str(ref.get("name"))
        return None

    @kopf.on.event(*_selector(STATEFULSETS), registry=registry)
    @kopf.on.event(*_selector(SERVICES), registry=registry)
    def child_event(**kwargs: Any) -> None:
        owner = owner_from_references(kwargs["body"])
        if owner is not None:
            queue.add((str(kwargs["namespace"]), owner), CHILD_DEBOUNCE_SECONDS)

    @kopf.on.event(*_selector(PODS), registry=registry)
    def pod_event(**kwargs: Any) -> None:
        namespace = str(kwargs["namespace"])
        owner = instances.get((namespace, str(kwargs["labels"].get(n.INSTANCE, ""))))
        if owner is not None:
            queue.add((namespace, owner), CHILD_DEBOUNCE_SECONDS)

    return registry
