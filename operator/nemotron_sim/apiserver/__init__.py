"""A Kubernetes API stand-in on loopback (a simulation, not a real API server).

kubectl, ``kopf run`` and the ``kubernetes`` client use it over HTTP; the simulated cluster's
controllers use :class:`Store` directly, and both see one consistent world. See
``docs/simulated-cluster.md`` for what it does and what it approximates.
"""

from nemotron_sim.apiserver.errors import (
    AlreadyExistsError,
    ApiError,
    ConflictError,
    InvalidError,
    NotFoundError,
)
from nemotron_sim.apiserver.faults import Fault, FaultInjector
from nemotron_sim.apiserver.resources import ResourceInfo
from nemotron_sim.apiserver.selectors import match_labels, selector_to_string
from nemotron_sim.apiserver.server import (
    ServerThread,
    SimApiServer,
    serve_in_thread,
    write_kubeconfig,
)
from nemotron_sim.apiserver.store import Store
from nemotron_sim.kubeapi.resources import ResourceKey, WatchEvent

__all__ = [
    "AlreadyExistsError",
    "ApiError",
    "ConflictError",
    "Fault",
    "FaultInjector",
    "InvalidError",
    "NotFoundError",
    "ResourceInfo",
    "ResourceKey",
    "ServerThread",
    "SimApiServer",
    "Store",
    "WatchEvent",
    "match_labels",
    "selector_to_string",
    "serve_in_thread",
    "write_kubeconfig",
]
