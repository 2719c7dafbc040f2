"""Every CEL rule of the CRD, in kube-apiserver: an object it admits, and one it refuses naming
the field with the rule's message.

``test_every_rule_is_covered`` fails when a rule is added to the API without a case here. As
kube-apiserver words a failed rule: ``Invalid value: <value>: <message>`` when the rule's
``self`` is a scalar, ``Invalid value: <message>`` when it is an object or a list.
"""

from __future__ import annotations

import copy
import secrets
from collections.abc import Iterator
from typing import Any

import pytest

from nemotron_operator.kube.transport import MERGE
from tests.cel_cases import CASES, Case, Obj, set_
from tests.integration.admission.apiserver import Cause
from tests.integration.admission.conftest import (
    NOT_CHECKED,
    Admission,
    admitted,
    apply_crd,
    refused,
    temporary_crd,
    wait_for,
)
from tests.integration.admission.objects import crd_file, load_example, open_api_schema

NEW_MODEL = "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8"


def _rules(node: Any) -> list[dict[str, str]]:
    found: list[dict[str, str]] = []
    if isinstance(node, dict):
        found += node.get("x-kubernetes-validations", [])
        for value in node.values():
            found += _rules(value)
    elif isinstance(node, list):
        for value in node:
            found += _rules(value)
    return found


RULES = _rules(open_api_schema(crd_file()))


def _rule_message(case: Case) -> str:
    (rule,) = [r for r in RULES if case.rule_fragment in r["rule"]]
    return rule["message"]


def _full() -> Obj:
    return copy.deepcopy(load_example("super-vl-bf16-h200.yaml"))


def test_every_rule_is_covered(admission: Admission) -> None:
    rules = [r["rule"] for r in _rules(open_api_schema(admission.crd))]  # as served
    uncovered = [r for r in rules if not any(c.rule_fragment in r for c in CASES)]
    # model.id immutability is a transition rule, tested on update below.
    assert uncovered == ["self == oldSelf"]
    for case in CASES:
        assert sum(case.rule_fragment in r for r in rules) == 1, case.rule_fragment


@pytest.mark.parametrize("case", CASES, ids=[c.field + ":" + c.message[:30] for c in CASES])
def test_rule_admits_the_good_and_refuses_the_bad(admission: Admission, case: Case) -> None:
    good, bad = _full(), _full()
    case.passing(good)
    admitted(admission.create(good))
    case.failing(bad)
    answer = refused(admission.create(bad))
    message = _rule_message(case)
    assert case.message in message
    shown = f"Invalid value: {case.shown}: " if case.shown else "Invalid value: "
    assert answer.causes == [Cause(case.field, shown + message, "FieldValueInvalid")], answer
    # As kubectl apply shows it: the kind, the name, the field path and the rule's message.
    assert answer.message == (
        f'NemotronDeployment.serving.nemotron.io "super-vl-bf16" is invalid: '
        f"{case.field}: {shown}{message}"
    )


@pytest.fixture
def stored(admission: Admission) -> Iterator[Obj]:
    """The full example, really stored (a name of the test's own), deleted afterwards."""
    obj = _full()
    name = obj["metadata"]["name"] = f"stored-{secrets.token_hex(3)}"
    yield admission.store(obj)
    admission.api.request("DELETE", admission.api.path(admission.namespace, name))


def test_model_id_is_immutable_on_update(admission: Admission, stored: Obj) -> None:
    name = stored["metadata"]["name"]
    # Other fields may change: a merge patch and a whole-object update.
    assert admitted(admission.patch(name, {"spec": {"replicas": 3}}), 200)["spec"]["replicas"] == 3
    same = copy.deepcopy(stored)
    same["spec"]["replicas"] = 3
    admitted(admission.update(same), 200)
    changed = copy.deepcopy(stored)
    changed["spec"]["model"]["id"] = NEW_MODEL
    immutable = Cause(
        "spec.model.id",
        f'Invalid value: "{NEW_MODEL}": spec.model.id is immutable: create a new '
        "NemotronDeployment to serve another model",
        "FieldValueInvalid",
    )
    for answer in (
        admission.update(changed),
        admission.patch(name, {"spec": {"model": {"id": NEW_MODEL}}}),
    ):
        assert refused(answer).causes == [immutable], answer


def test_transition_rules_do_not_run_on_create(admission: Admission) -> None:
    obj = _full()
    obj["spec"]["model"]["id"] = NEW_MODEL  # no old object: nothing to be immutable against
    assert admitted(admission.create(obj))["spec"]["model"]["id"] == NEW_MODEL


def test_cel_sees_yaml_integers_in_number_fields_as_doubles(admission: Admission) -> None:
    # ``0`` in JSON is an integer; the field is a number, and ``self > 0.0`` compares doubles.
    obj = _full()
    set_("spec.engine.gpuMemoryUtilization", 0)(obj)
    answer = refused(admission.create(obj))
    # By field, not by position: inserting a case before it must not pick another rule.
    (case,) = [c for c in CASES if c.field == "spec.engine.gpuMemoryUtilization"]
    message = _rule_message(case)
    assert answer.causes == [
        Cause(
            "spec.engine.gpuMemoryUtilization", f"Invalid value: 0: {message}", "FieldValueInvalid"
        )
    ], answer
    assert "evaluating rule" not in answer.message


def test_type_errors_stop_cel_like_the_api_server(admission: Admission) -> None:
    obj = _full()
    set_("spec.replicas", "two")(obj)
    set_("spec.capacity.parallelism.tensor", 3)(obj)  # breaks a rule that does not run
    answer = refused(admission.create(obj))
    assert answer.causes == [
        Cause(
            "spec.replicas",
            'Invalid value: "string": spec.replicas in body must be of type integer: "string"',
            "FieldValueTypeInvalid",
        ),
        # The scale subresource's specReplicasPath is checked too (its path with a dot).
        Cause(
            ".spec.replicas",
            "Invalid value: 0: .spec.replicas accessor error: two is of the type string, "
            "expected int64",
            "FieldValueInvalid",
        ),
        NOT_CHECKED,
    ], answer


def test_unchanged_values_are_not_rechecked_on_update(admission: Admission) -> None:
    """Validation ratcheting: an object stored before a rule existed can still be updated
    elsewhere, and its status written; only a changed value meets the rule.

    An object that breaks a rule cannot be stored under the project's CRD, so this runs on a
    copy of it in a group of the test's own: created without the tensor rule, the object
    stored, then the CRD updated to the real schema."""
    group = "ratcheting.admission-test.nemotron.io"
    crd = crd_file()
    crd["metadata"] = {"name": f"nemotrondeployments.{group}"}
    crd["spec"]["group"] = group
    for key in ("shortNames", "categories"):
        crd["spec"]["names"].pop(key, None)  # nd and the categories belong to the real CRD
    spec = open_api_schema(crd)["properties"]["spec"]
    tensor = spec["properties"]["capacity"]["properties"]["parallelism"]["properties"]["tensor"]
    rule = tensor.pop("x-kubernetes-validations")
    api = admission.api
    path = f"/apis/{group}/v1alpha1/namespaces/{admission.namespace}/nemotrondeployments"
    obj = _full()
    obj["apiVersion"] = f"{group}/v1alpha1"
    obj["metadata"]["namespace"] = admission.namespace
    obj["spec"]["capacity"]["parallelism"]["tensor"] = 6
    with temporary_crd(api, crd):
        created = wait_for(
            lambda: (a := api.request("POST", path, obj)).code == 201 and a.body, "a first store"
        )
        tensor["x-kubernetes-validations"] = rule
        apply_crd(api, crd)  # the project's schema, the tensor rule included
        probe = copy.deepcopy(obj)
        probe["metadata"]["name"] = "probe"
        # The new schema is in force once a create of the same spec is refused.
        refusal = wait_for(
            lambda: (a := api.dry_run("POST", path, probe)).code == 422 and a, "the new rule"
        )
        assert [c.field for c in refusal.causes] == ["spec.capacity.parallelism.tensor"]
        name = f"{path}/{obj['metadata']['name']}"
        status_only = copy.deepcopy(created)
        status_only["status"] = {"phase": "Pending"}
        admitted(api.dry_run("PUT", f"{name}/status", status_only), 200)
        admitted(api.dry_run("PATCH", name, {"spec": {"replicas": 3}}, content_type=MERGE), 200)
        touched = {"spec": {"capacity": {"parallelism": {"tensor": 12}}}}
        answer = refused(api.dry_run("PATCH", name, touched, content_type=MERGE))
        assert [c.field for c in answer.causes] == ["spec.capacity.parallelism.tensor"], answer
        assert answer.causes[0].message.startswith("Invalid value: 12: tensor parallel size")
