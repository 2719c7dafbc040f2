"""Every example in examples/ is admitted by the generated CRD and parses into the API models."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nemotron_operator.admission import validate_object
from nemotron_operator.api.errors import parse_deployment
from tests.unit.admission.conftest import EXAMPLES, load_example

EXAMPLE_FILES = sorted(p.name for p in EXAMPLES.glob("*.yaml"))
REQUIRED_EXAMPLES = {
    "minimal.yaml",
    "super-vl-bf16-h200.yaml",
    "super-nvfp4-b200.yaml",
    "nano-bf16.yaml",
    "custom-architecture.yaml",
}


def test_the_required_examples_exist() -> None:
    assert set(EXAMPLE_FILES) >= REQUIRED_EXAMPLES


@pytest.mark.parametrize("name", EXAMPLE_FILES)
def test_example_is_admitted_and_parses(crd: dict[str, Any], name: str) -> None:
    obj = load_example(name)
    admitted = validate_object(crd, obj)
    # What the API server stores (defaults applied) is what the operator reads.
    nd = parse_deployment(admitted)
    assert nd.metadata.name == obj["metadata"]["name"]
    # Defaulting by the API server and by the models agree on every field the example omits.
    assert nd.spec.to_wire() == parse_deployment(obj).spec.to_wire()


def test_minimal_example_is_the_design_object() -> None:
    spec = load_example("minimal.yaml")["spec"]
    assert spec == {
        "model": {"id": "nvidia/NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-BF16"},
        "engine": {"maxModelLen": 262144},
    }


def test_full_example_sets_every_spec_section(crd: dict[str, Any]) -> None:
    spec_schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    full = load_example("super-vl-bf16-h200.yaml")["spec"]
    # The architecture is for models outside the catalog; the custom example carries it.
    assert set(spec_schema["properties"]) == set(full)
    assert "architecture" in load_example("custom-architecture.yaml")["spec"]["model"]


def test_examples_dir_is_the_one_checked(repo_root: Path) -> None:
    assert repo_root / "examples" == EXAMPLES
