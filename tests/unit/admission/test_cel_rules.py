"""Every CEL rule of the CRD, with an object it admits and one it refuses naming the field.

``test_every_rule_is_covered`` fails when a rule is added to the API without a case here.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from nemotron_operator.admission import validate_object
from nemotron_operator.crd import build_crd
from tests.unit.admission.conftest import load_example, refused

Obj = dict[str, Any]


def _rules(node: Any) -> list[str]:
    found: list[str] = []
    if isinstance(node, dict):
        found += [r["rule"] for r in node.get("x-kubernetes-validations", [])]
        for value in node.values():
            found += _rules(value)
    elif isinstance(node, list):
        for value in node:
            found += _rules(value)
    return found


@dataclass(frozen=True)
class Case:
    rule_fragment: str  # identifies the rule in the CRD
    passing: Callable[[Obj], None]
    failing: Callable[[Obj], None]
    field: str
    message: str


def _spec(obj: Obj) -> Obj:
    spec: Obj = obj["spec"]
    return spec


def _set(path: str, value: Any) -> Callable[[Obj], None]:
    def mutate(obj: Obj) -> None:
        node = obj
        *parents, last = path.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value

    return mutate


def _both(*mutations: Callable[[Obj], None]) -> Callable[[Obj], None]:
    def mutate(obj: Obj) -> None:
        for m in mutations:
            m(obj)

    return mutate


def _drop(path: str) -> Callable[[Obj], None]:
    def mutate(obj: Obj) -> None:
        node = obj
        *parents, last = path.split(".")
        for part in parents:
            node = node[part]
        node.pop(last, None)

    return mutate


KARPENTER = {"nodeClassRef": {"name": "gpu"}}
PLUGIN = {"configMapName": "p", "fileName": "p.py", "parserName": "super_v3"}

CASES = [
    Case(
        "has(self.huggingFace) != has(self.pvc)",
        _both(_drop("spec.storage"), _set("spec.model.source", {"pvc": {"claimName": "weights"}})),
        _both(
            _drop("spec.storage"),
            _set("spec.model.source", {"huggingFace": {}, "pvc": {"claimName": "weights"}}),
        ),
        "spec.model.source",
        "exactly one of spec.model.source.huggingFace or spec.model.source.pvc",
    ),
    Case(
        "self.method != 'mtp'",
        _set("spec.engine.speculativeDecoding", {"method": "mtp", "numSpeculativeTokens": 8}),
        _set("spec.engine.speculativeDecoding", {"method": "mtp", "numSpeculativeTokens": 9}),
        "spec.engine.speculativeDecoding.numSpeculativeTokens",
        "between 1 and 8 when method is mtp",
    ),
    Case(
        "self.method != 'none'",
        _set("spec.engine.speculativeDecoding", {"method": "none"}),
        _set("spec.engine.speculativeDecoding", {"method": "none", "numSpeculativeTokens": 2}),
        "spec.engine.speculativeDecoding.numSpeculativeTokens",
        "must be 0 or unset when method is none",
    ),
    Case(
        "!(has(self.reasoningParser) && has(self.reasoningParserPlugin))",
        _both(
            _drop("spec.engine.reasoningParser"), _set("spec.engine.reasoningParserPlugin", PLUGIN)
        ),
        _set("spec.engine.reasoningParserPlugin", PLUGIN),
        "spec.engine",
        "either reasoningParser",
    ),
    Case(
        "self > 0.0 && self < 1.0",
        _set("spec.engine.gpuMemoryUtilization", 0.95),
        _set("spec.engine.gpuMemoryUtilization", 1),
        "spec.engine.gpuMemoryUtilization",
        "greater than 0 and less than 1",
    ),
    Case(
        "self in [1, 2, 4, 8, 16, 32, 64]",
        _set("spec.capacity.parallelism.tensor", 64),
        _set("spec.capacity.parallelism.tensor", 6),
        "spec.capacity.parallelism.tensor",
        "power of two no larger than 64",
    ),
    Case(
        "self.provisioner != 'Karpenter' || has(self.karpenter)",
        _set("spec.nodePool", {"provisioner": "Karpenter", "karpenter": KARPENTER}),
        _set("spec.nodePool", {"provisioner": "Karpenter"}),
        "spec.nodePool.karpenter",
        "required when provisioner is Karpenter",
    ),
    Case(
        "!has(self.karpenter) || self.provisioner == 'Karpenter'",
        _set("spec.nodePool", {"provisioner": "None"}),
        _set("spec.nodePool", {"provisioner": "None", "karpenter": KARPENTER}),
        "spec.nodePool.provisioner",
        "set provisioner: Karpenter or remove nodePool.karpenter",
    ),
    Case(
        "!self.shared || self.accessModes.exists",
        _set("spec.storage.cache", {"shared": True, "accessModes": ["ReadWriteMany"]}),
        _set("spec.storage.cache", {"shared": True, "accessModes": ["ReadWriteOnce"]}),
        "spec.storage.cache.accessModes",
        "shared cache needs accessModes to include ReadWriteMany",
    ),
    Case(
        "!has(self.storage) || !has(self.model.source)",
        _both(_drop("spec.storage"), _set("spec.model.source", {"pvc": {"claimName": "w"}})),
        _set("spec.model.source", {"pvc": {"claimName": "w"}}),
        "spec.storage",
        "does not apply when weights come from spec.model.source.pvc",
    ),
    Case(
        "self.capacity.gpu.count % self.capacity.parallelism.tensor == 0",
        _both(_set("spec.capacity.gpu.count", 8), _set("spec.capacity.parallelism.tensor", 4)),
        _both(_set("spec.capacity.gpu.count", 6), _set("spec.capacity.parallelism.tensor", 4)),
        "spec.capacity.gpu.count",
        "multiple of capacity.parallelism.tensor",
    ),
    Case(
        "self.capacity.gpu.count == self.capacity.parallelism.tensor *",
        _set("spec.capacity", {"gpu": {"count": 8}, "parallelism": {"tensor": 4, "pipeline": 2}}),
        _set("spec.capacity", {"gpu": {"count": 4}, "parallelism": {"tensor": 4, "pipeline": 2}}),
        "spec.capacity.gpu.count",
        "equal parallelism.tensor × parallelism.pipeline",
    ),
    Case(
        "self.minReplicas <= self.maxReplicas",
        _set("spec.autoscaling", {"minReplicas": 2, "maxReplicas": 2}),
        _set("spec.autoscaling", {"minReplicas": 3, "maxReplicas": 2}),
        "spec.autoscaling.minReplicas",
        "must not exceed autoscaling.maxReplicas",
    ),
    Case(
        "self.metric != 'kvCacheUsage' || self.value <= 1.0",
        _set(
            "spec.autoscaling",
            {"maxReplicas": 4, "target": {"metric": "kvCacheUsage", "value": 0.8}},
        ),
        _set(
            "spec.autoscaling", {"maxReplicas": 4, "target": {"metric": "kvCacheUsage", "value": 4}}
        ),
        "spec.autoscaling.target.value",
        "is a fraction (0-1] for kvCacheUsage",
    ),
]


@pytest.fixture(scope="module")
def crd() -> Obj:
    return build_crd()


def _full() -> Obj:
    return copy.deepcopy(load_example("super-vl-bf16-h200.yaml"))


def test_every_rule_is_covered(crd: Obj) -> None:
    rules = _rules(crd)
    uncovered = [r for r in rules if not any(c.rule_fragment in r for c in CASES)]
    # model.id immutability is a transition rule, tested on update below.
    assert uncovered == ["self == oldSelf"]
    for case in CASES:
        assert sum(case.rule_fragment in r for r in rules) == 1, case.rule_fragment


@pytest.mark.parametrize("case", CASES, ids=[c.field + ":" + c.message[:30] for c in CASES])
def test_rule_admits_the_good_and_refuses_the_bad(crd: Obj, case: Case) -> None:
    good, bad = _full(), _full()
    case.passing(good)
    validate_object(crd, good)
    case.failing(bad)
    error = refused(crd, bad)
    assert [(c.field, case.message in c.message) for c in error.causes] == [(case.field, True)]
    # As kubectl apply shows it: the kind, the name, the field path and the rule's message.
    assert str(error).startswith(
        'NemotronDeployment.serving.nemotron.io "super-vl-bf16" is invalid: ' + case.field
    )


def test_model_id_is_immutable_on_update(crd: Obj) -> None:
    old = validate_object(crd, _full())
    same = copy.deepcopy(old)
    same["spec"]["replicas"] = 3
    validate_object(crd, same, old)  # other fields may change
    changed = copy.deepcopy(old)
    changed["spec"]["model"]["id"] = "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8"
    error = refused(crd, changed, old)
    assert [c.field for c in error.causes] == ["spec.model.id"]
    assert "spec.model.id is immutable" in str(error)


def test_transition_rules_do_not_run_on_create(crd: Obj) -> None:
    validate_object(crd, _full(), None)


def test_cel_sees_yaml_integers_in_number_fields_as_doubles(crd: Obj) -> None:
    obj = _full()
    _set("spec.engine.gpuMemoryUtilization", 0)(obj)
    error = refused(crd, obj)
    assert "rule evaluation error" not in str(error)
    assert error.causes[0].field == "spec.engine.gpuMemoryUtilization"


def test_type_errors_stop_cel_like_the_api_server(crd: Obj) -> None:
    obj = _full()
    _set("spec.replicas", "two")(obj)
    _set("spec.capacity.parallelism.tensor", 3)(obj)
    error = refused(crd, obj)
    assert [c.field for c in error.causes] == ["spec.replicas"]


def test_unchanged_values_are_not_rechecked_on_update(crd: Obj) -> None:
    # Stored before a rule existed (or written by an older schema): the spec breaks a rule.
    old = validate_object(crd, _full())
    old["spec"]["capacity"]["parallelism"]["tensor"] = 6
    status_only = copy.deepcopy(old)
    status_only["status"] = {"phase": "Pending"}
    validate_object(crd, status_only, old)  # a status write does not re-run the spec's rules
    touched = copy.deepcopy(old)
    touched["spec"]["capacity"]["parallelism"]["tensor"] = 12
    error = refused(crd, touched, old)
    assert [c.field for c in error.causes] == ["spec.capacity.parallelism.tensor"]
