"""capacity.gpu.allocation: DRA — the ResourceClaimTemplate and the pods' claims."""

from __future__ import annotations

from typing import Any

import pytest

from nemotron_operator.render import RenderError
from nemotron_operator.render.names import INSTANCE, MANAGED_BY_LABEL
from tests.unit.render.fakes import make_plan, of_kind, pod_spec, render, vllm

DRA: dict[str, Any] = {"capacity": {"gpu": {"allocation": "DRA"}}}


def _template(objects: list[dict[str, Any]]) -> dict[str, Any]:
    (template,) = of_kind(objects, "ResourceClaimTemplate")
    return template


def test_device_plugin_is_the_default_and_renders_no_claims() -> None:
    objects = render()
    assert of_kind(objects, "ResourceClaimTemplate") == []
    assert "resourceClaims" not in pod_spec(objects)
    assert vllm(objects)["resources"]["limits"] == {"nvidia.com/gpu": "4"}
    assert pod_spec(objects)["nodeSelector"]["nvidia.com/gpu.product"] == "NVIDIA-H200"


def test_dra_claims_exactly_the_planned_count_of_the_planned_product() -> None:
    objects = render(DRA)
    template = _template(objects)
    request = template["spec"]["spec"]["devices"]["requests"][0]
    assert request["name"] == "gpus"
    exactly = request["exactly"]
    assert exactly["deviceClassName"] == "gpu.nvidia.com"
    assert exactly["allocationMode"] == "ExactCount"
    assert exactly["count"] == 4
    expression = exactly["selectors"][0]["cel"]["expression"]
    assert "productName.replace(' ', '-') == 'NVIDIA-H200'" in expression
    assert "memory.compareTo(quantity('143771Mi')) >= 0" in expression
    # The claims made from it carry the instance labels (the inventory's owner).
    labels = template["spec"]["metadata"]["labels"]
    assert labels[INSTANCE] == "super-vl"
    assert labels[MANAGED_BY_LABEL] == "nemotron-operator"


def test_dra_pod_references_the_claim_instead_of_the_device_plugin_resource() -> None:
    objects = render(DRA)
    pod = pod_spec(objects)
    name = _template(objects)["metadata"]["name"]
    assert pod["resourceClaims"] == [{"name": "gpus", "resourceClaimTemplateName": name}]
    resources = vllm(objects)["resources"]
    assert resources["claims"] == [{"name": "gpus"}]
    assert "limits" not in resources
    assert "nvidia.com/gpu" not in resources["requests"]
    # The claim's selector picks the product: DRA nodes need no GFD product label.
    assert "nodeSelector" not in pod
    # The GPU nodes' taint is still tolerated.
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod[
        "tolerations"
    ]


def test_user_node_selector_is_kept_without_the_product_label() -> None:
    spec = {**DRA, "scheduling": {"nodeSelector": {"pool": "gpu"}}}
    assert pod_spec(render(spec))["nodeSelector"] == {"pool": "gpu"}


def test_a_new_plan_is_a_new_template_name_because_its_spec_is_immutable() -> None:
    first = _template(render(DRA))["metadata"]["name"]
    again = _template(render(DRA))["metadata"]["name"]
    other = _template(render(DRA, plan=make_plan(gpu_product="NVIDIA-B200")))["metadata"]["name"]
    assert first == again
    assert first != other
    assert first.startswith("super-vl-gpus-")


def test_multi_node_replicas_claim_per_pod_the_gpus_of_one_node() -> None:
    plan = make_plan(
        gpus_per_node=8, tensor_parallel=8, pipeline_parallel=2, gpus_per_replica=16,
        nodes_per_replica=2, total_gpus=16, nodes=2,
    )  # fmt: skip
    objects = render(DRA, plan=plan)
    template = _template(objects)
    assert template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 8
    statefulsets = of_kind(objects, "StatefulSet")
    assert len(statefulsets) == 2  # leader and workers of the one replica
    for index in range(2):
        claims = pod_spec(objects, index)["resourceClaims"]
        assert claims[0]["resourceClaimTemplateName"] == template["metadata"]["name"]


def test_device_class_name_reaches_the_template() -> None:
    spec = {"capacity": {"gpu": {"allocation": "DRA", "deviceClassName": "h200.example.com"}}}
    exactly = _template(render(spec))["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert exactly["deviceClassName"] == "h200.example.com"


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"capacity": {"gpu": {"deviceClassName": "h200.example.com"}}}, "deviceClassName"),
        (
            {**DRA, "scheduling": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H200"}}},
            'nodeSelector["nvidia.com/gpu.product"]',
        ),
        (
            {
                **DRA,
                "nodePool": {
                    "provisioner": "Karpenter",
                    "karpenter": {"nodeClassRef": {"name": "gpu"}},
                },
            },
            "spec.nodePool.provisioner",
        ),
    ],
)
def test_what_the_claim_replaces_is_refused_naming_the_field(
    spec: dict[str, Any], field: str
) -> None:
    with pytest.raises(RenderError) as caught:
        render(spec)
    assert field in str(caught.value)
