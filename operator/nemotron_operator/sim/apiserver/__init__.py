"""A Kubernetes API stand-in on loopback (a simulation, not a real API server).

kubectl, ``kopf run`` and the ``kubernetes`` client use it over HTTP; the simulated cluster's
controllers use :class:`Store` directly, and both see one consistent world. See
``docs/simulated-cluster.md`` for what it does and what it approximates.
"""

from nemotron_operator.sim.apiserver.errors import ApiError
from nemotron_operator.sim.apiserver.resources import ResourceInfo, ResourceKey
from nemotron_operator.sim.apiserver.store import Store, WatchEvent

__all__ = ["ApiError", "ResourceInfo", "ResourceKey", "Store", "WatchEvent"]
