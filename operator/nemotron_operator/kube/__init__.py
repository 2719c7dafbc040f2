"""All API I/O of the operator: a small async client (get/list/apply/delete/patch), the resources
it touches, the kubeconfig/in-cluster connection and the mapping of API errors to actions."""

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
