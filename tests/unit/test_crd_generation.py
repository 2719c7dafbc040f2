"""The CRD is generated from the pydantic models, structural, bounded, and committed unchanged."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from nemotron_operator.crd import CRD_FILE_NAME, build_crd
from nemotron_operator.crd.schema import UnboundedSchemaError, check_bounded, openapi_schema


def _walk(node: Any, path: str = "") -> list[tuple[str, str, Any]]:
    found: list[tuple[str, str, Any]] = []
    if isinstance(node, dict):
        for key, value in node.items():
            found.append((path, key, value))
            found.extend(_walk(value, f"{path}.{key}"))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found.extend(_walk(value, f"{path}[{i}]"))
    return found


@pytest.fixture(scope="module")
def crd() -> dict[str, Any]:
    return build_crd()


@pytest.fixture(scope="module")
def schema(crd: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


@pytest.mark.slow  # generates the CRD: ~12 s; in the suite, not in make test-fast
def test_committed_crd_matches_the_models(repo_root: Path) -> None:
    result = subprocess.run(
        [str(repo_root / "hack" / "verify-crds.sh")], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_committed_file_is_the_generated_object(repo_root: Path, crd: dict[str, Any]) -> None:
    committed = yaml.safe_load((repo_root / "crds" / CRD_FILE_NAME).read_text())
    assert committed == crd


def test_schema_is_structural(schema: dict[str, Any]) -> None:
    forbidden = {"$ref", "$defs", "anyOf", "oneOf", "allOf", "const", "title", "propertyNames"}
    bad = [(p, k) for p, k, _ in _walk(schema) if k in forbidden]
    assert bad == []
    # Every node that is not a free-form object declares its type.
    for path, key, value in _walk(schema):
        if key == "properties":
            for name, sub in value.items():
                assert "type" in sub, f"{path}.{name} has no type"


def test_every_string_list_and_map_is_bounded(schema: dict[str, Any]) -> None:
    check_bounded(schema)  # raises on the first unbounded node


def test_an_unbounded_field_fails_generation() -> None:
    class Loose(BaseModel):
        name: str

    with pytest.raises(UnboundedSchemaError, match="name: string without maxLength"):
        check_bounded(openapi_schema(Loose))


def test_exclusive_bounds_are_openapi_v3_booleans() -> None:
    from pydantic import Field

    class Bounded(BaseModel):
        ratio: float = Field(gt=0, lt=1)

    prop = openapi_schema(Bounded)["properties"]["ratio"]
    assert prop == {
        "type": "number",
        "minimum": 0,
        "exclusiveMinimum": True,
        "maximum": 1,
        "exclusiveMaximum": True,
    }


def test_identity_columns_and_subresources(crd: dict[str, Any]) -> None:
    spec = crd["spec"]
    assert crd["metadata"]["name"] == "nemotrondeployments.serving.nemotron.io"
    assert spec["names"]["shortNames"] == ["nd"]
    assert spec["scope"] == "Namespaced"
    version = spec["versions"][0]
    assert version["name"] == "v1alpha1"
    assert version["subresources"]["status"] == {}
    assert version["subresources"]["scale"]["specReplicasPath"] == ".spec.replicas"
    columns = [c["name"] for c in version["additionalPrinterColumns"]]
    assert columns == ["Model", "GPU", "GPUs", "Ready", "Phase", "Tokens/s", "Age"]


def test_printer_columns_point_at_schema_fields(
    crd: dict[str, Any], schema: dict[str, Any]
) -> None:
    for column in crd["spec"]["versions"][0]["additionalPrinterColumns"]:
        parts = column["jsonPath"].lstrip(".").split(".")
        if parts[0] == "metadata":
            continue
        node = schema
        for part in parts:
            node = node["properties"][part]
        assert node["type"] in ("string", "integer", "number"), column


def test_descriptions_reach_kubectl_explain(schema: dict[str, Any]) -> None:
    spec = schema["properties"]["spec"]
    for path, key, value in _walk(spec):
        if key == "properties":
            for name, sub in value.items():
                assert sub.get("description"), f"{path}.{name} has no description"


def test_defaults_are_wire_shaped(schema: dict[str, Any]) -> None:
    spec = schema["properties"]["spec"]["properties"]
    assert spec["model"]["properties"]["source"]["default"] == {"huggingFace": {}}
    # No stored default: the release decides (0.90 up to vLLM 0.33, vLLM's own from 0.34).
    assert "default" not in spec["engine"]["properties"]["gpuMemoryUtilization"]
    assert spec["engine"]["properties"]["image"]["default"] == "vllm/vllm-openai:v0.34.0"
    assert spec["replicas"]["default"] == 1
    # No default is ever null: nulls would be stored and shown by kubectl.
    assert all(v is not None for _, k, v in _walk(schema) if k == "default")
    json.dumps(schema)  # serialisable as the API server stores it
