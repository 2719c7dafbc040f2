"""Bad input is refused with an error that names the field and says what to change."""

from __future__ import annotations

from typing import Any

import pytest

from nemotron_operator.api.errors import SpecError
from nemotron_operator.render import RenderError, RenderOptions
from tests.unit.render.fakes import (
    REMOTE_CODE_ARCHITECTURE,
    FakeModel,
    make_deployment,
    make_plan,
    render,
)

TEXT_MODEL = FakeModel(hf_id="nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", vision=False)


def refused(spec: dict[str, Any], **kwargs: Any) -> RenderError:
    with pytest.raises(RenderError) as info:
        render(spec, **kwargs)
    return info.value


@pytest.mark.parametrize(
    ("args", "field", "message"),
    [
        (["--tool-server", "demo"], "[0]", "--tool-server is not allowed: lets the model"),
        (["--trust-remote-code"], "[0]", "--trust-remote-code is not allowed"),
        (["--enforce-eager", "--api-key", "k"], "[1]", "a secret in the spec"),
        (["--port=9000"], "[0]", "--port is not allowed"),
        (["--nnodes", "2"], "[0]", "set by the operator from the plan"),
        (["--kv-cache-memory-bytes", "40G"], "[0]", "duplicates spec.engine.kvCacheMemory"),
        (["--no-trust-remote-code"], "[0]", "--trust-remote-code is not allowed"),
    ],
)
def test_denied_extra_args(args: list[str], field: str, message: str) -> None:
    error = refused({"engine": {"extraArgs": args}})
    assert error.field == f"spec.engine.extraArgs{field}"
    assert message in error.errors[0].message


@pytest.mark.parametrize(
    ("args", "owner"),
    [
        (["--max-model-len", "4096"], "spec.engine.maxModelLen"),
        (["-tp", "8"], "spec.capacity.parallelism.tensor"),
        (["--tensor_parallel_size=8"], "spec.capacity.parallelism.tensor"),
        (["--speculative-config.method", "mtp"], "spec.engine.speculativeDecoding"),
        (["--no-enable-prefix-caching"], "spec.engine.enablePrefixCaching"),
        (["--served-model-name", "a", "b"], "spec.model.servedName"),
        (["--limit-mm-per-prompt", '{"image":1}'], "spec.engine.multimodal"),
        (["--reasoning-parser-plugin", "/x.py"], "spec.engine.reasoningParserPlugin"),
        (["--default-chat-template-kwargs", "{}"], "spec.engine.enableThinking"),
        (["--gpu-memory-utilization", "0.95"], "spec.engine.gpuMemoryUtilization"),
    ],
)
def test_extra_args_that_duplicate_typed_fields(args: list[str], owner: str) -> None:
    error = refused({"engine": {"extraArgs": args}})
    assert error.field == "spec.engine.extraArgs[0]"
    assert f"duplicates {owner}: set that field instead" in error.errors[0].message


@pytest.mark.parametrize(
    ("args", "field", "message"),
    [
        (["--swap-space", "4"], "[0]", "does not exist in vLLM 0.31 to 0.34"),
        (["--async-scheduling", "--bogus-flag"], "[1]", "has no flag --bogus-flag"),
        (["--long-prefill-token-threshold", "two"], "[0]", "takes an integer"),
        (["--async-scheduling", "--async-scheduling"], "[1]", "already given at"),
        (["async-scheduling"], "[0]", "must start with --"),
    ],
)
def test_extra_args_vllm_would_refuse(args: list[str], field: str, message: str) -> None:
    error = refused({"engine": {"extraArgs": args}})
    assert error.field == f"spec.engine.extraArgs{field}"
    assert message in error.errors[0].message


def test_plugin_reference_without_a_file_name_names_the_field() -> None:
    # pydantic reports the missing key when the object is read, before rendering
    with pytest.raises(SpecError) as info:
        make_deployment(
            {"engine": {"reasoningParserPlugin": {"configMapName": "p", "parserName": "super_v3"}}}
        )
    assert [e.path for e in info.value.errors] == ["spec.engine.reasoningParserPlugin.fileName"]


def test_plugin_file_must_be_python() -> None:
    plugin = {"configMapName": "p", "fileName": "parser.txt", "parserName": "super_v3"}
    error = refused({"engine": {"reasoningParserPlugin": plugin}})
    assert error.field == "spec.engine.reasoningParserPlugin.fileName"
    assert "not a Python file" in str(error)


def test_parser_and_plugin_together() -> None:
    plugin = {"configMapName": "p", "fileName": "p.py", "parserName": "super_v3"}
    error = refused({"engine": {"reasoningParser": "nemotron_v3", "reasoningParserPlugin": plugin}})
    assert error.field == "spec.engine.reasoningParserPlugin"


@pytest.mark.parametrize("parser", ["super_v3", "ultra_v3"])
def test_plugin_only_parser_named_as_built_in(parser: str) -> None:
    error = refused({"engine": {"reasoningParser": parser}})
    assert error.field == "spec.engine.reasoningParser"
    assert "spec.engine.reasoningParserPlugin" in error.errors[0].message


def test_multimodal_on_a_text_model() -> None:
    error = refused({"engine": {"multimodal": {"images": 2}}}, model=TEXT_MODEL)
    assert error.field == "spec.engine.multimodal"
    assert "not a vision-language model" in str(error)


def test_mtp_on_a_model_without_an_mtp_head() -> None:
    spec = {"engine": {"speculativeDecoding": {"method": "mtp"}}}
    error = refused(spec, model=FakeModel(mtp_layers=0))
    assert error.field == "spec.engine.speculativeDecoding.method"


def test_remote_code_for_an_explicit_architecture_needs_permission() -> None:
    spec = {"model": {"id": "example/custom", "architecture": REMOTE_CODE_ARCHITECTURE}}
    model = FakeModel(hf_id="example/custom", trust_remote_code=True)
    error = refused(spec, model=model)
    assert error.field == "spec.model.architecture.trustRemoteCode"
    allowed = render(spec, model=model, options=RenderOptions(allow_remote_code=True))
    container = next(o for o in allowed if o["kind"] == "StatefulSet")["spec"]["template"]
    assert "--trust-remote-code" in container["spec"]["containers"][0]["args"]


def test_revision_with_weights_from_a_claim() -> None:
    spec = {"model": {"revision": "v2", "source": {"pvc": {"claimName": "w"}}}}
    assert refused(spec).field == "spec.model.revision"
    # the API server writes the default into stored objects: that is not the user's choice
    assert render({"model": {"revision": "main", "source": {"pvc": {"claimName": "w"}}}})


def test_storage_with_weights_from_a_claim() -> None:
    spec = {"model": {"source": {"pvc": {"claimName": "w"}}}, "storage": {"cache": {}}}
    assert refused(spec).field == "spec.storage"


def test_shared_cache_without_read_write_many() -> None:
    spec = {"storage": {"cache": {"shared": True}}}
    assert refused(spec).field == "spec.storage.cache.accessModes"


def test_gpu_product_selector_that_contradicts_the_plan() -> None:
    spec = {"scheduling": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-B200"}}}
    error = refused(spec)
    assert error.field == 'spec.scheduling.nodeSelector["nvidia.com/gpu.product"]'
    assert "spec.capacity.gpu.products" in str(error)


def test_same_gpu_product_selector_is_accepted() -> None:
    spec = {"scheduling": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H200"}}}
    assert render(spec)


def test_max_model_len_beyond_the_trained_context() -> None:
    error = refused({}, plan=make_plan(max_model_len=2_000_000))
    assert error.field == "spec.engine.maxModelLen"


def test_karpenter_without_settings_and_settings_without_karpenter() -> None:
    assert refused({"nodePool": {"provisioner": "Karpenter"}}).field == "spec.nodePool.karpenter"
    spec = {"nodePool": {"karpenter": {"nodeClassRef": {"name": "gpu"}}}}
    assert refused(spec).field == "spec.nodePool.provisioner"


def test_karpenter_instance_types_needed_outside_aws() -> None:
    ref = {"group": "karpenter.azure.com", "kind": "AKSNodeClass", "name": "gpu"}
    spec = {"nodePool": {"provisioner": "Karpenter", "karpenter": {"nodeClassRef": ref}}}
    error = refused(spec)
    assert error.field == "spec.nodePool.karpenter.instanceTypes"


def test_all_problems_are_reported_at_once() -> None:
    spec = {
        "engine": {"extraArgs": ["--tool-server", "x"], "reasoningParser": "super_v3"},
        "storage": {"cache": {"shared": True}},
    }
    error = refused(spec)
    assert [e.path for e in error.errors] == [
        "spec.engine.extraArgs[0]",
        "spec.engine.reasoningParser",
        "spec.storage.cache.accessModes",
    ]
    assert str(error).startswith('NemotronDeployment "super-vl" is invalid: ')
