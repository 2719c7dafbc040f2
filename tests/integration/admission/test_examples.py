"""Every example in examples/ is admitted by kube-apiserver and parses into the API models."""

from __future__ import annotations

from pathlib import Path

import pytest

from nemotron_operator.api.errors import parse_deployment
from tests.integration.admission.conftest import Admission, admitted
from tests.integration.admission.objects import EXAMPLES, load_example, open_api_schema

EXAMPLE_FILES = sorted(p.name for p in EXAMPLES.glob("*.yaml"))
REQUIRED_EXAMPLES = {
    "minimal.yaml",
    "super-vl-bf16-h200.yaml",
    "super-nvfp4-b200.yaml",
    "nano-bf16.yaml",
    "custom-architecture.yaml",
    "nano-canary-scale-to-zero.yaml",
}


def test_the_required_examples_exist() -> None:
    assert set(EXAMPLE_FILES) >= REQUIRED_EXAMPLES


@pytest.mark.parametrize("name", EXAMPLE_FILES)
def test_example_is_admitted_and_parses(admission: Admission, name: str) -> None:
    obj = load_example(name)
    answer = admission.create(obj)  # Strict: an unknown field in an example is refused too
    stored = admitted(answer)
    assert answer.warnings == ()
    # What kube-apiserver stores (defaults applied) is what the operator reads.
    nd = parse_deployment(stored)
    assert nd.metadata.name == obj["metadata"]["name"]
    # Defaulting by kube-apiserver and by the models agree on every field the example omits.
    assert nd.spec.to_wire() == parse_deployment(obj).spec.to_wire()


def test_minimal_example_is_the_design_object() -> None:
    spec = load_example("minimal.yaml")["spec"]
    assert spec == {
        "model": {"id": "nvidia/NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-BF16"},
        "engine": {"maxModelLen": 262144},
    }


def test_full_example_sets_every_spec_section(admission: Admission) -> None:
    spec_schema = open_api_schema(admission.crd)["properties"]["spec"]  # as served
    full = load_example("super-vl-bf16-h200.yaml")["spec"]
    # The architecture is for models outside the catalog; the custom example carries it.
    assert set(spec_schema["properties"]) == set(full)
    assert "architecture" in load_example("custom-architecture.yaml")["spec"]["model"]


def test_examples_dir_is_the_one_checked(repo_root: Path) -> None:
    assert repo_root / "examples" == EXAMPLES
