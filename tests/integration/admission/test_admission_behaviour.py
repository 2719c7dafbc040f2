"""Unknown fields, defaulting, null pruning and the Status body, as kube-apiserver does them."""

from __future__ import annotations

import secrets
from typing import Any

from tests.integration.admission.apiserver import Cause
from tests.integration.admission.conftest import (
    NOT_CHECKED,
    Admission,
    admitted,
    refused,
    temporary_crd,
)
from tests.integration.admission.objects import load_example

STRICT_DECODING = (
    'NemotronDeployment in version "v1alpha1" cannot be handled as a NemotronDeployment: '
    "strict decoding error: "
)


def test_unknown_fields_are_a_400_naming_every_field(admission: Admission) -> None:
    obj = load_example("minimal.yaml")
    obj["spec"]["engine"]["maxModelLenn"] = 1
    obj["spec"]["typo"] = True
    answer = refused(admission.create(obj), 400)
    # A decoding error: the fields are named in the message only (no details.causes).
    assert answer.message == (
        STRICT_DECODING + 'unknown field "spec.engine.maxModelLenn", unknown field "spec.typo"'
    )
    assert "details" not in answer.body


def test_unknown_fields_in_a_status_write_are_a_400(
    admission: Admission, bases: list[dict[str, Any]]
) -> None:
    base = bases[0]
    base["status"]["typo"] = 1
    answer = refused(admission.update(base, subresource="status"), 400)
    assert answer.message == STRICT_DECODING + 'unknown field "status.typo"'


def test_unknown_fields_in_a_merge_patch_are_a_422_on_the_patch(
    admission: Admission, bases: list[dict[str, Any]]
) -> None:
    # kubectl patch / kubectl edit: the patched object fails strict decoding; kube-apiserver
    # answers 422 with the cause on the field "patch" (its value: the whole patched object).
    answer = refused(admission.patch(bases[0]["metadata"]["name"], {"spec": {"typo": 1}}))
    assert [(c.field, c.reason) for c in answer.causes] == [("patch", "FieldValueInvalid")]
    assert answer.causes[0].message.endswith('strict decoding error: unknown field "spec.typo"')


def test_unknown_fields_are_a_warning_when_asked(admission: Admission) -> None:
    obj = load_example("minimal.yaml")
    obj["spec"]["typo"] = True
    answer = admission.create(obj, field_validation="Warn")
    assert "typo" not in admitted(answer)["spec"]
    assert answer.warnings == ('299 - "unknown field \\"spec.typo\\""',)


def test_unknown_fields_are_pruned_when_not_strict(admission: Admission) -> None:
    obj = load_example("minimal.yaml")
    obj["spec"]["typo"] = True
    answer = admission.create(obj, field_validation="Ignore")
    assert "typo" not in admitted(answer)["spec"]
    assert answer.warnings == ()


def test_defaults_are_applied_like_the_api_server(admission: Admission) -> None:
    spec = admitted(admission.create(load_example("minimal.yaml")))["spec"]
    assert spec["engine"]["image"] == "vllm/vllm-openai:v0.34.0"
    # No stored utilization: the release decides (0.90 up to vLLM 0.33, vLLM's own from 0.34).
    assert "gpuMemoryUtilization" not in spec["engine"]
    assert spec["engine"]["mambaSsmCacheDtype"] == "float32"
    assert spec["model"]["source"] == {"huggingFace": {}}
    assert spec["replicas"] == 1
    # Optional fields without a default stay absent (nothing invented).
    assert "speculativeDecoding" not in spec["engine"]
    assert "storage" not in spec


def test_nulls_of_nullable_fields_are_kept_and_others_pruned(admission: Admission) -> None:
    obj = load_example("minimal.yaml")
    obj["spec"]["engine"]["maxNumSeqs"] = None  # nullable optional: kept as null
    obj["spec"]["replicas"] = None  # not nullable: pruned, then defaulted
    spec = admitted(admission.create(obj))["spec"]
    assert spec["engine"]["maxNumSeqs"] is None
    assert spec["replicas"] == 1


def test_status_body_lists_causes_with_fields(admission: Admission) -> None:
    obj = load_example("minimal.yaml")
    obj["spec"]["replicas"] = 65
    obj["spec"]["engine"]["kvCacheDtype"] = "fp4"
    answer = refused(admission.create(obj))
    body = answer.body
    assert body["code"] == 422
    assert body["details"]["kind"] == "NemotronDeployment"
    assert body["details"]["group"] == "serving.nemotron.io"
    assert body["details"]["name"] == "super-vl"
    supported = '"auto", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2"'
    # The order of the causes varies from one request to the next (Go's map iteration).
    assert sorted(answer.causes) == [
        NOT_CHECKED,
        Cause(
            "spec.engine.kvCacheDtype",
            f'Unsupported value: "fp4": supported values: {supported}',
            "FieldValueNotSupported",
        ),
        Cause(
            "spec.replicas",
            "Invalid value: 65: spec.replicas in body should be less than or equal to 64",
            "FieldValueInvalid",
        ),
    ]
    assert answer.message == (
        'NemotronDeployment.serving.nemotron.io "super-vl" is invalid: ['
        + ", ".join(f"{c.field}: {c.message}" for c in answer.causes)
        + "]"
    )


def test_metadata_name_is_checked(admission: Admission) -> None:
    obj = load_example("minimal.yaml")
    obj["metadata"]["name"] = "Not_A_Name"
    answer = refused(admission.create(obj))
    assert answer.causes == [
        Cause(
            "metadata.name",
            'Invalid value: "Not_A_Name": a lowercase RFC 1123 subdomain must consist of lower '
            "case alphanumeric characters, '-' or '.', and must start and end with an "
            "alphanumeric character (e.g. 'example.com', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            "FieldValueInvalid",
        )
    ]


def test_a_missing_spec_is_required(admission: Admission) -> None:
    obj = load_example("minimal.yaml")
    del obj["spec"]
    answer = refused(admission.create(obj))
    assert answer.causes == [Cause("spec", "Required value", "FieldValueRequired"), NOT_CHECKED]


def test_a_schema_that_preserves_unknown_fields_keeps_them(admission: Admission) -> None:
    # Like the large third-party CRDs whose schema is a free-form object; a CRD of the test's
    # own, in a group no one else uses.
    group = f"free-{secrets.token_hex(3)}.admission-test.nemotron.io"
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"freeforms.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"kind": "FreeForm", "plural": "freeforms"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
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
        "apiVersion": f"{group}/v1",
        "kind": "FreeForm",
        "metadata": {"name": "vllm", "namespace": admission.namespace},
        "spec": {"podMetricsEndpoints": [{"port": "http"}]},
    }
    path = f"/apis/{group}/v1/namespaces/{admission.namespace}/freeforms"
    with temporary_crd(admission.api, crd):
        stored = admitted(admission.api.dry_run("POST", path, obj))
    assert stored["spec"] == obj["spec"]


def test_a_status_in_a_create_is_dropped_unchecked(admission: Admission) -> None:
    # The status subresource: a create (or an update of the main resource) drops the status
    # before validation; Strict decoding still refuses an unknown field in it.
    obj = load_example("minimal.yaml")
    obj["status"] = {"phase": "NotAPhase", "replicas": "many"}
    assert "status" not in admitted(admission.create(obj))
    obj["status"] = {"typo": 1}
    answer = refused(admission.create(obj), 400)
    assert answer.message == STRICT_DECODING + 'unknown field "status.typo"'


def test_a_status_in_an_update_of_the_object_is_ignored(
    admission: Admission, bases: list[dict[str, Any]]
) -> None:
    base = bases[0]
    base["status"]["phase"] = "NotAPhase"  # only a write of /status changes (and checks) it
    base["spec"]["replicas"] = 3
    stored = admitted(admission.update(base), 200)
    assert (stored["spec"]["replicas"], stored["status"]["phase"]) == (3, "Ready")
