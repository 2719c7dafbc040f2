"""Fixtures for admission tests: the generated CRD and the example objects."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from nemotron_operator.admission import AdmissionError, validate_object
from nemotron_operator.crd import build_crd

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def load_example(name: str) -> dict[str, Any]:
    obj: dict[str, Any] = yaml.safe_load((EXAMPLES / name).read_text())
    return obj


@pytest.fixture(scope="session")
def crd() -> dict[str, Any]:
    return build_crd()


@pytest.fixture
def full() -> dict[str, Any]:
    return copy.deepcopy(load_example("super-vl-bf16-h200.yaml"))


def refused(
    crd: dict[str, Any], obj: dict[str, Any], old: dict[str, Any] | None = None
) -> AdmissionError:
    """Validate ``obj`` and return the refusal; fail the test if it was admitted."""
    try:
        validate_object(crd, obj, old)
    except AdmissionError as exc:
        return exc
    pytest.fail("the object was admitted but should have been refused")
