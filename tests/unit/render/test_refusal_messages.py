"""Each refusal names its field and says what to change, in words a user can act on; and the
speculative-decoding limits hold at their edges. test_checks.py asserts the fields; mutation
testing found the messages themselves, and the 1..8 draft-token range, unchecked."""

from __future__ import annotations

from typing import Any

import pytest

from nemotron_operator.render import RenderError
from tests.unit.render.fakes import (
    REMOTE_CODE_ARCHITECTURE,
    SUPER_VL,
    FakeModel,
    make_plan,
    render,
)

SPECULATIVE = "spec.engine.speculativeDecoding"
OBJECT_STORE = {"uri": "gs://models/nvidia/super", "credentialsSecretRef": {"name": "gcs"}}
KEDA = {"prometheus": {"serverAddress": "http://p:9090", "query": "q", "threshold": 1}}


def only_error(spec: dict[str, Any], **kwargs: Any) -> tuple[str, str]:
    with pytest.raises(RenderError) as info:
        render(spec, **kwargs)
    (error,) = info.value.errors
    return error.path, error.message


@pytest.mark.parametrize("tokens", [0, 9, 16])
def test_mtp_takes_1_to_8_draft_tokens(tokens: int) -> None:
    spec = {"engine": {"speculativeDecoding": {"method": "mtp", "numSpeculativeTokens": tokens}}}
    assert only_error(spec) == (
        f"{SPECULATIVE}.numSpeculativeTokens",
        "must be between 1 and 8 with mtp",
    )


@pytest.mark.parametrize("tokens", [1, 8])
def test_the_edges_of_the_mtp_range_render(tokens: int) -> None:
    spec = {"engine": {"speculativeDecoding": {"method": "mtp", "numSpeculativeTokens": tokens}}}
    assert render(spec)


def test_draft_tokens_without_a_method_are_refused_and_zero_is_accepted() -> None:
    spec = {"engine": {"speculativeDecoding": {"method": "none", "numSpeculativeTokens": 1}}}
    assert only_error(spec) == (
        f"{SPECULATIVE}.numSpeculativeTokens",
        "must be 0 (or unset) when method is none",
    )
    assert render(
        {"engine": {"speculativeDecoding": {"method": "none", "numSpeculativeTokens": 0}}}
    )


@pytest.mark.parametrize(
    ("spec", "kwargs", "field", "message"),
    [
        (
            {"engine": {"speculativeDecoding": {"method": "mtp"}}},
            {"model": FakeModel(mtp_layers=0)},
            f"{SPECULATIVE}.method",
            f"{SUPER_VL} has no MTP head: set method: none or remove speculativeDecoding",
        ),
        (
            {"engine": {"multimodal": {"images": 2}}},
            {"model": FakeModel(vision=False)},
            "spec.engine.multimodal",
            f"{SUPER_VL} is not a vision-language model, so it takes no images or videos: "
            "remove spec.engine.multimodal",
        ),
        (
            {"model": {"id": "example/custom", "architecture": REMOTE_CODE_ARCHITECTURE}},
            {"model": FakeModel(hf_id="example/custom", trust_remote_code=True)},
            "spec.model.architecture.trustRemoteCode",
            "this operator does not allow remote code for models outside the catalog: ask the "
            "administrator to allow it, or serve a checkpoint vLLM supports natively",
        ),
        (
            {"model": {"revision": "v2", "source": {"pvc": {"claimName": "w"}}}},
            {},
            "spec.model.revision",
            "applies to Hugging Face downloads; weights from spec.model.source.pvc are served as "
            "they are: remove spec.model.revision",
        ),
        (
            {"model": {"source": {"pvc": {"claimName": "w"}}}, "storage": {"cache": {}}},
            {},
            "spec.storage",
            "configures the download cache and does not apply when weights come from "
            "spec.model.source.pvc: remove spec.storage",
        ),
        (
            {},
            {"plan": make_plan(max_model_len=2_000_000)},
            "spec.engine.maxModelLen",
            f"2000000 exceeds the 1048576 tokens {SUPER_VL} was trained to: lower it",
        ),
        (
            {"storage": {"cache": {"shared": True}}},
            {},
            "spec.storage.cache.accessModes",
            "a shared cache needs accessModes to include ReadWriteMany",
        ),
        (
            {"scheduling": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-B200"}}},
            {},
            'spec.scheduling.nodeSelector["nvidia.com/gpu.product"]',
            "is NVIDIA-B200 but the plan runs on NVIDIA-H200: choose GPUs with "
            "spec.capacity.gpu.products and remove this selector",
        ),
        (
            {"nodePool": {"provisioner": "Karpenter"}},
            {},
            "spec.nodePool.karpenter",
            "is required when nodePool.provisioner is Karpenter",
        ),
        (
            {"nodePool": {"karpenter": {"nodeClassRef": {"name": "gpu"}}}},
            {},
            "spec.nodePool.provisioner",
            "nodePool.karpenter is set but provisioner is None: set provisioner: Karpenter or "
            "remove nodePool.karpenter",
        ),
        (
            {"autoscaling": {"provider": "KEDA", "maxReplicas": 2}},
            {},
            "spec.autoscaling.keda",
            "is required when autoscaling.provider is KEDA: name the Prometheus trigger "
            "(keda.prometheus.serverAddress, query and threshold)",
        ),
        (
            {"autoscaling": {"maxReplicas": 2, "keda": KEDA}},
            {},
            "spec.autoscaling.provider",
            "autoscaling.keda is set but autoscaling.provider is Operator: set provider: KEDA or "
            "remove autoscaling.keda",
        ),
        (
            {"capacity": {"gpu": {"deviceClassName": "gpu.nvidia.com"}}},
            {},
            "spec.capacity.gpu.deviceClassName",
            "is only used with allocation: DRA; set allocation: DRA or remove deviceClassName",
        ),
        (
            {
                "capacity": {"gpu": {"allocation": "DRA"}},
                "scheduling": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H200"}},
            },
            {},
            'spec.scheduling.nodeSelector["nvidia.com/gpu.product"]',
            "with allocation: DRA the claim's selector picks the product (DRA nodes need not "
            "carry GPU Feature Discovery labels): remove this selector and name the product in "
            "spec.capacity.gpu.products",
        ),
        (
            {
                "capacity": {"gpu": {"allocation": "DRA"}},
                "nodePool": {
                    "provisioner": "Karpenter",
                    "karpenter": {"nodeClassRef": {"name": "g"}},
                },
            },
            {},
            "spec.nodePool.provisioner",
            "Karpenter NodePools are sized in nvidia.com/gpu, which DRA pods do not request: use "
            "allocation: DevicePlugin with Karpenter, or provisioner: None with DRA",
        ),
        (
            {"model": {"revision": "v2", "source": {"objectStore": OBJECT_STORE}}},
            {},
            "spec.model.revision",
            "applies to Hugging Face downloads; weights streamed from "
            "spec.model.source.objectStore are served as the bucket holds them: remove "
            "spec.model.revision",
        ),
        (
            {"model": {"source": {"objectStore": OBJECT_STORE}}, "storage": {"cache": {}}},
            {},
            "spec.storage",
            "configures the download cache and does not apply when weights are streamed from "
            "spec.model.source.objectStore: remove spec.storage",
        ),
        (
            {
                "model": {"source": {"objectStore": OBJECT_STORE}},
                "engine": {"extraArgs": ["--enforce-eager", "--load-format=safetensors"]},
            },
            {},
            "spec.engine.extraArgs[1]",
            "--load-format is set from spec.model.source.objectStore when weights are streamed "
            "from an object store: remove it",
        ),
    ],
)
def test_each_refusal_says_what_to_change(
    spec: dict[str, Any], kwargs: dict[str, Any], field: str, message: str
) -> None:
    assert only_error(spec, **kwargs) == (field, message)
