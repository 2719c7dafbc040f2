"""spec.gateway: the InferencePool selects exactly the serving leaders, the endpoint picker's
configuration follows the plan (the same plan vLLM's flags come from), and nothing of it is
rendered unless asked for. The real planner decides the block size here."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from nemotron_operator.cli import checks
from nemotron_operator.render import names as n
from nemotron_operator.render.gateway import GATEWAY_OBJECT_KINDS, picker_selector
from tests.unit.render.fakes import flag_value, of_kind
from tests.unit.render.gateway_cases import SPEC, merged, one, render


def picker_config(objects: list[dict[str, Any]]) -> dict[str, Any]:
    text = one(objects, "ConfigMap")["data"]["epp-config.yaml"]
    config: dict[str, Any] = yaml.safe_load(text)
    return config


def plugin(config: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next((p for p in config["plugins"] if p["type"] == kind), None)


def plan_of(objects: list[dict[str, Any]]) -> dict[str, Any]:
    annotation = of_kind(objects, "StatefulSet")[0]["metadata"]["annotations"][n.PLAN]
    plan: dict[str, Any] = yaml.safe_load(annotation)
    return plan


def matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def test_off_by_default_and_nothing_rendered() -> None:
    objects = render({k: v for k, v in SPEC.items() if k != "gateway"})
    assert not [o for o in objects if o["kind"] in GATEWAY_OBJECT_KINDS]
    assert [o["metadata"]["name"] for o in of_kind(objects, "Service")] == [
        "super-headless",
        "super",
    ]


def test_the_prefix_scorer_hashes_in_the_plans_block_size() -> None:
    objects = render(SPEC)
    config = picker_config(objects)
    plan = plan_of(objects)
    producer = plugin(config, "approx-prefix-cache-producer")
    assert producer is not None
    assert producer["parameters"]["blockSizeTokens"] == plan["blockSizeTokens"]
    assert producer["parameters"]["blockSizeTokens"] > 1000  # hybrid-aligned, not vLLM's 16
    assert producer["parameters"]["autoTune"] is False
    assert producer["parameters"]["maxPrefixTokensToMatch"] == 262_144
    assert producer["parameters"]["lruCapacityPerServer"] == (
        plan["kvCacheTokens"] // plan["blockSizeTokens"]
    )
    refs = [p["pluginRef"] for p in config["schedulingProfiles"][0]["plugins"]]
    assert refs == ["queue-scorer", "kv-cache-utilization-scorer", "prefix-cache-scorer"]
    assert (
        "--enable-prefix-caching"
        in of_kind(objects, "StatefulSet")[0]["spec"]["template"]["spec"]["containers"][0]["args"]
    )


def test_the_scorers_read_vllms_metric_names() -> None:
    extractor = plugin(picker_config(render(SPEC)), "core-metrics-extractor")
    assert extractor is not None
    (engine,) = extractor["parameters"]["engineConfigs"]
    assert engine["queuedRequestsSpec"] == "vllm:num_requests_waiting"
    assert engine["kvUsageSpec"] == "vllm:kv_cache_usage_perc"


def test_prefix_caching_off_leaves_the_prefix_scorer_out_and_tells_vllm() -> None:
    objects = render(merged(SPEC, {"engine": {"enablePrefixCaching": False}}))
    config = picker_config(objects)
    assert plugin(config, "approx-prefix-cache-producer") is None
    assert plugin(config, "prefix-cache-scorer") is None
    refs = [p["pluginRef"] for p in config["schedulingProfiles"][0]["plugins"]]
    assert refs == ["queue-scorer", "kv-cache-utilization-scorer"]
    args = of_kind(objects, "StatefulSet")[0]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--no-enable-prefix-caching" in args


@pytest.mark.parametrize(
    "change",
    [
        {"capacity": {"parallelism": {"tensor": 8}}},  # the layout: per-rank pages shrink
        {"engine": {"kvCacheDtype": "fp8"}},  # the attention page halves, the block doubles
    ],
    ids=["tensor-parallel", "kv-cache-dtype"],
)
def test_a_plan_with_another_block_size_changes_the_config_and_restarts_the_picker(
    change: dict[str, Any],
) -> None:
    check_block_size_follows(SPEC, change)


def test_a_longer_max_model_len_that_needs_a_wider_layout_changes_the_block_size() -> None:
    # Nano on H200 for 128 sequences: TP 2 holds them at 131072 tokens, 262144 needs TP 4,
    # whose per-rank pages are half as large, and so is the hybrid block.
    nano = {
        "model": {"id": "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"},
        # vLLM 0.31's pool (0.34's extensible cache holds 128 sequences at TP 2 at both lengths)
        "engine": {"maxModelLen": 131_072, "image": "vllm/vllm-openai:v0.31.0"},
        "capacity": {"gpu": {"products": ["NVIDIA-H200"]}, "minConcurrency": 128},
        "gateway": {"enabled": True},
    }
    check_block_size_follows(nano, {"engine": {"maxModelLen": 262_144}})


def check_block_size_follows(spec: dict[str, Any], change: dict[str, Any]) -> None:
    before, after = render(spec), render(merged(spec, change))
    assert plan_of(before)["blockSizeTokens"] != plan_of(after)["blockSizeTokens"]
    producer = plugin(picker_config(after), "approx-prefix-cache-producer")
    assert producer is not None
    assert producer["parameters"]["blockSizeTokens"] == plan_of(after)["blockSizeTokens"]

    def config_hash(objects: list[dict[str, Any]]) -> str:
        template = one(objects, "Deployment")["spec"]["template"]
        return str(template["metadata"]["annotations"][n.CONFIG_HASH])

    assert config_hash(before) != config_hash(after)


def test_the_pool_selects_the_leaders_and_nothing_else() -> None:
    spec = merged(
        SPEC,
        {
            "capacity": {
                "gpu": {"products": ["NVIDIA-H100-80GB-HBM3"]},
                "parallelism": {"tensor": 8, "pipeline": 2},
            },
            "replicas": 2,
        },
    )
    objects = render(spec)
    pool = one(objects, "InferencePool")
    selector = pool["spec"]["selector"]["matchLabels"]
    templates = {
        s["metadata"]["name"]: s["spec"]["template"]["metadata"]["labels"]
        for s in of_kind(objects, "StatefulSet")
    }
    assert len(templates) == 4  # two replicas, each a leader and a worker StatefulSet
    selected = sorted(name for name, labels in templates.items() if matches(selector, labels))
    assert selected == ["super-0", "super-1"]
    picker = one(objects, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert not matches(selector, picker)
    assert pool["spec"]["targetPorts"] == [{"number": 8000}]
    # The serving Service and the pool agree on what serves.
    service = next(s for s in of_kind(objects, "Service") if s["metadata"]["name"] == "super")
    assert service["spec"]["selector"] == selector


def test_scaling_does_not_change_the_pool() -> None:
    def pool(replicas: int) -> dict[str, Any]:
        return one(render(merged(SPEC, {"replicas": replicas})), "InferencePool")

    assert pool(1) == pool(3)


def test_the_pool_names_the_pickers_grpc_service() -> None:
    objects = render(SPEC)
    ref = one(objects, "InferencePool")["spec"]["endpointPickerRef"]
    service = next(s for s in of_kind(objects, "Service") if s["metadata"]["name"] == ref["name"])
    grpc = next(p for p in service["spec"]["ports"] if p["port"] == ref["port"]["number"])
    assert grpc["appProtocol"] == "kubernetes.io/h2c"
    assert {p["port"] for p in service["spec"]["ports"]} == {9002, 9003, 9090}
    assert service["spec"]["selector"] == picker_selector(n.Names("super", "ai"))
    assert ref["failureMode"] == "FailClose"  # the InferencePool API's default


def test_the_picker_runs_against_this_pool_with_its_config() -> None:
    objects = render(SPEC)
    container = one(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert flag_value(container["args"], "--pool-name") == "super"
    assert flag_value(container["args"], "--pool-namespace") == "ai"
    assert flag_value(container["args"], "--config-file") == "/config/epp-config.yaml"
    assert container["image"] == "ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.9.0"
    pod = one(objects, "Deployment")["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == one(objects, "ServiceAccount")["metadata"]["name"]
    assert pod["volumes"][0]["configMap"]["name"] == one(objects, "ConfigMap")["metadata"]["name"]


def test_the_pickers_role_only_reads() -> None:
    objects = render(SPEC)
    rules = one(objects, "Role")["rules"]
    assert {v for r in rules for v in r["verbs"]} == {"get", "list", "watch"}
    assert {res for r in rules for res in r["resources"]} == {
        "pods",
        "inferencepools",
        "inferenceobjectives",
        "inferencemodelrewrites",
    }
    binding = one(objects, "RoleBinding")
    assert binding["roleRef"]["name"] == one(objects, "Role")["metadata"]["name"]
    assert binding["subjects"][0]["name"] == one(objects, "ServiceAccount")["metadata"]["name"]


def test_the_route_matches_the_served_model_name() -> None:
    spec = merged(SPEC, {"model": {"servedName": "chat"}})
    route = one(render(spec), "HTTPRoute")
    (rule,) = route["spec"]["rules"]
    assert rule["matches"][0]["headers"] == [
        {"type": "Exact", "name": "X-Gateway-Model-Name", "value": "chat"}
    ]
    assert rule["backendRefs"][0]["kind"] == "InferencePool"
    assert route["spec"]["parentRefs"][0]["name"] == "gw"


def test_no_route_without_http_route() -> None:
    gateway = {"enabled": True}
    objects = render({**SPEC, "gateway": gateway})
    assert not of_kind(objects, "HTTPRoute")
    assert of_kind(objects, "InferencePool")


def test_a_route_without_the_gateway_is_refused_naming_the_field() -> None:
    obj = {
        "apiVersion": "serving.nemotron.io/v1alpha1",
        "kind": "NemotronDeployment",
        "metadata": {"name": "super", "namespace": "ai"},
        "spec": {**SPEC, "gateway": {"httpRoute": {"parentRefs": [{"name": "gw"}]}}},
    }
    with pytest.raises(Exception, match=r"spec\.gateway.*httpRoute"):
        checks.parse(obj)
