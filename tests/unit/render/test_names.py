"""Names are deterministic, within Kubernetes' limits, and distinct for distinct deployments."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nemotron_operator.render import names as n
from nemotron_operator.render.names import Names, dns_label, label_value, with_suffix
from tests.unit.render.fakes import make_plan, render

DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
# metadata.name of a NemotronDeployment: any DNS subdomain up to 253 characters
SUBDOMAIN = st.from_regex(
    r"[a-z0-9]([-a-z0-9]{0,60}[a-z0-9])?(\.[a-z0-9]{1,20}){0,3}", fullmatch=True
)


def all_names(names: Names) -> list[tuple[str, int]]:
    return [
        (names.service, n.MAX_NAME),
        (names.headless_service, n.MAX_NAME),
        (names.statefulset, n.MAX_STATEFULSET_NAME),
        (names.leader_statefulset(63), n.MAX_STATEFULSET_NAME),
        (names.worker_statefulset(63), n.MAX_STATEFULSET_NAME),
        (names.pod_disruption_budget, n.MAX_NAME),
        (names.pod_monitor, n.MAX_NAME),
        (names.scaled_object, n.MAX_NAME),
        (names.shared_cache_claim, n.MAX_NAME),
        (names.node_pool, n.MAX_NAME),
    ]


@settings(max_examples=60)
@given(SUBDOMAIN, st.from_regex(r"[a-z][-a-z0-9]{0,61}[a-z0-9]", fullmatch=True))
def test_every_child_name_is_a_dns_label_within_its_limit(name: str, namespace: str) -> None:
    names = Names(name, namespace)
    for child, limit in all_names(names):
        assert len(child) <= limit, child
        assert DNS_1035.match(child), child
    assert len(names.instance) <= n.MAX_NAME
    assert LABEL_VALUE.match(names.instance)
    # pods of the longest StatefulSet name stay valid hostnames
    assert len(f"{names.worker_statefulset(63)}-63") <= n.MAX_NAME


@settings(max_examples=60)
@given(SUBDOMAIN, SUBDOMAIN)
def test_distinct_deployments_get_distinct_names(a: str, b: str) -> None:
    if a == b:
        return
    first, second = Names(a, "ns"), Names(b, "ns")
    assert first.base != second.base
    assert first.instance != second.instance


def test_short_names_are_kept_as_they_are() -> None:
    names = Names("super-vl", "ai")
    assert names.service == "super-vl"
    assert names.headless_service == "super-vl-headless"
    assert names.leader_statefulset(0) == "super-vl-0"
    assert names.worker_statefulset(1) == "super-vl-1-w"
    assert names.node_pool == "nd-ai-super-vl"
    assert names.pod_dns("super-vl-0", 0) == "super-vl-0-0.super-vl-headless.ai.svc"
    assert names.endpoint(8000) == "http://super-vl.ai.svc:8000/v1"


@pytest.mark.parametrize(
    ("text", "expected_prefix"),
    [
        ("a.b", "a-b-"),  # rewritten: hashed so that "a-b" stays distinct
        ("9lives", "nd-9lives-"),  # Service names must start with a letter
        ("x" * 80, "x" * 38 + "-"),
    ],
)
def test_rewritten_or_long_names_get_a_hash(text: str, expected_prefix: str) -> None:
    label = dns_label(text, 47)
    assert label.startswith(expected_prefix)
    assert len(label) <= 47
    assert dns_label(text, 47) == label  # deterministic
    assert dns_label("a-b", 47) == "a-b"


def test_suffix_survives_truncation() -> None:
    long = "y" * 60
    assert with_suffix(long, "headless").endswith("-headless")
    assert len(with_suffix(long, "headless")) == n.MAX_NAME
    assert label_value("z" * 70) != label_value("z" * 71)


def test_long_deployment_name_renders_valid_objects() -> None:
    long = "a-very-long-nemotron-deployment-name-" + "x" * 100
    plan = make_plan(nodes_per_replica=2, gpus_per_replica=16, tensor_parallel=8)
    objects = render(
        {"replicas": 2}, plan=plan.model_copy(update={"pipeline_parallel": 2}), name=long
    )
    for obj in objects:
        assert len(obj["metadata"]["name"]) <= n.MAX_NAME
        assert obj["metadata"]["labels"][n.INSTANCE] == label_value(long)


def test_leader_selector_string_selects_exactly_the_leaders() -> None:
    plan = make_plan(nodes_per_replica=2, gpus_per_replica=16, tensor_parallel=8)
    objects = render({"replicas": 2}, plan=plan.model_copy(update={"pipeline_parallel": 2}))
    wanted = dict(
        part.split("=", 1) for part in n.leader_selector_string(Names("super-vl", "ai")).split(",")
    )
    pods = [
        o["spec"]["template"]["metadata"]["labels"] for o in objects if o["kind"] == "StatefulSet"
    ]
    selected = [labels[n.ROLE] for labels in pods if wanted.items() <= labels.items()]
    assert selected == [n.ROLE_LEADER, n.ROLE_LEADER]
