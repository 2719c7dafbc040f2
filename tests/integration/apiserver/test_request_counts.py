"""``/_sim/request-counts``: requests by client, verb and resource, not wrapping, resettable."""

from __future__ import annotations

import aiohttp

from nemotron_sim.apiserver import SimApiServer
from tests.integration.apiserver.test_semantics import CM, MERGE, call, configmap

APPLY_TYPE = "application/apply-patch+yaml"


async def counts(http: aiohttp.ClientSession) -> dict[tuple[str, str, str], int]:
    async with http.get("/_sim/request-counts") as response:
        body = await response.json()
    return {(r["agent"], r["verb"], r["resource"]): r["count"] for r in body["counts"]}


async def test_requests_are_counted_by_agent_verb_and_resource(
    server: SimApiServer, http: aiohttp.ClientSession
) -> None:
    bench = {"User-Agent": "bench-client/1.0"}
    await call(http, "POST", CM, configmap("a"), headers=bench)
    await call(http, "GET", f"{CM}/a", headers=bench)
    await call(http, "GET", CM)
    await call(http, "PATCH", f"{CM}/a", {"data": {"k": "v"}}, MERGE, headers=bench)
    applied = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}}
    await call(http, "PATCH", f"{CM}/b?fieldManager=bench", applied, APPLY_TYPE, headers=bench)
    await call(http, "DELETE", f"{CM}/a", headers=bench)
    async with http.get(f"{CM}?watch=1", headers=bench) as response:
        assert response.status == 200  # counted on arrival: no need to wait for its end
    await call(http, "GET", "/api/v1/namespaces/default", headers=bench)
    await call(http, "GET", f"{CM}/missing", headers=bench)  # a refusal is a request too
    await call(http, "GET", "/apis/apps/v1", headers=bench)
    await call(http, "GET", "/version", headers=bench)

    seen = await counts(http)
    for verb in ("create", "patch", "apply", "delete", "watch"):
        assert seen[("bench-client", verb, "configmaps")] == 1, verb
    assert seen[("bench-client", "get", "configmaps")] == 2
    assert seen[("bench-client", "get", "namespaces")] == 1
    assert seen[("bench-client", "get", "(discovery)")] == 1
    assert seen[("bench-client", "get", "(version)")] == 1
    assert sum(n for (agent, verb, _), n in seen.items() if verb == "list") == 1
    assert ("bench-client", "list", "configmaps") not in seen  # that list had another agent

    async with http.delete("/_sim/request-counts") as response:
        assert response.status == 200
    await call(http, "GET", f"{CM}/b", headers=bench)
    assert await counts(http) == {("bench-client", "get", "configmaps"): 1}
