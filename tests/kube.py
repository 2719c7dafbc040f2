"""The simulated cluster on a real control plane, as the tests use it.

``kube_cluster`` (tests/conftest.py) starts one per test session and shares it: each test works
in namespaces of its own (``kube_namespace``). A test that needs a cluster of its own (other
nodes, a component restarted) starts one with :func:`start_cluster`.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import subprocess
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from nemotron_sim.background import Background
from nemotron_sim.kubecluster import KubeCluster
from tests import polling
from tests.integration.conftest import run_kubectl

T = TypeVar("T")
# Fast timings for tests: quick init containers and probes, no model load delay.
SHARED_OPTIONS: dict[str, Any] = {
    "nodes": "NVIDIA-H200:8x2,NVIDIA-B200:8x1",
    "system_nodes": 1,
    "init_seconds": 0.01,
    "probe_period": 0.05,
    "probe_time_scale": 0.1,
    "crash_backoff_seconds": 0.3,
    "stop_grace_seconds": 5.0,
}


@dataclass(frozen=True)
class AuditEvent:
    """One request as kube-apiserver's audit log recorded it (stage ResponseComplete)."""

    username: str
    verb: str
    api_group: str
    resource: str  # with its subresource: nemotrondeployments/status
    namespace: str
    name: str
    code: int
    allowed: bool


def audit_events(path: Path) -> list[AuditEvent]:
    """Every completed request in the audit log (a watch: when it started)."""
    events: dict[str, AuditEvent] = {}
    for line in path.read_text().splitlines():
        entry = json.loads(line)
        if entry.get("stage") not in ("ResponseComplete", "ResponseStarted"):
            continue
        ref = entry.get("objectRef") or {}
        resource = ref.get("resource", "")
        if ref.get("subresource"):
            resource = f"{resource}/{ref['subresource']}"
        decision = (entry.get("annotations") or {}).get("authorization.k8s.io/decision")
        events[entry["auditID"]] = AuditEvent(
            username=(entry.get("user") or {}).get("username", ""),
            verb=entry.get("verb", ""),
            api_group=ref.get("apiGroup", ""),
            resource=resource,
            namespace=ref.get("namespace", ""),
            name=ref.get("name", ""),
            code=int((entry.get("responseStatus") or {}).get("code") or 0),
            allowed=decision == "allow",
        )
    return list(events.values())


class KubeHandle:
    """What a test gets: kubectl with the admin kubeconfig, and the cluster's own objects."""

    def __init__(self, background: Background[KubeCluster], workdir: Path) -> None:
        self.background = background
        self.workdir = workdir
        cluster = background.cluster
        self.kubeconfig: Path = cluster.kubeconfig
        self.audit_log: Path = cluster.control_plane.audit_log
        self.env = {
            **os.environ,
            "KUBECONFIG": str(self.kubeconfig),
            # kubectl caches discovery; a private cache keeps runs from seeing stale resources.
            "KUBECACHEDIR": str(workdir / "kubecache"),
        }

    @property
    def cluster(self) -> KubeCluster:
        return self.background.cluster

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 60.0
    ) -> subprocess.CompletedProcess[str]:
        return run_kubectl(self.env, *args, input=input, check=check, timeout=timeout)

    def kubectl_json(self, *args: str) -> Any:
        return json.loads(self.kubectl(*args, "-o", "json").stdout)

    def call(self, fn: Callable[[KubeCluster], T], timeout: float = 10.0) -> T:
        """Run ``fn(cluster)`` on the cluster's event loop."""
        return self.background.call(fn, timeout)

    def run(self, fn: Callable[[KubeCluster], Coroutine[Any, Any, T]], timeout: float = 60.0) -> T:
        return self.background.run(fn, timeout)

    def audit(self) -> list[AuditEvent]:
        return audit_events(self.audit_log)

    @contextlib.contextmanager
    def namespace(self, prefix: str = "t") -> Iterator[str]:
        """A fresh namespace; deleted afterwards, waiting (bounded) until its pods are gone so
        that the GPUs they held are free for the next test."""
        name = f"{prefix}-{secrets.token_hex(3)}"
        self.kubectl("create", "namespace", name)
        try:
            yield name
        finally:
            self.kubectl("delete", "namespace", name, "--wait=false", check=False)
            with contextlib.suppress(AssertionError):
                self.wait_until(
                    lambda: not self.kubectl_json("get", "pods", "-n", name)["items"],
                    seconds=60,
                    what=f"the pods of namespace {name} to go",
                )

    @staticmethod
    def wait_until(
        check: Callable[[], T], *, seconds: float = 30.0, every: float = 0.1, what: str = ""
    ) -> T:
        """Poll ``check`` (bounded) until it returns something truthy."""
        return polling.wait_until(check, seconds=seconds, every=every, what=what)


@contextlib.contextmanager
def start_cluster(workdir: Path, **options: Any) -> Iterator[KubeHandle]:
    """A cluster of the test's own (``options`` as ``KubeCluster`` takes them), stopped after."""
    settings = {**SHARED_OPTIONS, **options}
    with Background(lambda: KubeCluster(workdir=workdir / "cluster", **settings)) as background:
        yield KubeHandle(background, workdir)
