"""All API I/O of the operator: a small async client (``client``), every write it makes as a named
function (``writes``), the resources it touches, the informer behind the watch cache, the
kubeconfig/in-cluster connection, Kubernetes' timestamp formats and the mapping of API errors to
actions.

The names below are loaded when first used, not when the package is: the simulator imports
``kube.transport`` and ``kube.errors`` alone (an import contract allows those and nothing else of
the operator), and importing them must not load the client and its dependencies into the
simulator's processes.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nemotron_operator.kube.client import FIELD_MANAGER, KubeClient
    from nemotron_operator.kube.config import Connection, load_connection
    from nemotron_operator.kube.errors import Action, ApiError, retry_delay

_WHERE = {
    "FIELD_MANAGER": "client",
    "KubeClient": "client",
    "Connection": "config",
    "load_connection": "config",
    "Action": "errors",
    "ApiError": "errors",
    "retry_delay": "errors",
}

__all__ = [
    "FIELD_MANAGER",
    "Action",
    "ApiError",
    "Connection",
    "KubeClient",
    "load_connection",
    "retry_delay",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
