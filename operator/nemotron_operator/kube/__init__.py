"""All API I/O of the operator: a small async client (``client``), every write it makes as a named
function (``writes``), the resources it touches, the informer behind the watch cache, the
kubeconfig/in-cluster connection, Kubernetes' timestamp formats and the mapping of API errors to
actions."""

from nemotron_operator.kube.client import FIELD_MANAGER, KubeClient
from nemotron_operator.kube.config import Connection, load_connection
from nemotron_operator.kube.errors import Action, ApiError, retry_delay

__all__ = [
    "FIELD_MANAGER",
    "Action",
    "ApiError",
    "Connection",
    "KubeClient",
    "load_connection",
    "retry_delay",
]
