"""How kube-apiserver evaluates CEL rules, on a small CRD of the test's own: a rule that fails,
a rule whose evaluation errs (both refuse the object), and CEL's int and double kept apart.

The project's rules are written against these semantics (``self > 0.0`` on a number field,
``self in [1, 2, 4, ...]`` on an integer one); this pins them where a rule writer can read them.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.admission.conftest import Admission, admitted, refused, temporary_crd

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"count": {"type": "integer"}, "ratio": {"type": "number"}},
    "x-kubernetes-validations": [
        {"rule": "!has(self.count) || self.count < 3", "message": "count too big"},
        {"rule": "!has(self.ratio) || self.ratio < 0.5", "message": "ratio too big"},
        {"rule": "!has(self.count) || self.count / 0 == 1"},  # an evaluation error
    ],
}
DIVIDE = (
    'Invalid value: "object": division by zero evaluating rule: '
    "!has(self.count) || self.count / 0 == 1"
)


@pytest.fixture(scope="module")
def send(admission: Admission) -> Iterator[Any]:
    group = f"cel-{secrets.token_hex(3)}.admission-test.nemotron.io"
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"celprobes.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"kind": "CelProbe", "plural": "celprobes"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "properties": {"spec": SCHEMA}}
                    },
                }
            ],
        },
    }
    path = f"/apis/{group}/v1/namespaces/{admission.namespace}/celprobes"

    def messages(spec_json: str) -> list[str]:
        """The causes' messages for a dry-run create of ``spec`` (JSON text, sent verbatim)."""
        body = f'{{"apiVersion": "{group}/v1", "kind": "CelProbe", "metadata": {{"name": "x"}}, '
        answer = admission.api.dry_run("POST", path, body + f'"spec": {spec_json}}}')
        if answer.code == 201:
            assert admitted(answer)["spec"] == json.loads(spec_json)
            return []
        return [c.message for c in refused(answer).causes]

    with temporary_crd(admission.api, crd):
        yield messages


def test_failed_rules_and_evaluation_errors_both_refuse(send: Any) -> None:
    assert send('{"ratio": 0.25}') == []
    assert send('{"ratio": 0}') == []
    assert send('{"ratio": 1}') == ["Invalid value: ratio too big"]
    assert send('{"ratio": 0.75}') == ["Invalid value: ratio too big"]
    # Every object with a count divides by zero: the error refuses it, whatever else holds.
    assert send('{"count": 1, "ratio": 0.25}') == [DIVIDE]
    assert send('{"count": 2}') == [DIVIDE]
    assert send('{"count": 3}') == ["Invalid value: count too big", DIVIDE]


def test_an_int_and_a_double_are_different_values(send: Any) -> None:
    # 2.0 passes the schema's ``integer`` (it is integral) but reaches CEL as a double, where an
    # integer is declared: every rule that reads it errs.
    expected = 'Invalid value: "object": invalid data, expected int, got float64 evaluating rule: '
    assert send('{"count": 2.0}') == [
        expected + "count too big",
        expected + "!has(self.count) || self.count / 0 == 1",
    ]
    # A fraction is not an integer: a schema error, and then no rule runs.
    assert send('{"count": 2.5}') == [
        'Invalid value: "number": spec.count in body must be of type integer: "number"',
        'Invalid value: "": Checked value must be of type integer (default format) in spec.count',
        "Invalid value: null: some validation rules were not checked because the object was "
        "invalid; correct the existing errors to complete validation",
    ]
