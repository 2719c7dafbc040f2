"""The operator works with exactly the RBAC the Helm chart grants (rendered by `helm template`, so
the chart is the one source of truth), as a ServiceAccount whose token kube-apiserver issued and
whose requests it authorizes."""

from __future__ import annotations

import re
import time
from pathlib import Path

import yaml

from nemotron_sim.kubeapi.resources import ResourceKey
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
from tests.integration.operator.rbac_setup import chart_rbac, service_account_kubeconfig
from tests.integration.operator_process import OperatorProcess, ensure_namespace, install_crds
from tests.kube import KubeHandle
from tests.kubectl import run_kubectl

SCALED_OBJECTS = ResourceKey("keda.sh", "v1alpha1", "scaledobjects")
KEDA = {"serverAddress": "http://prom:9090", "query": "sum(q)", "threshold": 2}


def _install_chart_rbac(sim_cluster: KubeHandle, tmp_path: Path) -> None:
    """The CRDs, the namespaces and the chart's RBAC, waited for until kube-apiserver's RBAC
    authorizer sees the new bindings (through its informers, a moment later)."""
    install_crds(sim_cluster)
    ensure_namespace(sim_cluster, "nemotron-system")
    ensure_namespace(sim_cluster, NAMESPACE)
    sim_cluster.kubectl("apply", "-f", "-", input=chart_rbac(sim_cluster, tmp_path / "helm"))
    sim_cluster.wait_until(
        lambda: sim_cluster.kubectl(
            "auth", "can-i", "watch", "nemotrondeployments.serving.nemotron.io", "-n", NAMESPACE,
            "--as=system:serviceaccount:nemotron-system:nemotron-operator", check=False,
        ).stdout.strip() == "yes",
        what="the chart's RBAC in force",
    )  # fmt: skip


def test_the_charts_rbac_is_enough(sim_cluster: KubeHandle, tmp_path: Path) -> None:
    _install_chart_rbac(sim_cluster, tmp_path)
    kubeconfig = service_account_kubeconfig(sim_cluster, tmp_path / "operator-kubeconfig")
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
                autoscaling={"provider": "KEDA", "maxReplicas": 2, "keda": {"prometheus": KEDA}},
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
        assert sim_cluster.list(SCALED_OBJECTS, NAMESPACE)
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


def test_rbac_revoked_mid_run_is_named_in_the_log_without_a_crash_loop_and_recovers(
    sim_cluster: KubeHandle, tmp_path: Path
) -> None:
    """docs/reliability.md case 8: the operator's ClusterRoleBinding deleted while it runs. Its
    watches and writes get 403: it logs which permission is missing (kube-apiserver's own
    words), keeps running and stays live (a restart would not mend RBAC; kopf's retries never
    run out, so its watch does not end the process), and converges once the binding is back."""
    install_crds(sim_cluster)
    ensure_namespace(sim_cluster, "nemotron-system")
    ensure_namespace(sim_cluster, NAMESPACE)
    rbac = chart_rbac(sim_cluster, tmp_path / "helm")
    sim_cluster.kubectl("apply", "-f", "-", input=rbac)
    (binding,) = [
        doc for doc in yaml.safe_load_all(rbac)
        if doc["kind"] == "ClusterRoleBinding" and doc["roleRef"]["name"].endswith("operator")
    ]  # fmt: skip
    as_operator = "--as=system:serviceaccount:nemotron-system:nemotron-operator"

    def can_watch() -> str:
        return sim_cluster.kubectl(
            "auth", "can-i", "watch", "nemotrondeployments.serving.nemotron.io", "-n", NAMESPACE,
            as_operator, check=False,
        ).stdout.strip()  # fmt: skip

    sim_cluster.wait_until(lambda: can_watch() == "yes", what="the chart's RBAC in force")
    kubeconfig = service_account_kubeconfig(sim_cluster, tmp_path / "operator-kubeconfig")
    operator = OperatorProcess(
        sim_cluster,
        tmp_path / "operator.log",
        # kopf's retries (1.7 s here) are spent long before the test ends: it must not exit.
        extra_args=[
            "--lease-namespace=nemotron-system",
            "--watch-error-backoffs=0.2,0.5,1",
            "--liveness-stale-seconds=4",
        ],
        env={"KUBECONFIG": str(kubeconfig)},
    )
    operator.start()
    try:
        apply(sim_cluster, deployment())
        wait_ready(sim_cluster)
        name = binding["metadata"]["name"]
        sim_cluster.kubectl("delete", "clusterrolebinding", name)
        sim_cluster.wait_until(lambda: can_watch() == "no", what="the binding revoked")
        revoked = time.monotonic()
        # Open watch streams were authorized when they started; the server ends each within
        # 5 minutes. Cut them now, and ask for a change the operator cannot make.
        sim_cluster.call(lambda c: c.proxy.faults.unavailable(0.3) if c.proxy else None)
        time.sleep(0.5)
        apply(sim_cluster, deployment(replicas=2))
        operator.wait_for_log("permission missing:", seconds=60)
        line = next(x for x in operator.log().splitlines() if "permission missing:" in x)
        # kube-apiserver's message names the identity, the verb and the resource.
        assert "system:serviceaccount:nemotron-system:nemotron-operator" in line
        assert re.search(r'cannot (list|watch) resource "\w+"', line), line
        print(f"FIGURE RBAC revoked: to the log line naming the permission: "
              f"{time.monotonic() - revoked:.1f} s")  # fmt: skip
        # The reconcile of the change: refused, and the log says what is not allowed.
        operator.wait_for_log("403 Forbidden", seconds=30)
        assert re.search(r'cannot \w+ resource "\w+"', operator.log().split("403 Forbidden")[1])
        time.sleep(12.0)  # kopf's retries spent many times over; liveness stale after 4 s
        assert operator.running, operator.log()[-3000:]
        code, body = operator.healthz()
        assert code == 200, body
        sim_cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(binding))
        restored = time.monotonic()
        sim_cluster.wait_until(lambda: can_watch() == "yes", what="the binding restored")
        wait_ready(sim_cluster, seconds=90)
        assert status(sim_cluster)["ready"] == "2/2"
        print(f"FIGURE RBAC restored: to a change converged: {time.monotonic() - restored:.1f} s")
        assert operator.running
    finally:
        operator.stop()
        print(operator.log()[-8000:])
    operator.check_log()


def test_a_rotated_token_file_is_used_without_a_restart(
    sim_cluster: KubeHandle, tmp_path: Path
) -> None:
    """docs/reliability.md case 8, the token half, out of a pod: the operator's kubeconfig has
    a ``tokenFile``; the file is replaced by a new token and the old one made invalid (it is
    bound to a Secret, which is deleted: kube-apiserver then refuses it, as it refuses an
    expired one). The watch streams cut, kopf logs in again with the new token and a scale-up
    converges, with no restart and no write refused."""
    _install_chart_rbac(sim_cluster, tmp_path)

    def bound_token(secret: str) -> str:
        sim_cluster.kubectl(
            "create", "secret", "generic", secret, "-n", "nemotron-system", "--from-literal=k=v"
        )
        return str(
            sim_cluster.kubectl(
                "create", "token", "nemotron-operator", "-n", "nemotron-system", "--duration=1h",
                "--bound-object-kind=Secret", f"--bound-object-name={secret}",
            ).stdout  # with its newline, as `kubectl create token … > file` writes it
        )  # fmt: skip

    def accepted(token: str) -> bool:
        config = yaml.safe_load(sim_cluster.kubeconfig.read_text())
        config["users"][0]["user"] = {"token": token.strip()}
        path = tmp_path / "probe-kubeconfig"
        path.write_text(yaml.safe_dump(config))
        env = {**sim_cluster.env, "KUBECONFIG": str(path)}
        result = run_kubectl(env, "get", "nemotrondeployments", "-n", NAMESPACE, check=False)
        assert result.returncode == 0 or "Unauthorized" in result.stderr, result.stderr
        return result.returncode == 0

    token_file = tmp_path / "token"
    old = bound_token("operator-token-old")
    token_file.write_text(old)
    config = yaml.safe_load(sim_cluster.kubeconfig.read_text())
    config["users"][0]["user"] = {"tokenFile": str(token_file)}
    kubeconfig = tmp_path / "operator-kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    operator = OperatorProcess(
        sim_cluster,
        tmp_path / "operator.log",
        extra_args=["--lease-namespace=nemotron-system", "--watch-error-backoffs=0.2,0.5,1"],
        env={"KUBECONFIG": str(kubeconfig)},
    )
    operator.start()
    try:
        apply(sim_cluster, deployment())
        wait_ready(sim_cluster)
        # Rotate as the kubelet does (a new file renamed over the old), then revoke the old.
        staged = tmp_path / "token.new"
        staged.write_text(bound_token("operator-token-new"))
        staged.replace(token_file)
        rotated = time.monotonic()
        sim_cluster.kubectl("delete", "secret", "operator-token-old", "-n", "nemotron-system")
        sim_cluster.wait_until(lambda: not accepted(old), what="the old token refused")
        mark = operator.mark()
        sim_cluster.call(lambda c: c.proxy.faults.unavailable(0.3) if c.proxy else None)
        time.sleep(0.5)  # the outage above: the cut streams reconnect after it
        apply(sim_cluster, deployment(replicas=2))
        wait_ready(sim_cluster, seconds=60)
        assert status(sim_cluster)["ready"] == "2/2"
        print(f"FIGURE token file rotated: to a change converged: "
              f"{time.monotonic() - rotated:.1f} s")  # fmt: skip
        refused = [r for r in operator.writes(mark) if r["status"] in (401, 403)]
        assert refused == [], refused
        # kopf's watch, reopened with the old token, was refused once and logged in again
        # (its login handler reads the same connection, so the new token).
        assert "Re-authentication has finished" in operator.log()
        unauthorized = [r for r in operator.requests()[mark:] if r["status"] == 401]
        print(f"FIGURE token file rotated: requests answered 401 afterwards: {len(unauthorized)}")
        assert operator.running
    finally:
        operator.stop()
        print(operator.log()[-8000:])
    operator.check_log()
