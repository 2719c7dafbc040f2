"""spec.multiNode: a replica across nodes as one LeaderWorkerSet or as leader/worker
StatefulSets — which one, what the LeaderWorkerSet carries, and what only it can do."""

from __future__ import annotations

from typing import Any

import pytest

from nemotron_operator.catalog.vllm_flags import parse_serve_command
from nemotron_operator.render import RenderError, RenderOptions
from tests.unit.render.fakes import flag_value, make_plan, of_kind, render
from tests.unit.render.schemas import validate_object

TWO_NODES = make_plan(
    nodes_per_replica=2, gpus_per_replica=16, tensor_parallel=8, pipeline_parallel=2
)
SERVED = RenderOptions(leader_worker_set_served=True)
LWS_SPEC: dict[str, Any] = {"multiNode": {"backend": "LeaderWorkerSet"}}


def kinds(objects: list[dict[str, Any]]) -> list[str]:
    return [o["kind"] for o in objects if o["kind"] in ("StatefulSet", "LeaderWorkerSet")]


@pytest.mark.parametrize(
    ("spec", "options", "expected"),
    [
        ({}, SERVED, ["LeaderWorkerSet"]),  # unset: LWS where its CRD is served
        ({}, None, ["StatefulSet"] * 2),  # unset, no LWS: leader and worker StatefulSets
        ({"multiNode": {"backend": "StatefulSet"}}, SERVED, ["StatefulSet"] * 2),
        (LWS_SPEC, None, ["LeaderWorkerSet"]),  # named: rendered (the controller reports)
    ],
)
def test_the_backend_is_the_specs_else_lws_where_served(
    spec: dict[str, Any], options: RenderOptions | None, expected: list[str]
) -> None:
    assert kinds(render(spec, plan=TWO_NODES, options=options)) == expected


def test_a_replica_on_one_node_is_one_statefulset_whatever_the_backend() -> None:
    assert kinds(render(LWS_SPEC, options=SERVED)) == ["StatefulSet"]


def lws(spec: dict[str, Any] | None = None, **plan: Any) -> dict[str, Any]:
    chosen = TWO_NODES.model_copy(update=plan) if plan else TWO_NODES
    (found,) = of_kind(render({**LWS_SPEC, **(spec or {})}, plan=chosen), "LeaderWorkerSet")
    validate_object(found)
    return found


def test_a_group_per_replica_recreated_whole_started_together() -> None:
    found = lws({"replicas": 3}, nodes_per_replica=4, gpus_per_replica=32, pipeline_parallel=4)
    # Not the API Service's name: LWS names its headless Service after the LeaderWorkerSet.
    assert found["metadata"]["name"] == "super-vl-lws"
    assert found["spec"]["replicas"] == 3
    assert found["spec"]["startupPolicy"] == "LeaderCreated"
    group = found["spec"]["leaderWorkerTemplate"]
    assert group["size"] == 4
    assert group["restartPolicy"] == "RecreateGroupOnPodRestart"
    assert "rolloutStrategy" not in found["spec"]  # LWS's defaults without spec.rollout


def serve_argv(template: dict[str, Any], rank: str) -> list[str]:
    container = template["spec"]["containers"][0]
    env = {"LWS_WORKER_INDEX": rank, "LWS_LEADER_ADDRESS": "super-vl-lws-0.super-vl-lws.ai"}
    words = [*container["command"], *container["args"]]
    for name, value in env.items():  # what LWS's webhook injects; the kubelet expands
        words = [w.replace(f"$({name})", value) for w in words]
    return words


def test_the_leader_serves_and_the_workers_take_their_rank_from_lws() -> None:
    group = lws()["spec"]["leaderWorkerTemplate"]
    leader, worker = group["leaderTemplate"], group["workerTemplate"]
    assert leader["metadata"]["labels"]["serving.nemotron.io/role"] == "leader"
    assert worker["metadata"]["labels"]["serving.nemotron.io/role"] == "worker"
    for template, rank in ((leader, "0"), (worker, "1")):
        model, uses = parse_serve_command(serve_argv(template, rank))  # the pinned vLLM's parser
        assert model.startswith("/models/")
        values = {u.flag.name: u.value for u in uses}
        assert values["--node-rank"] == rank
        assert values["--nnodes"] == "2"
        assert values["--master-addr"] == "super-vl-lws-0.super-vl-lws.ai"
        assert ("--headless" in values) is (rank == "1")
    # Only the leader has the API port, probes and the readiness gate the operator sets.
    leader_vllm, worker_vllm = leader["spec"]["containers"][0], worker["spec"]["containers"][0]
    assert "readinessProbe" in leader_vllm
    assert "readinessProbe" not in worker_vllm
    assert "ports" in leader_vllm
    assert "ports" not in worker_vllm
    assert flag_value(worker_vllm["args"], "--node-rank") == "$(LWS_WORKER_INDEX)"
    # The rank comes from LWS: no NODE_RANK from a StatefulSet's pod index.
    assert "NODE_RANK" not in {e["name"] for e in worker_vllm["env"]}


def test_the_rollout_replaces_whole_groups_with_the_canary_as_partition() -> None:
    spec = {
        "replicas": 4,
        "rollout": {"maxUnavailable": 2, "maxSurge": 1, "canary": {"replicas": 1}},
    }
    strategy = lws(spec)["spec"]["rolloutStrategy"]
    assert strategy == {
        "type": "RollingUpdate",
        "rollingUpdateConfiguration": {"maxUnavailable": 2, "maxSurge": 1, "partition": 3},
    }


def test_exclusive_placement_is_lws_annotation() -> None:
    found = lws({"multiNode": {"backend": "LeaderWorkerSet", "exclusiveTopology": "rack"}})
    assert found["metadata"]["annotations"]["leaderworkerset.sigs.k8s.io/exclusive-topology"] == (
        "rack"
    )


@pytest.mark.parametrize(
    ("spec", "field", "message"),
    [
        (
            {"multiNode": {"backend": "StatefulSet", "exclusiveTopology": "rack"}},
            "spec.multiNode.exclusiveTopology",
            "exclusive placement needs the LeaderWorkerSet backend, but "
            "spec.multiNode.backend is StatefulSet: remove the field or use "
            "spec.multiNode.backend: LeaderWorkerSet",
        ),
        (
            {"rollout": {"maxSurge": 1}},
            "spec.rollout.maxSurge",
            "StatefulSets cannot surge, and the cluster serves no LeaderWorkerSet CRD (install "
            "LWS, sigs.k8s.io/lws): set it to 0 or use spec.multiNode.backend: LeaderWorkerSet",
        ),
    ],
)
def test_what_only_lws_can_do_is_refused_on_statefulsets(
    spec: dict[str, Any], field: str, message: str
) -> None:
    with pytest.raises(RenderError) as raised:
        render(spec, plan=TWO_NODES)
    assert [(e.path, e.message) for e in raised.value.errors] == [(field, message)]


def test_the_ranks_policy_selects_a_group_by_lws_labels() -> None:
    spec = {
        **LWS_SPEC,
        "replicas": 2,
        "networkPolicy": {"enabled": True, "apiFromNamespaces": ["clients"]},
    }
    policies = {
        p["metadata"]["name"]: p for p in of_kind(render(spec, plan=TWO_NODES), "NetworkPolicy")
    }
    selector = policies["super-vl-ranks-1"]["spec"]["podSelector"]["matchLabels"]
    assert selector["leaderworkerset.sigs.k8s.io/name"] == "super-vl-lws"
    assert selector["leaderworkerset.sigs.k8s.io/group-index"] == "1"
    assert "serving.nemotron.io/replica" not in selector  # a StatefulSet-layout label
