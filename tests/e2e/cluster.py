"""The cluster the e2e suite drives, as a user would: a kubeconfig, kubectl and helm.

Two kinds, one interface:
- the simulated cluster (the default, and what CI runs): the test session's real control plane
  (kube-apiserver, etcd, kube-controller-manager, kube-scheduler built from Kubernetes' modules)
  with simulated nodes (a node without GPUs for the operator, GPU nodes for the serving pods),
  all in the session's network namespace (tests/kube.py). The operator's image
  (``ghcr.io/nemotron-operator/nemotron-operator``, any tag) runs as a real child process under
  its ServiceAccount's token, so kube-apiserver enforces the chart's RBAC, and its audit log
  records every request for the RBAC audit.
- a real cluster, only with ``KIND_E2E=1`` (``hack/kind-e2e.sh`` sets it, with ``KUBECONFIG``):
  the images were built and loaded by that script. An exported ``KUBECONFIG`` alone never sends
  the suite to a real cluster: it installs and deletes things.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

from tests import polling
from tests.helm import CHART, helm_env, run_helm
from tests.kubectl import kubectl_binary, run_kubectl

if TYPE_CHECKING:
    from tests.kube import AuditEvent, KubeHandle

T = TypeVar("T")

KIND = os.environ.get("KIND_E2E") == "1"
RELEASE = "nemotron-operator"
OPERATOR_NAMESPACE = "nemotron-system"
WORKLOAD_NAMESPACE = "nemotron-e2e"
EXAMPLE = Path(__file__).resolve().parent / "nano-stub.yaml"
# What hack/kind-e2e.sh builds and loads; the simulated cluster runs any tag of the repository.
KIND_OPERATOR_TAG = "e2e"


@dataclass
class E2ECluster:
    """What the tests use: kubectl and helm against one cluster, and how to reach a Service."""

    env: dict[str, str]
    workdir: Path
    kind: bool
    # Every request kube-apiserver's audit log recorded, for the RBAC audit (None on kind,
    # whose audit log this suite cannot read).
    audit: Callable[[], list[AuditEvent]] | None = None
    # Reach Services through `kubectl port-forward` (kube-apiserver -> kubelet -> the pod's
    # network namespace) as on kind: on kind, and on the simulated cluster's real nodes.
    port_forward: bool = False

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 60.0
    ) -> subprocess.CompletedProcess[str]:
        return run_kubectl(self.env, *args, input=input, check=check, timeout=timeout)

    def kubectl_json(self, *args: str) -> Any:
        return json.loads(self.kubectl(*args, "-o", "json").stdout)

    def helm(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return run_helm(self.env, *args, check=check, timeout=240.0)

    def install_values(self) -> list[str]:
        """Values for this cluster: the kind tier's locally loaded image; debug logs everywhere,
        so the HF-token check reads the most the operator ever logs; a short resync and scrape."""
        values = [
            "--set",
            "operator.logLevel=debug",
            "--set",
            "operator.resyncSeconds=2",
            "--set",
            "operator.scrapeSeconds=1",
        ]
        if self.kind:
            values += ["--set", f"image.tag={KIND_OPERATOR_TAG}", "--set", "image.pullPolicy=Never"]
        return values

    def metrics_token(self, account: str = "metrics-check") -> str:
        """A bearer token that may read the operator's /metrics (metrics.auth, on by default):
        a ServiceAccount bound to the chart's metrics-reader ClusterRole, as a user would
        add one; waits until kube-apiserver's authorizer sees the binding."""
        if self.kubectl("get", "serviceaccount", account, "-n", OPERATOR_NAMESPACE,
                        check=False).returncode != 0:  # fmt: skip
            self.kubectl("create", "serviceaccount", account, "-n", OPERATOR_NAMESPACE)
            self.kubectl(
                "create", "clusterrolebinding", f"{RELEASE}-{account}",
                f"--clusterrole={RELEASE}-metrics-reader",
                f"--serviceaccount={OPERATOR_NAMESPACE}:{account}",
            )  # fmt: skip
        who = f"--as=system:serviceaccount:{OPERATOR_NAMESPACE}:{account}"
        wait_until(
            lambda: self.kubectl("auth", "can-i", "get", "/metrics", who,
                                 check=False).stdout.strip() == "yes",
            seconds=30, what="the metrics-reader binding in force",
        )  # fmt: skip
        return self.kubectl(
            "create", "token", account, "-n", OPERATOR_NAMESPACE, "--duration=1h"
        ).stdout.strip()

    def helm_install(
        self, *extra: str, release: str = RELEASE, namespace: str = OPERATOR_NAMESPACE
    ) -> subprocess.CompletedProcess[str]:
        return self.helm(
            "install",
            release,
            str(CHART),
            "--namespace",
            namespace,
            "--create-namespace",
            "--wait",
            "--timeout",
            "180s",
            *self.install_values(),
            *extra,
        )

    @contextlib.contextmanager
    def reach(self, url: str) -> Iterator[str]:
        """``url`` (``http://SERVICE.NAMESPACE.svc:PORT/path``) as this machine can reach it.

        In the simulated cluster the test runs inside the cluster's network namespace, where a
        Service's ClusterIP is reachable (no cluster DNS: the name is resolved here); on kind the
        cluster network is not reachable from the host, so ``kubectl port-forward`` carries it,
        and so it does on the simulated cluster's real nodes. Either way it waits (bounded)
        until the Service answers: a pod turns Ready a moment before kube-controller-manager
        lists it in the Service's EndpointSlice and the proxy sends connections to it, as on
        any cluster.
        """
        parts = urlsplit(url)
        host = parts.hostname or ""
        service, namespace = host.split(".")[:2]
        port = parts.port or 80
        if not (self.kind or self.port_forward):
            ip = self.kubectl(
                "get", "service", service, "-n", namespace, "-o", "jsonpath={.spec.clusterIP}"
            ).stdout
            wait_until(lambda: _answers(f"http://{ip}:{port}/"), seconds=30, what=f"{url}")
            yield f"http://{ip}:{port}{parts.path}"
            return
        local = _free_port()
        forward = subprocess.Popen(
            [
                kubectl_binary(),
                "port-forward",
                f"service/{service}",
                f"{local}:{port}",
                "-n",
                namespace,
            ],
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            wait_until(
                lambda: _port_open(local) or forward.poll() is not None,
                seconds=30,
                what="kubectl port-forward",
            )
            if forward.poll() is not None:
                output = forward.stdout.read() if forward.stdout else ""
                raise AssertionError(f"kubectl port-forward exited: {output}")
            yield f"http://127.0.0.1:{local}{parts.path}"
        finally:
            forward.terminate()
            forward.wait(10)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _answers(url: str) -> bool:
    """Whether an HTTP server answers at ``url`` (with any status)."""
    try:
        with urllib.request.urlopen(url, timeout=5):  # noqa: S310 (a ClusterIP in the namespace)
            return True
    except urllib.error.HTTPError:
        return True
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


def _port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def wait_until(
    check: Callable[[], T], *, seconds: float = 60.0, every: float = 0.2, what: str = ""
) -> T:
    """Poll ``check`` (bounded) until it returns something truthy."""
    return polling.wait_until(check, seconds=seconds, every=every, what=what)


def post_json(url: str, body: dict[str, Any], timeout: float = 30.0) -> Any:
    request = urllib.request.Request(  # noqa: S310 (a loopback or port-forwarded http URL)
        url, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
        return json.load(response)


def get_json(url: str, timeout: float = 30.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310
        return json.load(response)


@contextlib.contextmanager
def e2e_cluster(
    workdir: Path, simulated: KubeHandle | None, *, port_forward: bool = False
) -> Iterator[E2ECluster]:
    """The cluster KIND_E2E names, or the session's simulated cluster on a real control plane."""
    base = {**os.environ, "KUBECACHEDIR": str(workdir / "kubecache")}
    if KIND:
        if not os.environ.get("KUBECONFIG"):
            raise RuntimeError("KIND_E2E=1 needs KUBECONFIG (hack/kind-e2e.sh sets both)")
        yield E2ECluster(env=helm_env(base, workdir), workdir=workdir, kind=True)
        return
    if simulated is None:
        raise RuntimeError("the simulated cluster is missing")
    env = helm_env({**base, "KUBECONFIG": str(simulated.kubeconfig)}, workdir)
    yield E2ECluster(
        env=env, workdir=workdir, kind=False, audit=simulated.audit, port_forward=port_forward
    )
