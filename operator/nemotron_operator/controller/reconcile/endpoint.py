"""``status.endpoint`` through a Gateway: the one read of a reconcile that no watch follows
(such a reconcile is never skipped as unchanged, ``decide.gateway.reads_a_gateway``)."""

from __future__ import annotations

import logging

from nemotron_operator.api import NemotronDeployment
from nemotron_operator.controller.decide.gateway import gateway_url
from nemotron_operator.kube import ApiError, KubeClient
from nemotron_operator.kube.resources import GATEWAYS

logger = logging.getLogger(__name__)


async def routed_endpoint(
    kube: KubeClient, deployment: NemotronDeployment, namespace: str
) -> str | None:
    """The OpenAI base URL through the first Gateway the HTTPRoute attaches to: its first
    address and the listener's port (``sectionName``'s, else the first HTTP(S) listener's).
    None while the Gateway has no address, or cannot be read (not there, no Gateway CRD, or no
    permission to read it in that namespace): status.endpoint then stays the Service."""
    route = deployment.spec.gateway.http_route
    if route is None:
        return None
    ref = route.parent_refs[0]
    try:
        found = await kube.get(GATEWAYS, ref.namespace or namespace, ref.name)
    except ApiError as exc:
        if exc.status != 403:
            raise
        logger.debug("cannot read Gateway %s: %s", ref.name, exc)
        return None
    return gateway_url(found, ref.section_name) if found else None
