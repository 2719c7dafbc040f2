"""The ``monitoring`` add-on: the Prometheus Operator and a Prometheus it runs, both real.

``hack/build-addons.sh prometheus-operator prometheus`` builds them from their Go modules. The
add-on applies the Prometheus Operator's own example RBAC and Deployment (moved into the
``monitoring`` namespace), Prometheus's ServiceAccount and ClusterRole from the same module, and
one ``Prometheus`` resource selecting every PodMonitor and ServiceMonitor in every namespace. The
operator then does what it does anywhere: it writes the scrape configuration into a Secret and a
StatefulSet whose pod runs Prometheus beside a config-reloader. The simulated kubelet runs the
three images as local processes (``programs.py``): the operator and Prometheus are the real
binaries; the config-reloader is a stand-in that does the real one's job (decompress the Secret's
configuration, substitute ``$(SHARD)``, ask Prometheus to reload) plus the two edits a pod
without a mount namespace needs (``kubeconfig_file`` for Kubernetes service discovery, the
mounts' paths). Prometheus answers at ``http://<ClusterIP of monitoring/prometheus>:9090``.
"""

from __future__ import annotations

from typing import Any

from nemotron_operator.kube.transport import Transport
from sim_cluster.addons.apply import apply, in_namespace, load
from sim_cluster.addons.binaries import PROGRAMS, built

NAMESPACE = "monitoring"
PROMETHEUS = "prometheus"  # the Prometheus resource, its ServiceAccount and ClusterIP Service
IMAGES = {
    "quay.io/prometheus-operator/prometheus-operator": (*PROGRAMS, "prometheus-operator"),
    "quay.io/prometheus-operator/prometheus-config-reloader": (*PROGRAMS, "config-reloader"),
    "quay.io/prometheus/prometheus": (*PROGRAMS, "prometheus"),
}
COMMANDS = {"prometheus-config-reloader": (*PROGRAMS, "config-reloader")}
SCRAPE_INTERVAL = "1s"


def objects() -> list[dict[str, Any]]:
    manifests = built("prometheus-operator") / "manifests"
    built("prometheus")  # its pod needs it: fail here, naming the build, not in the kubelet
    published = [in_namespace(o, NAMESPACE) for o in load(sorted(manifests.rglob("*.yaml")))]
    labels = {"app.kubernetes.io/name": "prometheus", "prometheus": PROMETHEUS}
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        *published,
        # The stand-in config-reloader reads the configuration Secret itself (the simulated
        # kubelet does not refresh a Secret volume, kubelet's does).
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "config-reloader", "namespace": NAMESPACE},
            "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "config-reloader", "namespace": NAMESPACE},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "config-reloader",
            },
            "subjects": [{"kind": "ServiceAccount", "name": PROMETHEUS, "namespace": NAMESPACE}],
        },
        {
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "Prometheus",
            "metadata": {"name": PROMETHEUS, "namespace": NAMESPACE},
            "spec": {
                "replicas": 1,
                "serviceAccountName": PROMETHEUS,
                "scrapeInterval": SCRAPE_INTERVAL,
                "evaluationInterval": SCRAPE_INTERVAL,
                "podMonitorSelector": {},
                "podMonitorNamespaceSelector": {},
                "serviceMonitorSelector": {},
                "serviceMonitorNamespaceSelector": {},
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": PROMETHEUS, "namespace": NAMESPACE},
            "spec": {"selector": labels, "ports": [{"name": "web", "port": 9090}]},
        },
    ]


async def install(api: Transport) -> None:
    await apply(api, objects())
