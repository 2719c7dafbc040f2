"""Security promises checked by Kubernetes' own enforcement (issue 25, items 10 and 11;
docs/reliability.md, "Security and bad input"):

- **Pod Security Admission**, enforced by kube-apiserver's PodSecurity admission plugin: the
  chart installs into a namespace labelled ``enforce: restricted`` and its operator pod is
  admitted; a NemotronDeployment in a namespace labelled ``enforce: baseline`` gets its serving
  pods admitted. A privileged pod is refused in both (the plugin is on, so the two admissions
  mean something).
- **The operator's /metrics** answers only bearer tokens kube-apiserver authenticates
  (TokenReview) and RBAC allows to ``get /metrics`` (SubjectAccessReview): 401 without or with
  a bad token, 403 for an authenticated caller without the grant, 200 for the chart's readers
  (the ServiceMonitor's own scraper, and Prometheus's ServiceAccount named in the values); the
  reviews are cached, so repeated scrapes cost one review of each kind (kube-apiserver's audit
  log counts them).

The measured figures are printed (``pytest -s``) and recorded in docs/reliability.md.
"""

from __future__ import annotations

import base64
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from tests.e2e.cluster import EXAMPLE, E2ECluster, wait_until
from tests.helm import CHART

# Namespaces and a release of this module's own: the pool keeps namespaces between modules.
RELEASE = "nemotron-operator-secured"  # also the chart's full name (it contains the chart's)
OPERATOR_NAMESPACE = "nemotron-secured"
WORKLOAD_NAMESPACE = "nemotron-secured-ai"
PSA_LABELS = ("pod-security.kubernetes.io/enforce", "pod-security.kubernetes.io/enforce-version")
OPERATOR_SA = f"system:serviceaccount:{OPERATOR_NAMESPACE}:{RELEASE}"
METRICS_URL = f"http://{RELEASE}-metrics.{OPERATOR_NAMESPACE}.svc:8081/metrics"
PROMETHEUS_NAMESPACE, PROMETHEUS_SA = "monitoring", "prometheus-k8s"  # the chart's default reader
MANAGED = "app.kubernetes.io/managed-by=nemotron-operator"
REVIEWS = {"tokenreviews", "subjectaccessreviews"}


def psa_namespace(cluster: E2ECluster, name: str, level: str) -> None:
    if cluster.kubectl("get", "namespace", name, check=False).returncode != 0:
        cluster.kubectl("create", "namespace", name)
    cluster.kubectl(
        "label", "--overwrite", "namespace", name,
        f"{PSA_LABELS[0]}={level}", f"{PSA_LABELS[1]}=latest",
    )  # fmt: skip


@pytest.fixture(scope="module")
def secured(cluster: E2ECluster) -> Iterator[E2ECluster]:
    """The chart (with its ServiceMonitor) installed into a namespace that enforces the
    restricted Pod Security Standard; the workload namespace enforces baseline."""
    psa_namespace(cluster, OPERATOR_NAMESPACE, "restricted")
    psa_namespace(cluster, WORKLOAD_NAMESPACE, "baseline")
    started = time.monotonic()
    cluster.helm(
        "install", RELEASE, str(CHART), "--namespace", OPERATOR_NAMESPACE, "--wait",
        "--timeout", "180s", *cluster.install_values(),
        "--set", "metrics.serviceMonitor.enabled=true",
    )  # fmt: skip
    took = time.monotonic() - started
    print(f"\nFIGURE helm install --wait under enforce=restricted: {took:.1f} s")
    yield cluster
    cluster.kubectl("delete", "nd", "--all", "-n", WORKLOAD_NAMESPACE, "--wait", check=False)
    cluster.helm("uninstall", RELEASE, "-n", OPERATOR_NAMESPACE, "--wait", check=False)
    for namespace in (OPERATOR_NAMESPACE, WORKLOAD_NAMESPACE):
        cluster.kubectl("label", "namespace", namespace, *(f"{k}-" for k in PSA_LABELS))


def privileged_pod(namespace: str) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "privileged", "namespace": namespace},
            "spec": {
                "containers": [
                    {"name": "c", "image": "busybox", "securityContext": {"privileged": True}}
                ]
            },
        }
    )


def test_kube_apiserver_enforces_pod_security_in_both_namespaces(secured: E2ECluster) -> None:
    for namespace, level in ((OPERATOR_NAMESPACE, "restricted"), (WORKLOAD_NAMESPACE, "baseline")):
        refused = secured.kubectl(
            "apply", "--dry-run=server", "-f", "-", input=privileged_pod(namespace), check=False
        )
        assert refused.returncode != 0, refused.stdout
        assert f'violates PodSecurity "{level}:latest"' in refused.stderr, refused.stderr
        assert "privileged" in refused.stderr


def violations_if_restricted(cluster: E2ECluster, namespace: str) -> str:
    """kube-apiserver's warnings for the pods already in ``namespace`` that the restricted
    level would refuse (a server-side dry-run of the label: nothing changes)."""
    check = cluster.kubectl(
        "label", "--dry-run=server", "--overwrite", "namespace", namespace,
        f"{PSA_LABELS[0]}=restricted", f"{PSA_LABELS[1]}=latest",
    )  # fmt: skip
    return "\n".join(
        line for line in check.stderr.splitlines() if "violate" in line or ": " in line
    )


def test_the_restricted_dry_run_names_a_violating_pod(secured: E2ECluster) -> None:
    """A positive control for the two checks below: in a namespace without a level, a pod that
    escalates privileges is admitted, and the dry-run of the restricted label names it."""
    namespace = "nemotron-secured-open"
    if secured.kubectl("get", "namespace", namespace, check=False).returncode != 0:
        secured.kubectl("create", "namespace", namespace)
    pod = yaml.safe_load(privileged_pod(namespace))
    pod["spec"]["nodeName"] = "no-such-node"  # bound to no kubelet: never runs
    secured.kubectl("apply", "-f", "-", input=yaml.safe_dump(pod))
    try:
        found = violations_if_restricted(secured, namespace)
        assert 'violate the new PodSecurity enforce level "restricted:latest"' in found, found
        assert "privileged" in found, found
    finally:
        secured.kubectl(
            "delete", "pod", "privileged", "-n", namespace, "--grace-period=0", "--force"
        )


def test_the_operator_pod_is_admitted_under_restricted(secured: E2ECluster) -> None:
    (pod,) = secured.kubectl_json(
        "get", "pods", "-n", OPERATOR_NAMESPACE, "-l", f"app.kubernetes.io/instance={RELEASE}"
    )["items"]
    ready = {c["type"]: c["status"] for c in pod["status"].get("conditions") or []}
    assert ready.get("Ready") == "True", pod["status"]
    # Admitted, and still compliant: kube-apiserver finds no pod there it would refuse.
    assert violations_if_restricted(secured, OPERATOR_NAMESPACE) == ""


def test_serving_pods_are_admitted_under_baseline(secured: E2ECluster) -> None:
    secured.kubectl(
        "create", "secret", "generic", "hf-token", "--from-literal=token=hf_unused",
        "-n", WORKLOAD_NAMESPACE,
    )  # fmt: skip
    example = yaml.safe_load(EXAMPLE.read_text())
    example["metadata"]["namespace"] = WORKLOAD_NAMESPACE
    started = time.monotonic()
    secured.kubectl("apply", "-f", "-", input=yaml.safe_dump(example))
    secured.kubectl(
        "wait", "nemotrondeployment/nano", "-n", WORKLOAD_NAMESPACE, "--for=condition=Ready",
        "--timeout=180s", timeout=200,
    )  # fmt: skip
    print(f"\nFIGURE NemotronDeployment Ready under enforce=baseline: "
          f"{time.monotonic() - started:.1f} s")  # fmt: skip
    pods = secured.kubectl_json("get", "pods", "-n", WORKLOAD_NAMESPACE, "-l", MANAGED)["items"]
    assert pods
    assert all(p["status"].get("phase") == "Running" for p in pods)
    # The rendered serving pods meet restricted as well (render/pod.py's security contexts):
    # the namespace could enforce it; baseline is the floor the docs promise.
    assert violations_if_restricted(secured, WORKLOAD_NAMESPACE) == ""


def fetch(url: str, token: str | None) -> int:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    request = urllib.request.Request(url, headers=headers)  # noqa: S310 (a ClusterIP)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
            response.read()
            return int(response.status)
    except urllib.error.HTTPError as refused:
        return int(refused.code)


def review_calls(cluster: E2ECluster) -> list[Any]:
    assert cluster.audit is not None
    return [e for e in cluster.audit() if e.username == OPERATOR_SA and e.resource in REVIEWS]


def scraper_token(cluster: E2ECluster) -> str:
    """The token the ServiceMonitor sends: its Secret, filled by kube-controller-manager."""
    secret = f"{RELEASE}-metrics-scraper-token"

    def token() -> str:
        data = cluster.kubectl_json("get", "secret", secret, "-n", OPERATOR_NAMESPACE).get("data")
        return base64.b64decode((data or {}).get("token", "")).decode()

    return wait_until(token, seconds=30, what=f"the token in {secret}")


def test_metrics_answer_only_callers_rbac_allows(secured: E2ECluster) -> None:
    # The answers are checked everywhere; the count of reviews needs kube-apiserver's audit log,
    # which the suite reads on the simulated control plane only (not kind's).
    audited = secured.audit is not None
    (monitor,) = secured.kubectl_json("get", "servicemonitors", "-n", OPERATOR_NAMESPACE)["items"]
    credentials = monitor["spec"]["endpoints"][0]["authorization"]["credentials"]
    assert credentials == {"name": f"{RELEASE}-metrics-scraper-token", "key": "token"}
    secured.kubectl("create", "namespace", PROMETHEUS_NAMESPACE)
    secured.kubectl("create", "serviceaccount", PROMETHEUS_SA, "-n", PROMETHEUS_NAMESPACE)
    secured.kubectl("create", "serviceaccount", "intruder", "-n", "default")
    prometheus = secured.kubectl(
        "create", "token", PROMETHEUS_SA, "-n", PROMETHEUS_NAMESPACE
    ).stdout.strip()
    intruder = secured.kubectl("create", "token", "intruder", "-n", "default").stdout.strip()
    with secured.reach(METRICS_URL) as url:
        before = len(review_calls(secured)) if audited else 0
        assert fetch(url, None) == 401
        assert fetch(url, "not-a-token") == 401
        assert fetch(url, intruder) == 403
        scraper = scraper_token(secured)
        assert fetch(url, prometheus) == 200
        started = time.monotonic()
        # Prometheus's scrapes, back to back: the reviews are cached.
        statuses = [fetch(url, scraper) for _ in range(20)]
        elapsed = time.monotonic() - started
        assert statuses == [200] * 20
        # Each caller asked once: a TokenReview for each of the four that sent a token, a
        # SubjectAccessReview for each of the three kube-apiserver authenticated.
        calls = review_calls(secured)[before:] if audited else []
    if not audited:
        return
    counts = {r: sum(1 for e in calls if e.resource == r) for r in REVIEWS}
    print(f"\nFIGURE /metrics reviews: {counts} for 5 callers and 24 requests; 20 scrapes with "
          f"one token in {elapsed:.2f} s")  # fmt: skip
    assert counts == {"tokenreviews": 4, "subjectaccessreviews": 3}, calls
    assert all(e.code == 201 and e.verb == "create" for e in calls), calls
