"""The simulated cluster on a real control plane, as the tests use it.

Starting a control plane costs seconds, so a test session keeps the clusters it started in a
pool (``ClusterPool``), one per set of options (nodes, timings, image mappings), and stops the
least recently used when too many run. A test gets a :class:`KubeHandle`: kubectl with the
admin's kubeconfig through the fault proxy, the cluster's objects, and its simulated parts. After
each test that used it, :meth:`KubeHandle.reset` puts the cluster back: what the test created
is deleted (namespaces, cluster-scoped objects, objects in ``default``), faults cleared, node
heartbeats resumed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import subprocess
from collections import OrderedDict
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from nemotron_operator.kube.errors import ApiError
from nemotron_operator.kube.transport import MERGE
from nemotron_sim.kubeapi.resources import ResourceKey
from nemotron_sim.kubelet.settings import KubeletSettings
from sim_cluster.background import Background
from sim_cluster.controlplane.flags import Settings
from sim_cluster.kubecluster import KubeCluster
from tests import polling
from tests.kubectl import run_kubectl

T = TypeVar("T")
ROOT = Path(__file__).resolve().parent.parent
PROJECT_CRDS = ROOT / "crds"
# kube-controller-manager's client rate for tests: at its default of 20 requests/s (burst 30)
# its start alone, a ServiceAccount and a token for each of its ~40 controllers
# (--use-service-account-credentials), took 5.2 s of every cluster start, the nodes waiting for
# their pod CIDRs; at 100, 0.5 s. The benchmark's cluster keeps the default.
TEST_CONTROLLER_QPS = 100
# Fast timings for tests: quick init containers and probes, no model load delay.
SHARED_OPTIONS: dict[str, Any] = {
    "control_plane": Settings(controller_qps=TEST_CONTROLLER_QPS),
    "nodes": "NVIDIA-H200:8x2,NVIDIA-B200:8x1",
    "system_nodes": 1,
    "init_seconds": 0.01,
    "probe_period": 0.05,
    "probe_time_scale": 0.1,
    "crash_backoff_seconds": 0.3,
    "stop_grace_seconds": 5.0,
}
MAX_RUNNING = 3  # clusters kept at once (each ~0.7 GB: etcd, kube-apiserver, controllers)
SYSTEM_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})
# Cluster-scoped kinds a test may create; reset deletes the ones that were not there before.
CRDS = ResourceKey("apiextensions.k8s.io", "v1", "customresourcedefinitions")
CLUSTER_KINDS = (
    ResourceKey("rbac.authorization.k8s.io", "v1", "clusterroles"),
    ResourceKey("rbac.authorization.k8s.io", "v1", "clusterrolebindings"),
    CRDS,
    ResourceKey("karpenter.sh", "v1", "nodepools"),
    ResourceKey("scheduling.k8s.io", "v1", "priorityclasses"),
    ResourceKey("storage.k8s.io", "v1", "storageclasses"),
)
# Kinds a test may create in `default`.
DEFAULT_KINDS = (
    ResourceKey("", "v1", "pods"),
    ResourceKey("", "v1", "services"),
    ResourceKey("", "v1", "configmaps"),
    ResourceKey("", "v1", "secrets"),
    ResourceKey("apps", "v1", "statefulsets"),
    ResourceKey("apps", "v1", "deployments"),
    ResourceKey("serving.nemotron.io", "v1alpha1", "nemotrondeployments"),
    ResourceKey("coordination.k8s.io", "v1", "leases"),  # a stopped operator's
)
NAMESPACES = ResourceKey("", "v1", "namespaces")
PODS = ResourceKey("", "v1", "pods")
CLAIMS = ResourceKey("", "v1", "persistentvolumeclaims")
# What emptying a namespace keeps: what kube-controller-manager puts in every namespace.
KEPT_IN_NAMESPACES = {"serviceaccounts": "default", "configmaps": "kube-root-ca.crt"}
NEMOTRON_DEPLOYMENTS = ResourceKey("serving.nemotron.io", "v1alpha1", "nemotrondeployments")
# Deleted first when a namespace is emptied: the owners that would create pods and claims.
FIRST_DELETED = (
    NEMOTRON_DEPLOYMENTS,
    ResourceKey("apps", "v1", "statefulsets"),
    ResourceKey("apps", "v1", "deployments"),
    ResourceKey("apps", "v1", "replicasets"),
)


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
    user_agent: str = ""
    at: str = ""  # when the request was received (RFC 3339, microseconds)


def audit_events(path: Path) -> list[AuditEvent]:
    """Every completed request in the audit log (a watch: when it started).

    kube-apiserver appends one JSON line per event while the suite reads, so the last line may be
    one it is still writing (CI read one cut at 1,295 characters): only lines already ended by a
    newline are read; the next read sees the rest."""
    events: dict[str, AuditEvent] = {}
    written, _, _being_written = path.read_text().rpartition("\n")
    for line in written.splitlines():
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
            user_agent=entry.get("userAgent", ""),
            at=entry.get("requestReceivedTimestamp", ""),
        )
    return list(events.values())


def _names(items: list[dict[str, Any]]) -> set[tuple[str, str]]:
    return {(i["metadata"].get("namespace", ""), i["metadata"]["name"]) for i in items}


class KubeHandle:
    """What a test gets: kubectl through the fault proxy, and the cluster's own objects."""

    def __init__(
        self,
        background: Background[KubeCluster],
        workdir: Path,
        *,
        through_proxy: bool = True,
        baseline: dict[ResourceKey, set[tuple[str, str]]] | None = None,
    ) -> None:
        """``baseline``: what the cluster held before any test (reset puts it back to that);
        by default what it holds now."""
        self.background = background
        self.workdir = workdir
        cluster = background.cluster
        # The operator under test and the test's kubectl go through the fault proxy, whose
        # plain HTTP address serves /_sim/ (faults, the request journal and counts); the e2e
        # suite, as a user, talks to kube-apiserver itself.
        self.kubeconfig: Path = cluster.proxy_kubeconfig if through_proxy else cluster.kubeconfig
        self.direct_kubeconfig: Path = cluster.kubeconfig
        self.url: str = cluster.control_plane.plan.proxy_http_url
        self.audit_log: Path = cluster.control_plane.audit_log
        self.env = {
            **os.environ,
            "KUBECONFIG": str(self.kubeconfig),
            # kubectl caches discovery; a private cache keeps runs from seeing stale resources.
            "KUBECACHEDIR": str(workdir / "kubecache"),
        }
        self.baseline = baseline if baseline is not None else self._snapshot()

    @property
    def cluster(self) -> KubeCluster:
        return self.background.cluster

    @property
    def auth_headers(self) -> dict[str, str]:
        """The admin's credentials for a raw request to ``url`` (kube-apiserver behind the
        proxy answers a request without them as ``system:anonymous``)."""
        return {"Authorization": f"Bearer {self.cluster.control_plane.admin_token}"}

    # --- kubectl and the API ----------------------------------------------------------------

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

    def request(
        self, method: str, path: str, body: Any = None, params: dict[str, str] | None = None
    ) -> Any:
        """One request to kube-apiserver as the admin (direct, not through the proxy); a PATCH
        is a JSON merge patch."""
        content_type = MERGE if method == "PATCH" else "application/json"

        async def send(cluster: KubeCluster) -> Any:
            assert cluster.api is not None
            for attempt in range(20):
                try:
                    return await cluster.api.request(
                        method, path, body=body, params=params, content_type=content_type
                    )
                except ApiError as error:
                    # A CRD's type a moment after it is established, an API server restarting
                    if error.status not in (429, 500, 503) or attempt == 19:
                        raise
                await asyncio.sleep(0.25)
            return None

        return self.run(send)

    def get(self, key: ResourceKey, namespace: str | None, name: str) -> dict[str, Any] | None:
        try:
            found: dict[str, Any] = self.request("GET", key.path(namespace, name))
        except ApiError as error:
            if error.status == 404:
                return None
            raise
        return found

    def list(
        self, key: ResourceKey, namespace: str | None = None, label_selector: str | None = None
    ) -> list[dict[str, Any]]:
        params = {"labelSelector": label_selector} if label_selector else None
        try:
            found = self.request("GET", key.path(namespace), params=params)
        except ApiError as error:
            if error.status == 404:  # the kind is not served (a CRD that is not installed)
                return []
            raise
        items: list[dict[str, Any]] = found.get("items") or []
        return items

    def ready_replicas(self, namespace: str, statefulset: str) -> int:
        sts = self.get(ResourceKey("apps", "v1", "statefulsets"), namespace, statefulset) or {}
        return int((sts.get("status") or {}).get("readyReplicas") or 0)

    def logs(
        self, namespace: str, pod: str, container: str | None = None, *, previous: bool = False
    ) -> str:
        """What ``kubectl logs`` shows (through kube-apiserver and the kubelet API)."""
        args = ["logs", pod, "-n", namespace, *(["-c", container] if container else [])]
        return self.kubectl(*args, *(["--previous"] if previous else [])).stdout

    def gpu_inventory(self) -> str:
        return self.cluster.gpu_inventory()

    def audit(self) -> list[AuditEvent]:
        return audit_events(self.audit_log)

    @staticmethod
    def wait_until(
        check: Callable[[], T], *, seconds: float = 30.0, every: float = 0.1, what: str = ""
    ) -> T:
        """Poll ``check`` (bounded) until it returns something truthy."""
        return polling.wait_until(check, seconds=seconds, every=every, what=what)

    # --- namespaces and reset ---------------------------------------------------------------

    @contextlib.contextmanager
    def namespace(self, prefix: str = "t") -> Iterator[str]:
        """A fresh namespace; emptied afterwards (its pods gone, so the GPUs they held are free
        for the next test) and deleted."""
        name = f"{prefix}-{secrets.token_hex(3)}"
        self.kubectl("create", "namespace", name)
        try:
            yield name
        finally:
            self._empty({name})
            with contextlib.suppress(ApiError):
                self.request("DELETE", NAMESPACES.path(None, name))

    def _snapshot(self) -> dict[ResourceKey, set[tuple[str, str]]]:
        snapshot = {key: _names(self.list(key)) for key in CLUSTER_KINDS}
        snapshot[NAMESPACES] = _names(self.list(NAMESPACES))
        for key in DEFAULT_KINDS:
            snapshot[key] = _names(self.list(key, "default"))
        return snapshot

    def reset(self) -> None:
        """Undo what the test did: clear faults, the request journal and counts, and resume node
        heartbeats; empty the namespaces it created (they are kept: deleting one takes
        kube-controller-manager 5 s at least, more while pods with a grace period are in it);
        delete what it added to ``default`` and the cluster-scoped objects it created; install
        again a CRD the cluster started with that it deleted."""

        def simulated_parts(cluster: KubeCluster) -> None:
            if cluster.proxy is not None:
                cluster.proxy.faults.clear()
                cluster.proxy.journal.clear()  # the next test reads only its own requests
                cluster.proxy.counts.reset()
            if cluster.nodes is not None:
                for node in list(cluster.nodes.stopped):
                    cluster.nodes.resume_heartbeat(node)
            cluster.set_kv_cache_bias(0.0)
            cluster.set_output_faults(frozenset())
            cluster.set_startup_seconds(
                load=cluster.default_load_seconds,
                compile_=0.0,
                capture=0.0,
                download=KubeletSettings.download_seconds,
            )
            if cluster.kubelet is not None:
                cluster.kubelet.compile_caches.clear()

        self.call(simulated_parts)
        baseline = self.baseline
        namespaces = {n for _, n in _names(self.list(NAMESPACES)) - baseline[NAMESPACES]}
        for key in DEFAULT_KINDS:
            for _, name in _names(self.list(key, "default")) - baseline[key]:
                self._delete(key, "default", name)
        self._empty(namespaces - SYSTEM_NAMESPACES)
        for key in CLUSTER_KINDS:
            for _, name in _names(self.list(key)) - baseline[key]:
                self._delete(key, None, name)
        if baseline[CRDS] - _names(self.list(CRDS)):  # a test deleted one the cluster had
            self.run(lambda cluster: cluster.install_crds())

    def _delete(self, key: ResourceKey, namespace: str | None, name: str) -> None:
        with contextlib.suppress(ApiError):
            if key == NEMOTRON_DEPLOYMENTS:  # the operator that would remove it is gone
                self.request("PATCH", key.path(namespace, name), {"metadata": {"finalizers": None}})
            self.request("DELETE", key.path(namespace, name))

    def _empty(self, names: set[str]) -> None:
        """Delete everything in these namespaces, pods at once (grace 0), as the namespace
        controller would but now, until no pod, claim or NemotronDeployment is left (bounded):
        a controller may still create a pod or claim while its owner is being deleted, so each
        pass deletes again what is there."""
        if not names:
            return
        kinds = self._namespaced_kinds()
        ordered = sorted(kinds, key=lambda k: (k not in FIRST_DELETED, k == PODS))

        def delete_all() -> None:
            for name in sorted(names):
                for deployment in self.list(NEMOTRON_DEPLOYMENTS, name):
                    if deployment["metadata"].get("finalizers"):
                        self._delete(NEMOTRON_DEPLOYMENTS, name, deployment["metadata"]["name"])
                for key in ordered:
                    params = {"propagationPolicy": "Background"}
                    if key == PODS:
                        params["gracePeriodSeconds"] = "0"
                    if key.plural in KEPT_IN_NAMESPACES:
                        kept = KEPT_IN_NAMESPACES[key.plural]
                        params["fieldSelector"] = f"metadata.name!={kept}"
                    with contextlib.suppress(ApiError):
                        self.request("DELETE", key.path(name), params=params)

        def left() -> list[str]:
            return [
                f"{key.plural} {name}/{obj['metadata']['name']}"
                f" (finalizers {obj['metadata'].get('finalizers')})"
                for name in names
                for key in (PODS, CLAIMS, NEMOTRON_DEPLOYMENTS)
                for obj in self.list(key, name)
            ]

        def emptied() -> bool:
            if not left():
                return True
            delete_all()
            return False

        delete_all()
        try:
            self.wait_until(emptied, seconds=60, every=0.5, what=f"{sorted(names)} to empty")
        except AssertionError as error:
            raise AssertionError(f"{error}; left: {left()}") from None

    def _namespaced_kinds(self) -> list[ResourceKey]:
        """Every namespaced resource kube-apiserver serves that can be deleted as a collection
        (the preferred version of each group), from discovery."""
        found: list[ResourceKey] = []
        groups = [("", "v1")] + [
            (g["name"], g["preferredVersion"]["version"])
            for g in self.request("GET", "/apis")["groups"]
        ]
        for group, version in groups:
            path = f"/apis/{group}/{version}" if group else "/api/v1"
            try:
                served = self.request("GET", path)["resources"]
            except ApiError as error:
                # 404: a CRD a test just deleted, listed in /apis a moment longer. 503: an
                # aggregated API whose server is not answering (KEDA's metrics adapter on a
                # loaded machine); it stores nothing here to delete, and kube-controller-manager's
                # namespace controller likewise deletes what it could discover.
                if error.status not in (404, 503):
                    raise
                continue
            found.extend(
                ResourceKey(group, version, resource["name"])
                for resource in served
                if resource.get("namespaced")
                and "/" not in resource["name"]
                and "deletecollection" in resource.get("verbs", [])
            )
        return found


class ClusterPool:
    """The session's running clusters, one per set of options. A test leases one; when more
    than ``MAX_RUNNING`` would run, the least recently used one that no test holds is stopped."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._running: OrderedDict[str, Background[KubeCluster]] = OrderedDict()
        self._leases: dict[str, int] = {}
        self._baselines: dict[str, dict[ResourceKey, set[tuple[str, str]]]] = {}
        self._count = 0

    @contextlib.contextmanager
    def lease(
        self, options: dict[str, Any], workdir: Path, *, through_proxy: bool = True
    ) -> Iterator[KubeHandle]:
        """A handle on the cluster with these options (started if needed), whose reset puts
        the cluster back to what it held when it started."""
        key = json.dumps(options, sort_keys=True, default=str)
        background = self._get(key, options)
        self._leases[key] = self._leases.get(key, 0) + 1
        try:
            handle = KubeHandle(
                background, workdir, through_proxy=through_proxy, baseline=self._baselines.get(key)
            )
            self._baselines.setdefault(key, handle.baseline)
            yield handle
        finally:
            self._leases[key] -= 1

    def _get(self, key: str, options: dict[str, Any]) -> Background[KubeCluster]:
        if key in self._running:
            self._running.move_to_end(key)
            return self._running[key]
        idle = [k for k in self._running if not self._leases.get(k)]
        while len(self._running) >= MAX_RUNNING and idle:
            stopped = idle.pop(0)
            self._running.pop(stopped).__exit__(None, None, None)
            self._baselines.pop(stopped, None)
        self._count += 1
        workdir = self.root / f"cluster-{self._count}"
        settings = {k: v for k, v in options.items() if k != "purpose"}
        background = Background(lambda: KubeCluster(workdir=workdir, **settings))
        background.__enter__()
        self._running[key] = background
        return background

    def stop(self) -> None:
        while self._running:
            _, background = self._running.popitem()
            background.__exit__(None, None, None)


@contextlib.contextmanager
def start_cluster(workdir: Path, **options: Any) -> Iterator[KubeHandle]:
    """A cluster of the test's own (``options`` as ``KubeCluster`` takes them), stopped after."""
    settings = {**SHARED_OPTIONS, **options}
    with Background(lambda: KubeCluster(workdir=workdir / "cluster", **settings)) as background:
        yield KubeHandle(background, workdir)
