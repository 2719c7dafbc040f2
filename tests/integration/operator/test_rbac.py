"""The operator works with exactly the RBAC the Helm chart grants (rendered by `helm template`, so
the chart is the one source of truth), as a ServiceAccount whose token kube-apiserver issued and
whose requests it authorizes."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.helm import CHART, helm_env, run_helm
from tests.integration.operator.helpers import (
    NAMESPACE,
    NDS,
    NODE_POOLS,
    POD_MONITORS,
    apply,
    condition,
    deployment,
    status,
    wait_ready,
)
from tests.integration.operator_process import OperatorProcess, ensure_namespace, install_crds
from tests.kube import KubeHandle
from tests.kubectl import run_kubectl

RBAC_KINDS = {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}


def _chart_rbac(cluster: KubeHandle, home: Path, *extra: str) -> str:
    """The chart's ServiceAccount and RBAC objects, with NodePool, PodMonitor and inference
    gateway writes on (and ``extra`` values)."""
    rendered = run_helm(
        helm_env(cluster.env, home),
        "template",
        "nemotron-operator",
        str(CHART),
        "--namespace=nemotron-system",
        "--set=rbac.karpenterNodePools=true",
        "--set=rbac.podMonitors=true",
        "--set=rbac.inferenceGateway=true",
        *extra,
    ).stdout
    objects = [doc for doc in yaml.safe_load_all(rendered) if doc and doc["kind"] in RBAC_KINDS]
    assert {obj["kind"] for obj in objects} == RBAC_KINDS
    return yaml.safe_dump_all(objects)


def _service_account_kubeconfig(cluster: KubeHandle, path: Path) -> Path:
    """The admin's kubeconfig (through the fault proxy) with the operator ServiceAccount's
    token from the TokenRequest API instead of the admin's."""
    token = cluster.kubectl(
        "create", "token", "nemotron-operator", "-n", "nemotron-system", "--duration=1h"
    ).stdout.strip()
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    config["users"][0]["user"] = {"token": token}
    path.write_text(yaml.safe_dump(config))
    return path


def test_the_charts_rbac_is_enough(sim_cluster: KubeHandle, tmp_path: Path) -> None:
    install_crds(sim_cluster)
    ensure_namespace(sim_cluster, "nemotron-system")
    ensure_namespace(sim_cluster, NAMESPACE)
    sim_cluster.kubectl("apply", "-f", "-", input=_chart_rbac(sim_cluster, tmp_path / "helm"))
    # kube-apiserver's RBAC authorizer sees new bindings through its informers, a moment later.
    sim_cluster.wait_until(
        lambda: sim_cluster.kubectl(
            "auth", "can-i", "watch", "nemotrondeployments.serving.nemotron.io", "-n", NAMESPACE,
            "--as=system:serviceaccount:nemotron-system:nemotron-operator", check=False,
        ).stdout.strip() == "yes",
        what="the chart's RBAC in force",
    )  # fmt: skip
    kubeconfig = _service_account_kubeconfig(sim_cluster, tmp_path / "operator-kubeconfig")
    # The operator's identity really is restricted: no Secrets.
    as_operator = {**sim_cluster.env, "KUBECONFIG": str(kubeconfig)}
    denied = run_kubectl(as_operator, "get", "secrets", "-n", NAMESPACE, check=False)
    assert denied.returncode != 0
    assert "forbidden" in denied.stderr
    operator = OperatorProcess(
        sim_cluster,
        tmp_path / "operator.log",
        extra_args=["--lease-namespace=nemotron-system", "--inference-gateway"],
        env={"KUBECONFIG": str(kubeconfig)},
    )
    operator.start()
    try:
        sim_cluster.kubectl(
            "create", "secret", "generic", "hf-token", "-n", NAMESPACE, "--from-literal=token=x"
        )
        karpenter = {"provisioner": "Karpenter", "karpenter": {"nodeClassRef": {"name": "gpu"}}}
        source = {"huggingFace": {"tokenSecretRef": {"name": "hf-token"}}}
        apply(
            sim_cluster,
            deployment(
                model={"source": source},
                nodePool=karpenter,
                monitoring={"podMonitor": {"enabled": True}},
                storage={"cache": {"shared": True, "accessModes": ["ReadWriteMany"]}},
                # The picker's Role: RBAC lets the operator create it only with what it grants.
                gateway={"enabled": True, "httpRoute": {"parentRefs": [{"name": "gw"}]}},
            ),
        )
        wait_ready(sim_cluster)
        sim_cluster.wait_until(
            lambda: condition(sim_cluster, "InferenceGateway").get("reason") == "Applied",
            what="InferenceGateway=True",
        )
        assert sim_cluster.kubectl("get", "role", "nano-epp", "-n", NAMESPACE).returncode == 0
        assert sim_cluster.list(NODE_POOLS)
        assert sim_cluster.list(POD_MONITORS, NAMESPACE)
        assert status(sim_cluster)["nodePool"]["provisioner"] == "Karpenter"
        # Drift repair and deletion through the finalizer, still without a 403.
        sim_cluster.kubectl("delete", "service", "nano", "-n", NAMESPACE)
        sim_cluster.wait_until(
            lambda: (
                sim_cluster.kubectl(
                    "get", "service", "nano", "-n", NAMESPACE, check=False
                ).returncode
                == 0
            ),
            what="the Service repaired",
        )
        sim_cluster.kubectl("delete", "nd", "nano", "-n", NAMESPACE, "--wait=false")
        sim_cluster.wait_until(
            lambda: (
                sim_cluster.get(NDS, NAMESPACE, "nano") is None and not sim_cluster.list(NODE_POOLS)
            ),
            what="deleted with its NodePool",
        )
        forbidden = [
            r
            for r in operator.requests()
            if r["status"] in (401, 403) and "secrets" not in r["path"]
        ]
        assert forbidden == [], forbidden
        assert "forbidden" not in operator.log().lower()
    finally:
        operator.stop()
        print(operator.log()[-8000:])
    operator.check_log()
