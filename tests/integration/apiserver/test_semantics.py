"""Request-level behaviour of the simulated API server that kopf and the operator rely on."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp

from nemotron_sim.apiserver import ResourceKey, SimApiServer

CM = "/api/v1/namespaces/default/configmaps"
STS = "/apis/apps/v1/namespaces/default/statefulsets"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"


async def call(
    http: aiohttp.ClientSession,
    method: str,
    path: str,
    body: Any = None,
    content_type: str = "application/json",
    *,
    headers: dict[str, str] | None = None,
) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body)
    async with http.request(
        method, path, data=data, headers={"Content-Type": content_type, **(headers or {})}
    ) as resp:
        return resp.status, await resp.json(content_type=None)


def configmap(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}, "data": {"k": "v"}}


def statefulset(name: str, replicas: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}}},
    }


async def test_discovery_is_what_kubectl_and_kopf_expect(http: aiohttp.ClientSession) -> None:
    _, version = await call(http, "GET", "/version")
    assert version["gitVersion"].endswith("-nemotron-sim")
    _, core = await call(http, "GET", "/api/v1")
    assert core["groupVersion"] == "v1"
    subresources = [r for r in core["resources"] if "/" in r["name"]]
    assert subresources
    assert all("shortNames" not in r for r in subresources)
    _, groups = await call(http, "GET", "/apis")
    served = {g["name"] for g in groups["groups"]}
    assert {
        "apps",
        "policy",
        "apiextensions.k8s.io",
        "coordination.k8s.io",
        "events.k8s.io",
        "monitoring.coreos.com",
        "karpenter.sh",
    } <= served
    status, _ = await call(http, "GET", "/api/v1/namespaces")
    assert status == 200


async def test_create_assigns_server_fields_and_lists_carry_kind(
    http: aiohttp.ClientSession,
) -> None:
    status, first = await call(http, "POST", CM, configmap("a"))
    assert status == 201
    md = first["metadata"]
    assert md["uid"]
    assert md["generation"] == 1
    assert md["creationTimestamp"].endswith("Z")
    _, second = await call(http, "POST", CM, configmap("b"))
    assert int(second["metadata"]["resourceVersion"]) > int(md["resourceVersion"])
    status, _ = await call(http, "POST", CM, configmap("a"))
    assert status == 409
    _, listed = await call(http, "GET", CM)
    assert listed["kind"] == "ConfigMapList"
    assert listed["apiVersion"] == "v1"
    assert int(listed["metadata"]["resourceVersion"]) >= int(second["metadata"]["resourceVersion"])


async def test_stale_resource_version_is_a_409_conflict(http: aiohttp.ClientSession) -> None:
    _, created = await call(http, "POST", CM, configmap("a"))
    stale = created["metadata"]["resourceVersion"]
    status, _ = await call(http, "PATCH", f"{CM}/a", {"data": {"k": "2"}}, MERGE)
    assert status == 200
    status, body = await call(http, "PUT", f"{CM}/a", created)
    assert status == 409
    assert body["reason"] == "Conflict"
    patch = {"metadata": {"resourceVersion": stale}, "data": {"k": "3"}}
    status, _ = await call(http, "PATCH", f"{CM}/a", patch, MERGE)
    assert status == 409


async def test_failed_json_patch_test_is_422_and_changes_nothing(
    http: aiohttp.ClientSession,
) -> None:
    _, created = await call(http, "POST", CM, configmap("a"))
    rv = created["metadata"]["resourceVersion"]
    ops = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": "1"},
        {"op": "replace", "path": "/data/k", "value": "changed"},
    ]
    status, body = await call(http, "PATCH", f"{CM}/a", ops, JSON_PATCH)
    assert status == 422
    assert body["reason"] == "Invalid"
    _, now = await call(http, "GET", f"{CM}/a")
    assert now["data"] == {"k": "v"}
    assert now["metadata"]["resourceVersion"] == rv
    ops[0]["value"] = rv
    status, patched = await call(http, "PATCH", f"{CM}/a", ops, JSON_PATCH)
    assert status == 200
    assert patched["data"] == {"k": "changed"}


async def test_generation_and_status_subresource_rules(http: aiohttp.ClientSession) -> None:
    await call(http, "POST", STS, statefulset("s"))
    _, labelled = await call(http, "PATCH", f"{STS}/s", {"metadata": {"labels": {"a": "b"}}}, MERGE)
    assert labelled["metadata"]["generation"] == 1  # metadata is not spec
    _, main = await call(http, "PATCH", f"{STS}/s", {"status": {"replicas": 9}}, MERGE)
    assert "status" not in main  # status through the main resource is ignored
    both = {"spec": {"replicas": 5}, "status": {"replicas": 2}}
    _, status_write = await call(http, "PATCH", f"{STS}/s/status", both, MERGE)
    assert status_write["status"] == {"replicas": 2}
    assert status_write["spec"]["replicas"] == 1  # spec through /status is ignored
    assert status_write["metadata"]["generation"] == 1
    _, spec_write = await call(http, "PATCH", f"{STS}/s", {"spec": {"replicas": 3}}, MERGE)
    assert spec_write["metadata"]["generation"] == 2
    rv = spec_write["metadata"]["resourceVersion"]
    _, again = await call(http, "PATCH", f"{STS}/s", {"spec": {"replicas": 3}}, MERGE)
    assert again["metadata"]["resourceVersion"] == rv  # a no-op write changes nothing

    _, scale = await call(http, "GET", f"{STS}/s/scale")
    assert scale["kind"] == "Scale"
    assert scale["spec"]["replicas"] == 3
    assert scale["status"]["selector"] == "app=s"
    _, scaled = await call(http, "PATCH", f"{STS}/s/scale", {"spec": {"replicas": 4}}, MERGE)
    assert scaled["spec"]["replicas"] == 4


async def test_dry_run_validates_but_does_not_persist(
    server: SimApiServer, http: aiohttp.ClientSession
) -> None:
    rv = server.store.resource_version
    status, _ = await call(http, "POST", f"{CM}?dryRun=All", configmap("a"))
    assert status == 201
    assert (await call(http, "GET", f"{CM}/a"))[0] == 404
    await call(http, "POST", CM, configmap("b"))
    rv = server.store.resource_version
    status, patched = await call(http, "PATCH", f"{CM}/b?dryRun=All", {"data": {"k": "x"}}, MERGE)
    assert (status, patched["data"]) == (200, {"k": "x"})
    status, _ = await call(http, "DELETE", f"{CM}/b?dryRun=All")
    assert status == 200
    _, stored = await call(http, "GET", f"{CM}/b")
    assert stored["data"] == {"k": "v"}
    assert server.store.resource_version == rv


async def test_finalizers_hold_deletion_and_owner_references_cascade(
    server: SimApiServer, http: aiohttp.ClientSession
) -> None:
    _, owner = await call(http, "POST", STS, statefulset("owner"))
    ref = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "name": "owner",
        "uid": owner["metadata"]["uid"],
        "controller": True,
    }
    for name in ("dep-1", "dep-2"):
        body = configmap(name)
        body["metadata"]["ownerReferences"] = [ref]
        await call(http, "POST", CM, body)
    held = configmap("held")
    held["metadata"]["finalizers"] = ["example.com/hold"]
    await call(http, "POST", CM, held)

    status, marked = await call(http, "DELETE", f"{CM}/held")
    assert status == 200
    assert marked["metadata"]["deletionTimestamp"]
    status, _ = await call(
        http, "PATCH", f"{CM}/held", {"metadata": {"finalizers": ["a", "example.com/hold"]}}, MERGE
    )
    assert status == 422  # no new finalizers while deleting
    await call(http, "PATCH", f"{CM}/held", {"metadata": {"finalizers": None}}, MERGE)
    assert (await call(http, "GET", f"{CM}/held"))[0] == 404

    await call(http, "DELETE", f"{STS}/owner")  # background propagation by default
    _, left = await call(http, "GET", CM)
    assert [o["metadata"]["name"] for o in left["items"]] == []


async def test_foreground_and_orphan_propagation(
    server: SimApiServer, http: aiohttp.ClientSession
) -> None:
    async def owner_with_dependent(name: str, *finalizers: str) -> None:
        _, owner = await call(http, "POST", STS, statefulset(name))
        body = configmap(f"{name}-dep")
        body["metadata"]["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": name,
             "uid": owner["metadata"]["uid"], "blockOwnerDeletion": True},
        ]  # fmt: skip
        body["metadata"]["finalizers"] = list(finalizers)
        await call(http, "POST", CM, body)

    await owner_with_dependent("fg", "example.com/hold")
    await call(http, "DELETE", f"{STS}/fg", {"propagationPolicy": "Foreground"})
    _, owner = await call(http, "GET", f"{STS}/fg")
    assert owner["metadata"]["finalizers"] == ["foregroundDeletion"]  # waits for its dependent
    await call(http, "PATCH", f"{CM}/fg-dep", {"metadata": {"finalizers": []}}, MERGE)
    assert (await call(http, "GET", f"{STS}/fg"))[0] == 404

    await owner_with_dependent("orphaner")
    await call(http, "DELETE", f"{STS}/orphaner", {"propagationPolicy": "Orphan"})
    status, orphan = await call(http, "GET", f"{CM}/orphaner-dep")
    assert status == 200
    assert "ownerReferences" not in orphan["metadata"]


async def test_selectors_tables_pagination_and_protobuf(http: aiohttp.ClientSession) -> None:
    await call(http, "POST", CM, configmap("a", tier="big"))
    await call(http, "POST", CM, configmap("b", tier="small"))
    await call(http, "POST", CM, configmap("c"))

    async def names(query: str) -> list[str]:
        _, listed = await call(http, "GET", f"{CM}?{query}")
        return [o["metadata"]["name"] for o in listed["items"]]

    assert await names("labelSelector=tier%3D%3Dbig") == ["a"]
    assert await names("labelSelector=tier%20notin%20(big)") == ["b", "c"]
    assert await names("labelSelector=!tier") == ["c"]
    assert await names("fieldSelector=metadata.name%21%3Db") == ["a", "c"]
    assert await names("fieldSelector=metadata.namespace%3Ddefault&labelSelector=tier") == [
        "a",
        "b",
    ]
    _, page = await call(http, "GET", f"{CM}?limit=2")
    assert len(page["items"]) == 2
    assert page["metadata"]["remainingItemCount"] == 1
    _, rest = await call(http, "GET", f"{CM}?limit=2&continue={page['metadata']['continue']}")
    assert [o["metadata"]["name"] for o in rest["items"]] == ["c"]

    table_accept = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"}
    _, table = await call(http, "GET", CM, headers=table_accept)
    assert table["kind"] == "Table"
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Data", "Age"]
    assert table["rows"][0]["cells"][:2] == ["a", 1]

    status, refused = await call(
        http, "POST", CM, {"x": 1}, content_type="application/vnd.kubernetes.protobuf"
    )
    assert status == 415
    assert refused["reason"] == "UnsupportedMediaType"


async def test_namespaces_gate_and_cascade(http: aiohttp.ClientSession) -> None:
    status, _ = await call(http, "POST", "/api/v1/namespaces/nowhere/configmaps", configmap("a"))
    assert status == 404
    await call(http, "POST", "/api/v1/namespaces", {"metadata": {"name": "ai"}})
    await call(http, "POST", "/api/v1/namespaces/ai/configmaps", configmap("a"))
    status, _ = await call(http, "DELETE", "/api/v1/namespaces/ai")
    assert status == 200
    assert (await call(http, "GET", "/api/v1/namespaces/ai/configmaps/a"))[0] == 404
    assert (await call(http, "GET", "/api/v1/namespaces/ai"))[0] == 404


async def test_server_side_apply_creates_merges_and_reports_conflicts(
    http: aiohttp.ClientSession,
) -> None:
    apply = "application/apply-patch+yaml"
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"x": "1"}}
    status, created = await call(http, "PATCH", f"{CM}/a?fieldManager=one", body, apply)
    assert status == 200
    assert created["metadata"]["managedFields"][0]["manager"] == "one"
    other = {**body, "data": {"x": "2", "y": "1"}}
    status, conflict = await call(http, "PATCH", f"{CM}/a?fieldManager=two", other, apply)
    assert status == 409
    assert 'conflict with "one"' in conflict["message"]
    status, forced = await call(http, "PATCH", f"{CM}/a?fieldManager=two&force=true", other, apply)
    assert forced["data"] == {"x": "2", "y": "1"}
    await asyncio.sleep(1.1)  # managedFields times have second precision
    _, again = await call(http, "PATCH", f"{CM}/a?fieldManager=two", other, apply)
    assert again["metadata"]["resourceVersion"] == forced["metadata"]["resourceVersion"]
    status, _ = await call(http, "PATCH", f"{CM}/a", body, apply)
    assert status == 400  # a field manager is required


async def test_in_process_writes_are_seen_by_http_clients(
    server: SimApiServer, http: aiohttp.ClientSession
) -> None:
    key = ResourceKey("", "v1", "configmaps")
    server.store.create(key, {"metadata": {"name": "inproc", "namespace": "default"}})
    _, got = await call(http, "GET", f"{CM}/inproc")
    assert got["metadata"]["uid"]
    server.store.merge_patch(key, "default", "inproc", {"data": {"a": "b"}})
    _, got = await call(http, "GET", f"{CM}/inproc")
    assert got["data"] == {"a": "b"}


async def test_dependents_of_owners_that_do_not_exist_are_collected(
    http: aiohttp.ClientSession,
) -> None:
    _, owner = await call(http, "POST", STS, statefulset("owner"))
    real = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "owner"}
    cases = {
        "wrong-uid": {**real, "uid": "00000000-0000-0000-0000-000000000000"},
        "right-uid": {**real, "uid": owner["metadata"]["uid"]},
    }
    for name, ref in cases.items():
        body = configmap(name)
        body["metadata"]["ownerReferences"] = [ref]
        assert (await call(http, "POST", CM, body))[0] == 201
    await call(http, "POST", "/api/v1/namespaces", {"metadata": {"name": "elsewhere"}})
    across = configmap("across")
    across["metadata"]["ownerReferences"] = [cases["right-uid"]]
    await call(http, "POST", "/api/v1/namespaces/elsewhere/configmaps", across)
    cluster_scoped = {"metadata": {"name": "pv", "ownerReferences": [cases["wrong-uid"]]}}
    await call(http, "POST", "/api/v1/persistentvolumes", cluster_scoped)
    await asyncio.sleep(0.05)  # the collector runs just after the write, like kube's GC

    assert (await call(http, "GET", f"{CM}/wrong-uid"))[0] == 404
    assert (await call(http, "GET", f"{CM}/right-uid"))[0] == 200
    assert (await call(http, "GET", "/api/v1/namespaces/elsewhere/configmaps/across"))[0] == 404
    # A cluster-scoped object cannot name a namespaced owner: unresolvable, never collected.
    assert (await call(http, "GET", "/api/v1/persistentvolumes/pv"))[0] == 200
