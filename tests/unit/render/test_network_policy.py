"""spec.networkPolicy: the API port only from the namespaces named and the operator's, the
ranks of a multi-node replica only from that replica's pods, nothing when it is off."""

from __future__ import annotations

from typing import Any

from nemotron_operator.render import RenderOptions
from tests.unit.render.fakes import make_plan, of_kind, render

ON = {"networkPolicy": {"enabled": True, "apiFromNamespaces": ["clients", "ai"]}}


def selects(policy: dict[str, Any], pod: dict[str, Any]) -> bool:
    wanted = policy["spec"]["podSelector"]["matchLabels"]
    labels = pod["metadata"]["labels"]
    return all(labels.get(k) == v for k, v in wanted.items())


def pod_templates(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [sts["spec"]["template"] for sts in of_kind(objects, "StatefulSet")]


def test_off_by_default_renders_no_policy() -> None:
    assert of_kind(render(), "NetworkPolicy") == []


def test_the_api_port_from_the_named_namespaces_and_the_operators() -> None:
    objects = render(ON, options=RenderOptions(operator_namespace="nemotron-system"))
    (policy,) = of_kind(objects, "NetworkPolicy")
    assert policy["metadata"]["name"] == "super-vl-api"
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    (rule,) = policy["spec"]["ingress"]
    (peer,) = rule["from"]
    (expression,) = peer["namespaceSelector"]["matchExpressions"]
    assert expression == {
        "key": "kubernetes.io/metadata.name",
        "operator": "In",
        "values": ["ai", "clients", "nemotron-system"],
    }
    assert rule["ports"] == [{"protocol": "TCP", "port": 8000}]
    # It selects the serving pods (the single-node replicas' leaders), and only them.
    templates = pod_templates(objects)
    assert templates
    assert all(selects(policy, t) for t in templates)


def test_the_cli_renders_without_an_operator_namespace() -> None:
    (policy,) = of_kind(render(ON), "NetworkPolicy")
    values = policy["spec"]["ingress"][0]["from"][0]["namespaceSelector"]["matchExpressions"][0]
    assert values["values"] == ["ai", "clients"]


def test_each_multi_node_replica_is_fenced_to_its_own_ranks() -> None:
    plan = make_plan(
        gpus_per_replica=16, nodes_per_replica=2, tensor_parallel=8, pipeline_parallel=2,
        replicas=2, total_gpus=32, nodes=4,
    )  # fmt: skip
    objects = render({**ON, "replicas": 2}, plan=plan)
    policies = {p["metadata"]["name"]: p for p in of_kind(objects, "NetworkPolicy")}
    assert sorted(policies) == ["super-vl-api", "super-vl-ranks-0", "super-vl-ranks-1"]
    templates = pod_templates(objects)
    assert len(templates) == 4  # a leader and a worker StatefulSet per replica
    for replica in (0, 1):
        fence = policies[f"super-vl-ranks-{replica}"]
        (rule,) = fence["spec"]["ingress"]
        assert "ports" not in rule  # NCCL/Gloo/ZMQ ports are chosen at run time
        (peer,) = rule["from"]
        mine = [t for t in templates if selects(fence, t)]
        # It selects exactly this replica's leader and worker, and admits exactly them.
        assert [t["metadata"]["labels"]["serving.nemotron.io/role"] for t in mine] == [
            "leader",
            "worker",
        ]
        assert {t["metadata"]["labels"]["serving.nemotron.io/replica"] for t in mine} == {
            str(replica)
        }
        assert peer == {"podSelector": fence["spec"]["podSelector"]}
    # The API policy selects both replicas' leaders, never a worker.
    leaders = [t for t in templates if selects(policies["super-vl-api"], t)]
    assert [t["metadata"]["labels"]["serving.nemotron.io/role"] for t in leaders] == [
        "leader",
        "leader",
    ]
