"""Bad objects produce errors naming the camelCase field path."""

from __future__ import annotations

from typing import Any

import pytest

from nemotron_operator.api.errors import SpecError, field_path, parse_deployment


def _obj(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"model": {"id": "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"}}
    base.update(spec)
    return {
        "apiVersion": "serving.nemotron.io/v1alpha1",
        "kind": "NemotronDeployment",
        "metadata": {"name": "nano", "namespace": "ai"},
        "spec": base,
    }


def test_field_path_formats_indices() -> None:
    assert field_path(("spec", "engine", "extraArgs", 2)) == "spec.engine.extraArgs[2]"


def test_valid_object_parses_with_defaults() -> None:
    nd = parse_deployment(_obj())
    assert nd.metadata.name == "nano"
    assert nd.spec.engine.gpu_memory_utilization is None  # the release's default applies
    assert nd.spec.engine.image == "vllm/vllm-openai:v0.34.0"
    assert nd.spec.model.source.hugging_face is not None


def test_unknown_field_is_named() -> None:
    with pytest.raises(SpecError) as info:
        parse_deployment(_obj(engine={"maxModelLenn": 4096}))
    assert [e.path for e in info.value.errors] == ["spec.engine.maxModelLenn"]
    assert "unknown field" in str(info.value)
    assert 'NemotronDeployment "nano" is invalid' in str(info.value)


def test_missing_nested_field_is_named() -> None:
    plugin = {"configMapName": "parsers", "parserName": "super_v3"}
    with pytest.raises(SpecError) as info:
        parse_deployment(_obj(engine={"reasoningParserPlugin": plugin}))
    assert [e.path for e in info.value.errors] == ["spec.engine.reasoningParserPlugin.fileName"]
    assert "Field required" in str(info.value)


def test_out_of_range_value_is_named_with_the_value() -> None:
    with pytest.raises(SpecError) as info:
        parse_deployment(_obj(replicas=-1))
    assert info.value.errors[0].path == "spec.replicas"
    assert "Invalid value: -1" in info.value.errors[0].message
