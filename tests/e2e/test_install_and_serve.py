"""The user's path, end to end: helm install the chart, kubectl apply a NemotronDeployment, a chat
completion from its endpoint, helm upgrade, kubectl delete, helm uninstall — plus the operator's
least privilege seen from outside and an HF token that never reaches a log, Event or object.

The same module runs on the simulated cluster (in the test command) and on kind
(hack/kind-e2e.sh). The tests run in file order and share one installation: each step builds on
the previous one, as a user's session would.
"""

from __future__ import annotations

import base64
import json
import re
import secrets
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.cluster import (
    EXAMPLE,
    OPERATOR_NAMESPACE,
    RELEASE,
    WORKLOAD_NAMESPACE,
    E2ECluster,
    get_json,
    post_json,
    wait_until,
)
from tests.e2e.rbac_audit import SOMETIMES_USED, UNUSED_GRANTS, chart_grants
from tests.helm import CHART

OPERATOR = RELEASE  # the chart's full name when the release is named after it
SERVICE_ACCOUNT = f"system:serviceaccount:{OPERATOR_NAMESPACE}:{OPERATOR}"
NAME = "nano"
# A fresh canary per run: the suite fails if it shows up anywhere the operator writes.
CANARY = f"hf_e2eCanary{secrets.token_hex(12)}"
CHILDREN = "statefulsets,services,poddisruptionbudgets,pods,persistentvolumeclaims"
MANAGED = "app.kubernetes.io/managed-by=nemotron-operator"


@pytest.fixture(scope="module")
def installed(cluster: E2ECluster) -> Iterator[E2ECluster]:
    """The chart installed with helm (--wait: the operator's Deployment is available)."""
    cluster.helm_install()
    yield cluster
    if cluster.helm("status", RELEASE, "-n", OPERATOR_NAMESPACE, check=False).returncode == 0:
        cluster.helm("uninstall", RELEASE, "-n", OPERATOR_NAMESPACE, "--wait", check=False)


@pytest.fixture(scope="module")
def served(installed: E2ECluster) -> E2ECluster:
    """The example applied with kubectl, its token Secret holding the canary, and Ready."""
    cluster = installed
    cluster.kubectl("create", "namespace", WORKLOAD_NAMESPACE)
    cluster.kubectl(
        "create",
        "secret",
        "generic",
        "hf-token",
        f"--from-literal=token={CANARY}",
        "-n",
        WORKLOAD_NAMESPACE,
    )
    cluster.kubectl("apply", "-f", str(EXAMPLE))
    cluster.kubectl(
        "wait",
        f"nemotrondeployment/{NAME}",
        "-n",
        WORKLOAD_NAMESPACE,
        "--for=condition=Ready",
        "--timeout=180s",
        timeout=200,
    )
    return cluster


def operator_pods(cluster: E2ECluster) -> list[dict[str, Any]]:
    selector = f"app.kubernetes.io/instance={RELEASE},app.kubernetes.io/name=nemotron-operator"
    pods = cluster.kubectl_json("get", "pods", "-n", OPERATOR_NAMESPACE, "-l", selector)
    return [p for p in pods["items"] if not p["metadata"].get("deletionTimestamp")]


def is_ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def operator_logs(cluster: E2ECluster) -> str:
    return cluster.kubectl(
        "logs", f"deployment/{OPERATOR}", "-n", OPERATOR_NAMESPACE, "--tail=-1"
    ).stdout


def nemotron_deployment(cluster: E2ECluster) -> dict[str, Any]:
    found: dict[str, Any] = cluster.kubectl_json(
        "get", "nemotrondeployment", NAME, "-n", WORKLOAD_NAMESPACE
    )
    return found


def serving_pods(cluster: E2ECluster) -> dict[str, tuple[str, int]]:
    """Serving pod name → (uid, restarts of its containers)."""
    pods = cluster.kubectl_json("get", "pods", "-n", WORKLOAD_NAMESPACE, "-l", MANAGED)
    return {
        p["metadata"]["name"]: (
            p["metadata"]["uid"],
            sum(s.get("restartCount", 0) for s in p["status"].get("containerStatuses") or []),
        )
        for p in pods["items"]
    }


def test_operator_pod_becomes_ready_under_its_own_service_account(installed: E2ECluster) -> None:
    (pod,) = operator_pods(installed)
    assert is_ready(pod)
    assert pod["spec"]["serviceAccountName"] == OPERATOR
    # It reached the API server with that account's token: it holds its Lease.
    lease = installed.kubectl_json("get", "lease", OPERATOR, "-n", OPERATOR_NAMESPACE)
    assert lease["spec"]["holderIdentity"]


def test_operator_service_account_has_least_privilege(installed: E2ECluster) -> None:
    """``kubectl auth can-i --list`` as the operator's ServiceAccount, from outside."""
    for namespace in (WORKLOAD_NAMESPACE, OPERATOR_NAMESPACE, "default"):
        listing = installed.kubectl(
            "auth", "can-i", "--list", f"--as={SERVICE_ACCOUNT}", "-n", namespace
        ).stdout
        # Columns: Resources, Non-Resource URLs, Resource Names, Verbs (the last [...] group).
        rows = [line for line in listing.splitlines()[1:] if line.strip()]
        resource_rows = [row for row in rows if not row.startswith(" ")]
        assert resource_rows, listing
        for row in resource_rows:
            resource = row.split()[0]
            verbs = set(re.findall(r"\[([^\]]*)\]\s*$", row)[0].split())
            assert "*" not in resource, row
            assert "*" not in verbs, row
            assert not verbs & {"escalate", "bind", "impersonate"}, row
            if resource.split(".")[0] in {"secrets", "serviceaccounts/token"}:
                raise AssertionError(f"the operator may touch {resource}: {verbs}")
    for question in (
        ("list", "secrets", "-A"),
        ("watch", "secrets", "-A"),
        ("get", "secrets", "-n", WORKLOAD_NAMESPACE),
        ("create", "pods", "-n", WORKLOAD_NAMESPACE),
        ("bind", "clusterroles"),
        ("impersonate", "serviceaccounts"),
    ):
        answer = installed.kubectl(
            "auth", "can-i", *question, f"--as={SERVICE_ACCOUNT}", check=False
        )
        assert answer.stdout.strip() == "no", (question, answer.stdout, answer.stderr)
    # A positive control: the listing above is the operator's, not an empty one.
    answer = installed.kubectl(
        "auth",
        "can-i",
        "patch",
        "statefulsets.apps",
        f"--as={SERVICE_ACCOUNT}",
        "-n",
        WORKLOAD_NAMESPACE,
    )
    assert answer.stdout.strip() == "yes"


def test_deployment_becomes_ready_and_answers_a_chat_completion(served: E2ECluster) -> None:
    status = nemotron_deployment(served)["status"]
    assert status["phase"] == "Ready"
    endpoint = status["endpoint"]
    assert endpoint.startswith(f"http://{NAME}.{WORKLOAD_NAMESPACE}.svc:")
    with served.reach(endpoint) as base:
        model = get_json(f"{base}/models")["data"][0]["id"]
        answer = post_json(
            f"{base}/chat/completions",
            {
                "model": model,
                "messages": [{"role": "user", "content": "What is a Mamba layer?"}],
                "max_tokens": 24,
            },
        )
    assert answer["choices"][0]["message"]["content"]
    assert answer["usage"]["completion_tokens"] > 0


def test_status_reports_tokens_per_second_and_the_operator_serves_metrics(
    served: E2ECluster,
) -> None:
    endpoint = nemotron_deployment(served)["status"]["endpoint"]
    metrics_url = f"http://{OPERATOR}-metrics.{OPERATOR_NAMESPACE}.svc:8081/metrics"
    with served.reach(endpoint) as base, served.reach(metrics_url) as metrics:
        model = get_json(f"{base}/models")["data"][0]["id"]
        body = {"model": model, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 16}

        def tokens_per_second() -> float:
            post_json(f"{base}/chat/completions", body)  # keep the pods busy while waiting
            throughput = nemotron_deployment(served)["status"].get("throughput") or {}
            return float(throughput.get("generationTokensPerSecond") or 0.0)

        rate = wait_until(tokens_per_second, seconds=90, every=0.5, what="tokens/s in status")
        assert rate > 0
        # The Tokens/s column of `kubectl get nd` is that figure.
        table = served.kubectl("get", "nd", NAME, "-n", WORKLOAD_NAMESPACE).stdout
        assert "TOKENS/S" in table.splitlines()[0]
        # /metrics wants a bearer token RBAC allows (the chart's metrics.auth, on by default).
        request = urllib.request.Request(  # noqa: S310 (loopback)
            metrics, headers={"Authorization": f"Bearer {served.metrics_token()}"}
        )
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
            exposition = response.read().decode()
    # The operator's own metrics, through the chart's metrics Service.
    ready = [
        line
        for line in exposition.splitlines()
        if line.startswith("nemotron_deployment_ready{")
        and f'name="{NAME}"' in line
        and f'namespace="{WORKLOAD_NAMESPACE}"' in line
    ]
    assert ready, exposition[-2000:]
    assert ready[0].endswith(" 1.0"), ready


def test_hf_token_never_reaches_logs_events_or_objects(served: E2ECluster) -> None:
    # The token is wired (so this check means something): by reference, resolved by the kubelet.
    (statefulset,) = served.kubectl_json(
        "get", "statefulsets", "-n", WORKLOAD_NAMESPACE, "-l", MANAGED
    )["items"]
    init_env = [
        e
        for c in statefulset["spec"]["template"]["spec"].get("initContainers", [])
        for e in c.get("env", [])
    ]
    assert {
        "name": "HF_TOKEN",
        "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token"}},
    } in init_env
    seen = {
        "operator logs (debug level)": operator_logs(served),
        "events": served.kubectl("get", "events", "-A", "-o", "json").stdout,
        "the NemotronDeployment": json.dumps(nemotron_deployment(served)),
        "its children": served.kubectl(
            "get", CHILDREN, "-n", WORKLOAD_NAMESPACE, "-o", "json"
        ).stdout,
        "the operator's Lease": served.kubectl(
            "get", "leases", "-n", OPERATOR_NAMESPACE, "-o", "json"
        ).stdout,
    }
    assert "reconciled" in seen["operator logs (debug level)"]  # the logs are the operator's
    # In plain text, or base64 as a Secret's data carries it (a leaked Secret object).
    forms = (CANARY, base64.b64encode(CANARY.encode()).decode())
    secret = served.kubectl("get", "secret", "hf-token", "-n", WORKLOAD_NAMESPACE, "-o", "json")
    assert forms[1] in secret.stdout  # the search would find a leaked Secret
    leaked = [where for where, text in seen.items() if any(form in text for form in forms)]
    assert not leaked, f"the HF token appeared in: {leaked}"


def test_helm_upgrade_changes_the_operator_not_the_serving_pods(served: E2ECluster) -> None:
    before = serving_pods(served)
    assert before
    (old_operator,) = operator_pods(served)
    statefulset_before = served.kubectl_json("get", "statefulset", NAME, "-n", WORKLOAD_NAMESPACE)
    served.helm(
        "upgrade",
        RELEASE,
        str(CHART),
        "--namespace",
        OPERATOR_NAMESPACE,
        "--reuse-values",
        "--set",
        "operator.resyncSeconds=3",
        "--wait",
        "--timeout",
        "180s",
    )
    (new_operator,) = wait_until(
        lambda: [
            p
            for p in operator_pods(served)
            if p["metadata"]["uid"] != old_operator["metadata"]["uid"] and is_ready(p)
        ],
        seconds=120,
        what="the upgraded operator pod to become Ready",
    )
    env = {e["name"]: e.get("value") for e in new_operator["spec"]["containers"][0]["env"]}
    assert env["NEMOTRON_OPERATOR_RESYNC_SECONDS"] == "3"
    # The new operator has reconciled the deployment (a resync at least) and changed nothing.
    wait_until(
        lambda: f"{WORKLOAD_NAMESPACE}/{NAME}" in operator_logs(served),
        seconds=60,
        what="the upgraded operator to reconcile the deployment",
    )
    assert nemotron_deployment(served)["status"]["phase"] == "Ready"
    assert serving_pods(served) == before
    statefulset_after = served.kubectl_json("get", "statefulset", NAME, "-n", WORKLOAD_NAMESPACE)
    assert (
        statefulset_after["metadata"]["generation"] == statefulset_before["metadata"]["generation"]
    )


def test_deleting_the_deployment_removes_everything_it_created(served: E2ECluster) -> None:
    served.kubectl("delete", "nemotrondeployment", NAME, "-n", WORKLOAD_NAMESPACE, "--timeout=120s")

    def gone() -> bool:
        left = served.kubectl_json("get", CHILDREN, "-n", WORKLOAD_NAMESPACE, "-l", MANAGED)
        return not left["items"]

    wait_until(gone, seconds=120, what="the deployment's children to be deleted")


def test_operator_calls_only_what_the_chart_grants_and_uses_every_grant(
    installed: E2ECluster,
) -> None:
    """Every request the operator made in this module, as the API server authorized it, against
    the chart's Roles and ClusterRoles: a call the chart does not grant fails (the server said
    403), and so does a grant no call used unless UNUSED_GRANTS says why it is still needed."""
    if installed.audit is None:
        pytest.skip("needs kube-apiserver's audit log (the suite cannot read kind's)")
    made = [d for d in installed.audit() if d.username == SERVICE_ACCOUNT]
    assert made, "the operator made no request with its ServiceAccount's token"
    denied = sorted({(d.api_group, d.resource, d.verb, d.namespace) for d in made if not d.allowed})
    assert not denied, f"the operator called what the chart does not grant: {denied}"
    used = {(d.api_group, d.resource, d.verb) for d in made}
    granted = chart_grants(installed)
    unused = granted - used - set(UNUSED_GRANTS) - set(SOMETIMES_USED)
    assert not unused, (
        f"granted but never used (remove, or say why in UNUSED_GRANTS): {sorted(unused)}"
    )
    stale = set(UNUSED_GRANTS) & used
    assert not stale, f"used after all: drop from UNUSED_GRANTS {sorted(stale)}"


def test_helm_uninstall_removes_the_operator_and_keeps_the_crd(installed: E2ECluster) -> None:
    installed.helm("uninstall", RELEASE, "--namespace", OPERATOR_NAMESPACE, "--wait")
    left = installed.kubectl(
        "get",
        "deployments,serviceaccounts,roles,rolebindings,services",
        "-n",
        OPERATOR_NAMESPACE,
        "-l",
        f"app.kubernetes.io/instance={RELEASE}",
        "-o",
        "name",
    ).stdout
    assert not left.strip(), left
    cluster_wide = installed.kubectl(
        "get",
        "clusterroles,clusterrolebindings",
        "-l",
        f"app.kubernetes.io/instance={RELEASE}",
        "-o",
        "name",
    ).stdout
    assert not cluster_wide.strip(), cluster_wide
    # Helm never deletes what crds/ installed: the CRD (and any NemotronDeployment) stays.
    installed.kubectl("get", "crd", "nemotrondeployments.serving.nemotron.io")


def test_per_namespace_mode_serves_only_where_it_may(cluster: E2ECluster) -> None:
    """Installed again with watchNamespaces: Roles in the served namespace only (plus the small
    read-only ClusterRole), and the operator serves the example there with nothing denied.

    Another release name, so another Lease: after `helm uninstall` the old operator's Lease is
    still held (measured on the simulated cluster, which stops a garbage-collected pod without
    the graceful stop in which the operator releases it), and a reinstall under the same name
    stands by until it expires (30 s)."""
    release = "nemotron-ns"
    account = f"system:serviceaccount:{OPERATOR_NAMESPACE}:{release}-nemotron-operator"
    # The simulated cluster serves the Prometheus Operator's CRDs, so the ServiceMonitor is
    # installed there too (a kind cluster has none: the chart would be refused).
    monitor = [] if cluster.kind else ["--set", "metrics.serviceMonitor.enabled=true"]
    cluster.helm_install(
        "--set", f"watchNamespaces={{{WORKLOAD_NAMESPACE}}}", *monitor, release=release
    )
    if monitor:
        cluster.kubectl(
            "get", "servicemonitor", f"{release}-nemotron-operator", "-n", OPERATOR_NAMESPACE
        )
    cluster.kubectl("apply", "-f", str(EXAMPLE))
    cluster.kubectl(
        "wait",
        f"nemotrondeployment/{NAME}",
        "-n",
        WORKLOAD_NAMESPACE,
        "--for=condition=Ready",
        "--timeout=180s",
        timeout=200,
    )
    for namespace, expected in ((WORKLOAD_NAMESPACE, "yes"), ("default", "no")):
        answer = cluster.kubectl(
            "auth",
            "can-i",
            "patch",
            "statefulsets.apps",
            f"--as={account}",
            "-n",
            namespace,
            check=False,
        )
        assert answer.stdout.strip() == expected, (namespace, answer.stdout, answer.stderr)
    if cluster.audit is not None:
        made = [d for d in cluster.audit() if d.username == account]
        assert made
        denied = sorted(
            {(d.api_group, d.resource, d.verb, d.namespace) for d in made if not d.allowed}
        )
        assert not denied, f"per-namespace mode lacks: {denied}"
    cluster.kubectl("delete", "nemotrondeployment", NAME, "-n", WORKLOAD_NAMESPACE)
    cluster.helm("uninstall", release, "--namespace", OPERATOR_NAMESPACE, "--wait")
