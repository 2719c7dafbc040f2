"""The fault proxy in front of kube-apiserver: the ``/_sim/`` HTTP API the old API server had
(faults, the request journal, request counts), and the faults only a real control plane has
(a component stopped and restarted, a node's Lease that stops, a watch answered 410 Gone after
etcd compaction). Everything goes over HTTP, as a tool written against ``/_sim/`` would."""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from nemotron_sim.controlplane.flags import Settings
from tests.kube import KubeHandle, start_cluster

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


@pytest.fixture(scope="module")
def faulty(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeHandle]:
    """A cluster of this module's own (its components are stopped and restarted): one GPU node
    and a node without GPUs, a short node-monitor grace period, and ConfigMaps served from etcd
    rather than kube-apiserver's watch cache, so a watch meets an etcd compaction at once."""
    settings = Settings(
        node_monitor_grace_seconds=8, node_monitor_period_seconds=1,
        uncached_resources=("configmaps",),
    )  # fmt: skip
    with start_cluster(
        tmp_path_factory.mktemp("faults"), nodes="NVIDIA-H200:8x1", system_nodes=1,
        control_plane=settings, renew_seconds=1.0,
    ) as handle:  # fmt: skip
        yield handle


def call(
    handle: KubeHandle, method: str, path: str, body: Any = None, *, timeout: float = 30.0
) -> tuple[int, Any, dict[str, str]]:
    """One request to the proxy's plain HTTP address: (status, decoded body, headers)."""
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json", **handle.auth_headers}
    url = handle.url + path  # the proxy's plain HTTP address in the cluster's namespace
    request = urllib.request.Request(url, data=data, method=method, headers=headers)  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            raw, status, got = response.read(), response.status, dict(response.headers)
    except urllib.error.HTTPError as error:
        raw, status, got = error.read(), error.code, dict(error.headers)
    try:
        decoded = json.loads(raw) if raw else None
    except ValueError:
        decoded = raw.decode(errors="replace")
    return status, decoded, got


@pytest.fixture(autouse=True)
def no_faults_left(faulty: KubeHandle) -> Iterator[None]:
    yield
    call(faulty, "DELETE", "/_sim/faults")


def test_a_fault_answers_with_its_status_and_retry_after_then_runs_out(faulty: KubeHandle) -> None:
    status, added, _ = call(faulty, "POST", "/_sim/faults", {
        "method": "GET", "path": "/configmaps/flaky$", "status": 429, "retry_after": 3,
        "count": 2,
    })  # fmt: skip
    assert status == 201
    assert added["fired"] == 0
    assert added["count"] == 2
    assert added["retry_after"] == 3
    listed = call(faulty, "GET", "/_sim/faults")[1]
    assert [f["id"] for f in listed] == [added["id"]]
    for _ in range(2):
        status, body, headers = call(faulty, "GET", f"{CONFIGMAPS}/flaky")
        assert status == 429
        assert headers["Retry-After"] == "3"
        assert body["kind"] == "Status"
        assert body["reason"] == "TooManyRequests"
    # Used up: the request reaches kube-apiserver, which has no such ConfigMap.
    status, body, _ = call(faulty, "GET", f"{CONFIGMAPS}/flaky")
    assert status == 404
    assert body["message"] == 'configmaps "flaky" not found'
    assert call(faulty, "GET", "/_sim/faults")[1] == []


def test_faults_are_listed_removed_one_by_one_and_refused_when_unknown(
    faulty: KubeHandle,
) -> None:
    first = call(faulty, "POST", "/_sim/faults", {"method": "PATCH", "status": 500, "count": None})
    second = call(faulty, "POST", "/_sim/faults", {"path": "/leases/", "delay": 0.1})
    assert first[0] == second[0] == 201
    assert call(faulty, "DELETE", f"/_sim/faults/{first[1]['id']}")[0] == 200
    assert call(faulty, "DELETE", f"/_sim/faults/{first[1]['id']}")[0] == 404
    assert [f["id"] for f in call(faulty, "GET", "/_sim/faults")[1]] == [second[1]["id"]]
    status, body, _ = call(faulty, "POST", "/_sim/faults", {"method": "GET", "stauts": 500})
    assert status == 400
    assert "stauts" in body["message"]
    assert call(faulty, "DELETE", "/_sim/faults")[1] == {"removed": "all"}
    assert call(faulty, "GET", "/_sim/faults")[1] == []


def test_delay_reset_and_an_outage_window(faulty: KubeHandle) -> None:
    slow = {"method": "GET", "path": "/configmaps/slow", "delay": 1.0}
    call(faulty, "POST", "/_sim/faults", slow)
    started = time.monotonic()
    assert call(faulty, "GET", f"{CONFIGMAPS}/slow")[0] == 404
    assert time.monotonic() - started >= 1.0
    cut = {"method": "GET", "path": "/configmaps/cut", "reset": True}
    call(faulty, "POST", "/_sim/faults", cut)
    with pytest.raises((urllib.error.URLError, http.client.HTTPException, ConnectionError)):
        call(faulty, "GET", f"{CONFIGMAPS}/cut")
    # An "API unavailable" window: every matching request fails until it ends, then none does.
    window = {"path": "/configmaps/", "status": 503, "count": None, "duration": 1.5}
    assert call(faulty, "POST", "/_sim/faults", window)[0] == 201
    assert call(faulty, "GET", f"{CONFIGMAPS}/gone")[0] == 503
    time.sleep(1.6)
    assert call(faulty, "GET", f"{CONFIGMAPS}/gone")[0] == 404


def open_watch(handle: KubeHandle, path: str) -> http.client.HTTPResponse:
    where = urlsplit(handle.url)
    connection = http.client.HTTPConnection(where.hostname or "", where.port, timeout=30)
    connection.request("GET", path, headers=handle.auth_headers)
    return connection.getresponse()


def test_a_watch_is_cut_or_stalled_on_request(faulty: KubeHandle) -> None:
    call(faulty, "POST", "/_sim/faults", {"method": "WATCH", "path": "/configmaps",
                                           "watch_drop_after": 1.0})  # fmt: skip
    started = time.monotonic()
    response = open_watch(faulty, f"{CONFIGMAPS}?watch=true&timeoutSeconds=20")
    assert response.status == 200
    response.read()  # ends when the proxy cuts the stream, long before kube-apiserver would
    assert 0.9 <= time.monotonic() - started < 10
    # A stalled watch delivers what happened during the stall only when the stall ends.
    call(faulty, "POST", "/_sim/faults", {"method": "WATCH", "path": "/configmaps",
                                           "watch_stall": 2.0})  # fmt: skip
    started = time.monotonic()
    response = open_watch(faulty, f"{CONFIGMAPS}?watch=true&timeoutSeconds=20")
    call(faulty, "POST", CONFIGMAPS, {"metadata": {"name": "stalled"}, "data": {"a": "1"}})
    line = b""
    while b"stalled" not in line:
        line = response.readline()
        assert line, "the watch ended without the event"
    assert time.monotonic() - started >= 1.9
    response.close()
    call(faulty, "DELETE", f"{CONFIGMAPS}/stalled")


def test_the_journal_and_the_counts_by_client_verb_and_resource(faulty: KubeHandle) -> None:
    assert call(faulty, "DELETE", "/_sim/request-counts")[0] == 200
    call(faulty, "GET", f"{CONFIGMAPS}/counted")
    call(faulty, "GET", CONFIGMAPS)
    journal = call(faulty, "GET", "/_sim/requests")[1]
    assert {"method": "GET", "path": f"{CONFIGMAPS}/counted", "status": 404} in journal
    counts = call(faulty, "GET", "/_sim/request-counts")[1]
    rows = {(r["agent"], r["verb"], r["resource"]): r["count"] for r in counts["counts"]}
    assert rows[("Python-urllib", "get", "configmaps")] == 1
    assert rows[("Python-urllib", "list", "configmaps")] == 1
    assert counts["since"] <= counts["now"] <= time.time()
    assert call(faulty, "DELETE", "/_sim/request-counts")[1]["counts"] == []


def test_kube_apiserver_and_etcd_stop_and_come_back(faulty: KubeHandle) -> None:
    assert call(faulty, "POST", "/_sim/control-plane/kube-apiserver/stop")[0] == 200
    status, body, _ = call(faulty, "GET", CONFIGMAPS)
    assert status == 503
    assert "unreachable" in body["message"]
    assert call(faulty, "POST", "/_sim/control-plane/kube-apiserver/start", timeout=90)[0] == 200
    assert call(faulty, "GET", CONFIGMAPS)[0] == 200
    # etcd away: kube-apiserver is up but cannot answer from storage (a quorum read).
    call(faulty, "POST", "/_sim/control-plane/etcd/stop")
    status, _, _ = call(faulty, "GET", f"{CONFIGMAPS}?limit=1&timeout=3s", timeout=60)
    assert status >= 500
    assert call(faulty, "POST", "/_sim/control-plane/etcd/start", timeout=90)[0] == 200
    faulty.wait_until(lambda: call(faulty, "GET", f"{CONFIGMAPS}?limit=1")[0] == 200,
                      seconds=60, what="kube-apiserver to read from etcd again")  # fmt: skip
    status, body, _ = call(faulty, "POST", "/_sim/control-plane/kube-etcd/stop")
    assert status == 400
    assert "no component 'kube-etcd'" in body["message"]


def test_a_restarted_kube_controller_manager_goes_on_reconciling(faulty: KubeHandle) -> None:
    assert call(faulty, "POST", "/_sim/control-plane/kube-controller-manager/restart",
                timeout=90)[0] == 200  # fmt: skip
    manifest = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "after-restart", "namespace": "default"},
        "spec": {
            "replicas": 1, "selector": {"matchLabels": {"app": "after-restart"}},
            "template": {"metadata": {"labels": {"app": "after-restart"}},
                         "spec": {"containers": [{"name": "c", "image": "busybox"}]}},
        },
    }  # fmt: skip
    assert call(faulty, "POST", "/apis/apps/v1/namespaces/default/deployments", manifest)[0] == 201
    sets = "/apis/apps/v1/namespaces/default/replicasets?labelSelector=app%3Dafter-restart"
    faulty.wait_until(lambda: call(faulty, "GET", sets)[1]["items"], seconds=60,
                      what="the restarted controller manager's ReplicaSet")  # fmt: skip
    call(faulty, "DELETE", "/apis/apps/v1/namespaces/default/deployments/after-restart")


def renewed(handle: KubeHandle, node: str) -> str:
    leases = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
    lease = call(handle, "GET", f"{leases}/{node}")
    return str(lease[1]["spec"]["renewTime"])


def ready(handle: KubeHandle, node: str) -> str:
    conditions = call(handle, "GET", f"/api/v1/nodes/{node}")[1]["status"]["conditions"]
    return next(str(c["status"]) for c in conditions if c["type"] == "Ready")


def test_a_node_whose_lease_stops_is_marked_unknown_and_recovers(faulty: KubeHandle) -> None:
    node = "sim-h200-0"
    assert call(faulty, "POST", f"/_sim/nodes/{node}/heartbeat/stop")[1] == {
        "node": node, "heartbeat": "stop"}  # fmt: skip
    try:
        frozen = renewed(faulty, node)
        time.sleep(2.5)
        assert renewed(faulty, node) == frozen
        faulty.wait_until(lambda: ready(faulty, node) == "Unknown", seconds=60,
                          what="kube-controller-manager to mark the node Unknown")  # fmt: skip
    finally:
        call(faulty, "POST", f"/_sim/nodes/{node}/heartbeat/resume")
    faulty.wait_until(lambda: ready(faulty, node) == "True", seconds=60, what="Ready again")
    # Ready is re-posted at once on resume; the Lease is renewed at the next beat.
    faulty.wait_until(lambda: renewed(faulty, node) != frozen, seconds=10, what="a renewal")


def watch_events(handle: KubeHandle, path: str) -> list[dict[str, Any]]:
    response = open_watch(handle, path)
    assert response.status == 200, response.read()
    return [json.loads(line) for line in response.read().splitlines() if line.strip()]


def test_a_watch_from_before_an_etcd_compaction_is_answered_410_gone(
    faulty: KubeHandle, tmp_path: Path
) -> None:
    start = call(faulty, "GET", CONFIGMAPS)[1]["metadata"]["resourceVersion"]
    for index in range(3):
        body = {"metadata": {"name": f"compacted-{index}"}, "data": {"i": str(index)}}
        assert call(faulty, "POST", CONFIGMAPS, body)[0] == 201
    # Before compaction the history is there: the watch replays the three creations.
    replayed = watch_events(faulty, f"{CONFIGMAPS}?watch=true&resourceVersion={start}"
                                    "&timeoutSeconds=1")  # fmt: skip
    assert [e["type"] for e in replayed if "compacted" in json.dumps(e)] == ["ADDED"] * 3
    status, compacted, _ = call(faulty, "POST", "/_sim/compact")
    assert status == 200
    assert compacted["compactedRevision"] > int(start)

    def gone() -> list[dict[str, Any]]:
        events = watch_events(faulty, f"{CONFIGMAPS}?watch=true&resourceVersion={start}"
                                      "&timeoutSeconds=1")  # fmt: skip
        return [e for e in events if e["type"] == "ERROR" and e["object"]["code"] == 410]

    errors = faulty.wait_until(gone, seconds=30, what="a watch from before compaction refused")
    assert errors[0]["object"]["reason"] == "Expired"
    for index in range(3):
        call(faulty, "DELETE", f"{CONFIGMAPS}/compacted-{index}")
