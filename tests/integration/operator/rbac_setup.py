"""The chart's RBAC for the operator's ServiceAccount, and that account's kubeconfig."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.helm import CHART, helm_env, run_helm
from tests.kube import KubeHandle

RBAC_KINDS = {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}


def chart_rbac(cluster: KubeHandle, home: Path, *extra: str) -> str:
    """The chart's ServiceAccount and RBAC objects, with NodePool, PodMonitor, KEDA ScaledObject
    and inference gateway writes on (and ``extra`` values)."""
    rendered = run_helm(
        helm_env(cluster.env, home),
        "template",
        "nemotron-operator",
        str(CHART),
        "--namespace=nemotron-system",
        "--set=rbac.karpenterNodePools=true",
        "--set=rbac.podMonitors=true",
        "--set=rbac.kedaScaledObjects=true",
        "--set=rbac.inferenceGateway=true",
        *extra,
    ).stdout
    objects = [doc for doc in yaml.safe_load_all(rendered) if doc and doc["kind"] in RBAC_KINDS]
    assert {obj["kind"] for obj in objects} == RBAC_KINDS
    return yaml.safe_dump_all(objects)


def service_account_kubeconfig(cluster: KubeHandle, path: Path) -> Path:
    """The admin's kubeconfig (through the fault proxy) with the operator ServiceAccount's
    token from the TokenRequest API instead of the admin's."""
    token = cluster.kubectl(
        "create", "token", "nemotron-operator", "-n", "nemotron-system", "--duration=1h"
    ).stdout.strip()
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    config["users"][0]["user"] = {"token": token}
    path.write_text(yaml.safe_dump(config))
    return path
