"""spec.networkPolicy's objects as kube-apiserver takes them (issue 25, item 12): the rendered
NetworkPolicies of the golden case are accepted by the API server's own validation and stored
as rendered; a broken one is refused (so the acceptance means something). Enforcement is a
CNI's: the simulated cluster has none, so nothing here checks traffic (docs/rendering.md)."""

from __future__ import annotations

import copy
import json
import time
from typing import Any

import yaml

from tests.golden.cases import EXPECTED
from tests.kube import KubeHandle


def rendered_policies(namespace: str) -> list[dict[str, Any]]:
    text = (EXPECTED / "network-policy-multi-node.yaml").read_text()
    policies = [d for d in yaml.safe_load_all(text) if d and d["kind"] == "NetworkPolicy"]
    for policy in policies:
        policy["metadata"]["namespace"] = namespace
    return policies


def test_the_rendered_network_policies_are_accepted_and_stored_as_rendered(
    kube_cluster: KubeHandle, kube_namespace: str
) -> None:
    policies = rendered_policies(kube_namespace)
    assert [p["metadata"]["name"] for p in policies] == [
        "super-vl-fenced-api",
        "super-vl-fenced-ranks-0",
        "super-vl-fenced-ranks-1",
    ]
    started = time.monotonic()
    for policy in policies:
        kube_cluster.kubectl(
            "apply", "--server-side", "--field-manager=nemotron-operator", "-f", "-",
            input=json.dumps(policy),
        )  # fmt: skip
    took = time.monotonic() - started
    print(f"\nFIGURE 3 NetworkPolicies applied and accepted in {took:.2f} s")
    for policy in policies:
        stored = kube_cluster.kubectl_json(
            "get", "networkpolicy", policy["metadata"]["name"], "-n", kube_namespace
        )
        assert stored["spec"] == policy["spec"]


def test_a_broken_network_policy_is_refused_naming_the_field(
    kube_cluster: KubeHandle, kube_namespace: str
) -> None:
    broken = copy.deepcopy(rendered_policies(kube_namespace)[0])
    broken["spec"]["ingress"][0]["ports"][0]["protocol"] = "ICMP"
    refused = kube_cluster.kubectl(
        "apply", "--server-side", "--dry-run=server", "-f", "-", input=json.dumps(broken),
        check=False,
    )  # fmt: skip
    assert refused.returncode != 0
    assert "spec.ingress[0].ports[0].protocol" in refused.stderr, refused.stderr
