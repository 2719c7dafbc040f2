"""The ``keda`` add-on: KEDA's operator and its metrics adapter, both real
(``hack/build-addons.sh keda``).

Applied as KEDA publishes them (config/manager, config/rbac, config/service_account and
config/metrics-server of the same module version) in the ``keda`` namespace, with the CRDs of
config/crd/bases. Their pods run the real binaries (programs.py) with what a process pod needs:

- **Certificates.** The ``kedaorg-certs`` Secret both Deployments mount at ``/certs`` is written
  here, before their pods start, with what KEDA's own cert rotation would write into it
  (``pkg/certificates/certificate_manager.go``: a CA, and one certificate for client and server
  use naming the operator's and the adapter's Services in all four DNS forms): the operator
  serves its metrics gRPC service with it, the adapter calls that service with it (mutual TLS)
  and serves ``external.metrics.k8s.io`` with it. Cert rotation itself is off: it writes the
  Secret after start, and the simulated kubelet does not refresh a Secret volume.
- **The APIService** ``v1beta1.external.metrics.k8s.io`` gets that CA as its ``caBundle`` (what
  KEDA's APIService patching would write; patching is off), so kube-apiserver's aggregation
  layer verifies the adapter as ``keda-metrics-apiserver.keda.svc`` and proxies the HPA
  controller's requests to it through the Service (its ClusterIP: the simulated kube-proxy).
- ``KEDA_CLUSTER_OBJECT_NAMESPACE`` is ``keda`` (as KEDA's Helm chart sets it), webhook and
  APIService patching are off (no KEDA webhooks are installed).
- **A startup probe** (the manifests have none): each container's liveness probe guards its start
  too, for up to 60 of its periods, before liveness applies (``with_startup_probe``). KEDA's
  liveness delays (5 s for the adapter, 25 s for the operator) become 0.5 s and 2.5 s under the
  tests' probe time scale of 0.1, and on a loaded machine the adapter (a Python wrapper, then a
  127 MB binary) was killed before it served, in a loop, its APIService unavailable for over 2
  minutes (seen; the operator restarting during its start was seen once too).

KEDA's operator alone takes a ScaledObject's target between 0 and 1; between 1 and N its HPA
reads the trigger's metric through the adapter (kube-controller-manager's HPA controller →
kube-apiserver → adapter → the operator's gRPC service → the scaler).
"""

from __future__ import annotations

import base64
import datetime
import tempfile
from pathlib import Path
from typing import Any

from nemotron_operator.kube.transport import Transport
from sim_cluster.addons.apply import apply, in_namespace, load
from sim_cluster.addons.binaries import PROGRAMS, built
from sim_cluster.controlplane.pki import Authority

NAMESPACE = "keda"
KEDAORG_CERTS = "kedaorg-certs"
OPERATOR_SERVICE = "keda-operator"
ADAPTER_SERVICE = "keda-metrics-apiserver"
IMAGES = {
    "ghcr.io/kedacore/keda": (*PROGRAMS, "keda"),
    "ghcr.io/kedacore/keda-metrics-apiserver": (*PROGRAMS, "keda-adapter"),
}
COMMANDS = {"keda": (*PROGRAMS, "keda"), "keda-adapter": (*PROGRAMS, "keda-adapter")}
# Paths inside KEDA's module, applied in this order (the Secret and the Services before the
# Deployments that use them, the APIService last).
_PUBLISHED = (
    "config/service_account/service_account.yaml",
    "config/rbac/role.yaml",
    "config/rbac/role_binding.yaml",
    "config/metrics-server/role.yaml",
    "config/metrics-server/role_binding.yaml",
    "config/manager/service.yaml",
    "config/metrics-server/service.yaml",
    "config/manager/manager.yaml",
    "config/metrics-server/deployment.yaml",
    "config/metrics-server/api_service.yaml",
)


def dns_names(service: str, namespace: str = NAMESPACE) -> tuple[str, ...]:
    """The four names KEDA's cert rotation puts in its certificate for a Service (getDNSNames)."""
    return (
        service,
        f"{service}.{namespace}",
        f"{service}.{namespace}.svc",
        f"{service}.{namespace}.svc.cluster.local",
    )


def certificates(now: datetime.datetime) -> dict[str, bytes]:
    """``ca.crt``, ``tls.crt``, ``tls.key``: a CA and one certificate for both Services."""
    with tempfile.TemporaryDirectory(prefix="keda-certs-") as directory:
        authority = Authority(Path(directory), now)
        pair = authority.issue(
            "tls", "keda-operator", organizations=("KEDAORG",), client=True, server=True,
            dns=(*dns_names(OPERATOR_SERVICE), *dns_names(ADAPTER_SERVICE)),
        )  # fmt: skip
        return {
            "ca.crt": authority.ca.cert.read_bytes(),
            "tls.crt": pair.cert.read_bytes(),
            "tls.key": pair.key.read_bytes(),
        }


STARTUP_FAILURES = 60  # periods of the liveness probe a container may take to start


def with_startup_probe(deployment: dict[str, Any]) -> dict[str, Any]:
    """Each container with a liveness probe and no startup probe gets one like it, allowed
    STARTUP_FAILURES failures from the container's start."""
    for container in deployment["spec"]["template"]["spec"].get("containers") or []:
        liveness = container.get("livenessProbe")
        if liveness and "startupProbe" not in container:
            container["startupProbe"] = {
                **{k: v for k, v in liveness.items() if k != "initialDelaySeconds"},
                "failureThreshold": STARTUP_FAILURES,
            }
    return deployment


def objects(now: datetime.datetime) -> list[dict[str, Any]]:
    manifests = built("keda") / "manifests"
    certs = certificates(now)
    published = [in_namespace(o, NAMESPACE) for o in load(manifests / f for f in _PUBLISHED)]
    for obj in published:
        if obj["kind"] == "APIService":
            obj["spec"]["caBundle"] = base64.b64encode(certs["ca.crt"]).decode()
        elif obj["kind"] == "Deployment":
            with_startup_probe(obj)
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": KEDAORG_CERTS, "namespace": NAMESPACE},
        "type": "Opaque",
        "data": {k: base64.b64encode(v).decode() for k, v in certs.items()},
    }
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        secret,
        *published,
    ]


async def install(api: Transport) -> None:
    await apply(api, objects(datetime.datetime.now(datetime.UTC)))
