"""The ``keda`` add-on: KEDA's operator, real (``hack/build-addons.sh keda``).

Applied as KEDA publishes it (config/manager, config/rbac, config/service_account of the same
module version) in the ``keda`` namespace, with the CRDs of config/crd/bases. The operator pod
runs the real binary (programs.py) with what a process pod needs: its pod's address for its
three listeners, a certificate directory for its metrics gRPC service (issued at start, instead
of cert rotation into a Secret volume the simulated kubelet would not refresh), webhook and
APIService patching off (no KEDA webhooks or metrics APIService are installed), and
``KEDA_CLUSTER_OBJECT_NAMESPACE`` (its own namespace, as KEDA's Helm chart sets it).

KEDA's own step 0 ↔ 1 (activation and cooldown) needs only the operator; between 1 and N its
HPA reads ``external.metrics.k8s.io``, KEDA's metrics adapter, which is not run here.
"""

from __future__ import annotations

from typing import Any

from nemotron_operator.kube.transport import Transport
from nemotron_sim.addons.apply import apply, in_namespace, load
from nemotron_sim.addons.binaries import PROGRAMS, built

NAMESPACE = "keda"
IMAGES = {"ghcr.io/kedacore/keda": (*PROGRAMS, "keda")}
COMMANDS = {"keda": (*PROGRAMS, "keda")}
_PUBLISHED = ("service_account.yaml", "role.yaml", "role_binding.yaml", "manager.yaml")


def objects() -> list[dict[str, Any]]:
    manifests = built("keda") / "manifests"
    published = [in_namespace(o, NAMESPACE) for o in load(manifests / f for f in _PUBLISHED)]
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        *published,
    ]


async def install(api: Transport) -> None:
    await apply(api, objects())
