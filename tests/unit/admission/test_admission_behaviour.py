"""Unknown fields, defaulting, null pruning and the Status body, as the API server does them."""

from __future__ import annotations

from typing import Any

from nemotron_operator.admission import validate_object
from tests.unit.admission.conftest import load_example, refused


def test_unknown_fields_are_a_400_naming_every_field(crd: dict[str, Any]) -> None:
    obj = load_example("minimal.yaml")
    obj["spec"]["engine"]["maxModelLenn"] = 1
    obj["spec"]["typo"] = True
    error = refused(crd, obj)
    assert error.code == 400
    assert sorted(c.field for c in error.causes) == ["spec.engine.maxModelLenn", "spec.typo"]
    assert 'unknown field "spec.engine.maxModelLenn"' in str(error)
    assert error.status()["reason"] == "BadRequest"


def test_unknown_fields_are_pruned_when_not_strict(crd: dict[str, Any]) -> None:
    obj = load_example("minimal.yaml")
    obj["spec"]["typo"] = True
    stored = validate_object(crd, obj, field_validation="Ignore")
    assert "typo" not in stored["spec"]


def test_defaults_are_applied_like_the_api_server(crd: dict[str, Any]) -> None:
    stored = validate_object(crd, load_example("minimal.yaml"))
    spec = stored["spec"]
    assert spec["engine"]["gpuMemoryUtilization"] == 0.9
    assert spec["engine"]["mambaSsmCacheDtype"] == "float32"
    assert spec["model"]["source"] == {"huggingFace": {}}
    assert spec["replicas"] == 1
    # Optional fields without a default stay absent (nothing invented).
    assert "speculativeDecoding" not in spec["engine"]
    assert "storage" not in spec


def test_nulls_of_nullable_fields_are_kept_and_others_pruned(crd: dict[str, Any]) -> None:
    obj = load_example("minimal.yaml")
    obj["spec"]["engine"]["maxNumSeqs"] = None  # nullable optional: kept as null
    obj["spec"]["replicas"] = None  # not nullable: pruned, then defaulted
    stored = validate_object(crd, obj)
    assert stored["spec"]["engine"]["maxNumSeqs"] is None
    assert stored["spec"]["replicas"] == 1


def test_status_body_lists_causes_with_fields(crd: dict[str, Any]) -> None:
    obj = load_example("minimal.yaml")
    obj["spec"]["replicas"] = 65
    obj["spec"]["engine"]["kvCacheDtype"] = "fp4"
    status = refused(crd, obj).status()
    assert status["code"] == 422
    assert status["reason"] == "Invalid"
    assert status["details"]["kind"] == "NemotronDeployment"
    assert status["details"]["group"] == "serving.nemotron.io"
    fields = sorted(c["field"] for c in status["details"]["causes"])
    assert fields == ["spec.engine.kvCacheDtype", "spec.replicas"]
    assert status["message"].startswith(
        'NemotronDeployment.serving.nemotron.io "super-vl" is invalid: ['
    )


def test_metadata_name_is_checked(crd: dict[str, Any]) -> None:
    obj = load_example("minimal.yaml")
    obj["metadata"]["name"] = "Not_A_Name"
    error = refused(crd, obj)
    assert [c.field for c in error.causes] == ["metadata.name"]


def test_a_missing_spec_is_required(crd: dict[str, Any]) -> None:
    obj = load_example("minimal.yaml")
    del obj["spec"]
    error = refused(crd, obj)
    assert [(c.field, c.message) for c in error.causes] == [("spec", "Required value")]


def test_a_schema_that_preserves_unknown_fields_keeps_them() -> None:
    # Like the large third-party CRDs (PodMonitor) whose schema is a free-form object.
    crd = {
        "metadata": {"name": "podmonitors.monitoring.coreos.com"},
        "spec": {
            "group": "monitoring.coreos.com",
            "names": {"kind": "PodMonitor"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }
    obj = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PodMonitor",
        "metadata": {"name": "vllm"},
        "spec": {"podMetricsEndpoints": [{"port": "http"}]},
    }
    assert validate_object(crd, obj)["spec"] == obj["spec"]
