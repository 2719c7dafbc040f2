"""The fault proxy in front of kube-apiserver: the ``/_sim/`` HTTP API the old API server had
(faults, the request journal, request counts), and the faults only a real control plane has
(a component stopped and restarted, a node's Lease that stops, a watch answered 410 Gone after
etcd compaction). Everything goes over HTTP, as a tool written against ``/_sim/`` would.

Times come from the source of truth, the proxy's request journal (when each request arrived, how
long its answer took, which fault fired on it), not from when the test noticed something; and
every test that injects a fault checks in the journal that the fault fired."""

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

from sim_cluster.controlplane.flags import Settings
from tests.kube import TEST_CONTROLLER_QPS, KubeHandle, start_cluster

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


@pytest.fixture(scope="module")
def faulty(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeHandle]:
    """A cluster of this module's own (its components are stopped and restarted): one GPU node
    and a node without GPUs, a short node-monitor grace period, and ConfigMaps served from etcd
    rather than kube-apiserver's watch cache, so a watch meets an etcd compaction at once."""
    settings = Settings(
        node_monitor_grace_seconds=8, node_monitor_period_seconds=1,
        uncached_resources=("configmaps",), controller_qps=TEST_CONTROLLER_QPS,
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


def journal(handle: KubeHandle, path: str) -> list[dict[str, Any]]:
    """The proxy's journal entries whose path contains ``path``, oldest first."""
    entries: list[dict[str, Any]] = call(handle, "GET", "/_sim/requests")[1]
    return [e for e in entries if path in e["path"]]


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
    # The proxy's own record: the fault fired on the first two requests, not on the third.
    seen = [(e["status"], e["fault"]) for e in journal(faulty, "/configmaps/flaky")]
    assert seen == [(429, added["id"]), (429, added["id"]), (404, None)]


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
    slow_id = call(faulty, "POST", "/_sim/faults", slow)[1]["id"]
    assert call(faulty, "GET", f"{CONFIGMAPS}/slow")[0] == 404
    (delayed,) = journal(faulty, "/configmaps/slow")
    assert delayed["fault"] == slow_id
    assert delayed["status"] == 404  # delayed, then answered by kube-apiserver
    assert delayed["seconds"] >= 1.0  # the proxy's own clock, arrival to answer
    cut = {"method": "GET", "path": "/configmaps/cut", "reset": True}
    cut_id = call(faulty, "POST", "/_sim/faults", cut)[1]["id"]
    with pytest.raises((urllib.error.URLError, http.client.HTTPException, ConnectionError)):
        call(faulty, "GET", f"{CONFIGMAPS}/cut")
    (reset,) = journal(faulty, "/configmaps/cut")
    assert (reset["fault"], reset["status"], reset["cut"]) == (cut_id, 0, "reset")
    # An "API unavailable" window: every matching request fails until it ends, then none does.
    window = {"path": "/configmaps/", "status": 503, "count": None, "duration": 1.5}
    status, added, _ = call(faulty, "POST", "/_sim/faults", window)
    assert status == 201
    assert call(faulty, "GET", f"{CONFIGMAPS}/gone")[0] == 503
    faulty.wait_until(lambda: call(faulty, "GET", f"{CONFIGMAPS}/gone")[0] == 404, seconds=10,
                      what="the outage window to end")  # fmt: skip
    # When the window opened and closed, by the proxy's clock: every request that arrived within
    # 1.5 s of the fault being added failed, the first one after it passed.
    gone = journal(faulty, "/configmaps/gone")
    failed = [e for e in gone if e["status"] == 503]
    passed = [e for e in gone if e["status"] == 404]
    assert failed
    assert all(e["fault"] == added["id"] for e in failed)
    assert all(e["at"] - added["added_at"] < 1.5 for e in failed)
    assert passed[0]["fault"] is None
    assert passed[0]["at"] - added["added_at"] >= 1.5


def open_watch(handle: KubeHandle, path: str) -> http.client.HTTPResponse:
    where = urlsplit(handle.url)
    connection = http.client.HTTPConnection(where.hostname or "", where.port, timeout=30)
    connection.request("GET", path, headers=handle.auth_headers)
    return connection.getresponse()


def test_a_watch_is_cut_or_stalled_on_request(faulty: KubeHandle) -> None:
    drop = call(faulty, "POST", "/_sim/faults", {"method": "WATCH", "path": "/configmaps",
                                                  "watch_drop_after": 1.0})[1]  # fmt: skip
    response = open_watch(faulty, f"{CONFIGMAPS}?watch=true&timeoutSeconds=20&drop=1")
    assert response.status == 200
    response.read()  # ends when the proxy cuts the stream, long before kube-apiserver would
    # The proxy says it cut the stream, and when: 1 s in, not at kube-apiserver's 20 s timeout.
    (dropped,) = journal(faulty, "&drop=1")
    assert (dropped["fault"], dropped["cut"]) == (drop["id"], "watch-dropped")
    assert 1.0 <= dropped["seconds"] < 10
    # A stalled watch delivers what happened during the stall only when the stall ends.
    stall = call(faulty, "POST", "/_sim/faults", {"method": "WATCH", "path": "/configmaps",
                                                   "watch_stall": 2.0})[1]  # fmt: skip
    response = open_watch(faulty, f"{CONFIGMAPS}?watch=true&timeoutSeconds=20&stall=1")
    call(faulty, "POST", CONFIGMAPS, {"metadata": {"name": "stalled"}, "data": {"a": "1"}})
    line = b""
    while b"stalled" not in line:
        line = response.readline()
        assert line, "the watch ended without the event"
    response.close()
    (stalled,) = journal(faulty, "&stall=1")
    assert stalled["fault"] == stall["id"]
    assert stalled["cut"] is None
    assert stalled["stalled"] >= 2.0  # held back until the stall ended, by the proxy's clock
    created = journal(faulty, f"{CONFIGMAPS}")
    creation = next(e for e in created if e["method"] == "POST" and e["status"] == 201)
    assert creation["at"] - stalled["at"] < 2.0  # the event happened during the stall
    call(faulty, "DELETE", f"{CONFIGMAPS}/stalled")


def test_the_journal_and_the_counts_by_client_verb_and_resource(faulty: KubeHandle) -> None:
    assert call(faulty, "DELETE", "/_sim/request-counts")[0] == 200
    call(faulty, "GET", f"{CONFIGMAPS}/counted")
    call(faulty, "GET", CONFIGMAPS)
    entries = call(faulty, "GET", "/_sim/requests")[1]
    counted = [e for e in entries if e["path"] == f"{CONFIGMAPS}/counted"]
    assert [(e["method"], e["status"], e["fault"]) for e in counted] == [("GET", 404, None)]
    assert counted[0]["seconds"] >= 0
    assert counted[0]["at"] <= time.time()
    counts = call(faulty, "GET", "/_sim/request-counts")[1]
    rows = {(r["agent"], r["verb"], r["resource"]): r["count"] for r in counts["counts"]}
    assert rows[("Python-urllib", "get", "configmaps")] == 1
    assert rows[("Python-urllib", "list", "configmaps")] == 1
    assert counts["since"] <= counts["now"] <= time.time()
    assert call(faulty, "DELETE", "/_sim/request-counts")[1]["counts"] == []


def test_kube_apiserver_and_etcd_stop_and_come_back(faulty: KubeHandle) -> None:
    assert call(faulty, "POST", "/_sim/control-plane/kube-apiserver/stop")[0] == 200
    status, body, _ = call(faulty, "GET", f"{CONFIGMAPS}?while=stopped")
    assert status == 503
    assert "unreachable" in body["message"]
    # The proxy answered for an unreachable kube-apiserver: the stop took effect.
    (away,) = journal(faulty, "?while=stopped")
    assert (away["status"], away["fault"]) == (503, None)
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
        # The stop fired, by the server's own record: the Lease's renewTime (the node agent
        # renews it every second, directly, not through the proxy) no longer moves, and it still
        # has not moved when kube-controller-manager, after its 8 s grace, marks the node Unknown.
        frozen = faulty.wait_until(lambda: stable_renewal(faulty, node), seconds=10,
                                   what="the renewals to stop")  # fmt: skip
        faulty.wait_until(lambda: ready(faulty, node) == "Unknown", seconds=60,
                          what="kube-controller-manager to mark the node Unknown")  # fmt: skip
        assert renewed(faulty, node) == frozen
    finally:
        call(faulty, "POST", f"/_sim/nodes/{node}/heartbeat/resume")
    faulty.wait_until(lambda: ready(faulty, node) == "True", seconds=60, what="Ready again")
    # Ready is re-posted at once on resume; the Lease is renewed at the next beat.
    faulty.wait_until(lambda: renewed(faulty, node) != frozen, seconds=10, what="a renewal")


def stable_renewal(handle: KubeHandle, node: str) -> str | None:
    """The Lease's renewTime when it stays the same over two beats, else None."""
    first = renewed(handle, node)
    time.sleep(2.2)
    return first if renewed(handle, node) == first else None


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
