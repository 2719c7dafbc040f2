"""A NemotronDeployment from a file, checked without a cluster as kube-apiserver would admit it.

The pydantic models (``nemotron_operator.api``) check what the CRD's OpenAPI schema says: types,
bounds, enums, patterns, required and unknown fields. Three things kube-apiserver does are not
in the models, so ``plan -f`` and ``render -f`` do them here, reading the CRD the models
generate (``nemotron_operator.crd``), so that a file the cluster would refuse is refused with the
same field and message, and one it would admit is not refused:

- the CEL rules (``x-kubernetes-validations``): each has a Python reading below, keyed by the
  rule's text; the message and field path are the CRD's own. Transition rules (``oldSelf``,
  such as the immutable ``spec.model.id``) compare with the stored object and stay
  kube-apiserver's (tests/unit/test_cli_checks.py fails when the CRD has a rule with neither);
- ``null`` in a field that is not nullable is pruned (then defaulted), not refused;
- ``metadata.name`` must be a DNS subdomain;
- a ``status`` in the file is dropped unchecked, as kube-apiserver drops it on create (the
  status subresource); plan and render never read it. (kube-apiserver's strict decoding still
  refuses an unknown field under it; the CLI does not look.)
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nemotron_operator.api import NemotronDeployment
    from nemotron_operator.api.errors import FieldError

Schema = dict[str, Any]
RULES = "x-kubernetes-validations"
# kube-apiserver's metadata.name check (apimachinery IsDNS1123Subdomain), with its message.
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_SUBDOMAIN_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com')"
)


def _get(value: Any, path: str) -> Any:
    """``value.a.b`` of a wire object, or None when any part is absent (CEL's ``has``)."""
    for part in path.split("."):
        if not isinstance(value, dict) or value.get(part) is None:
            return None
        value = value[part]
    return value


def _has(value: Any, path: str) -> bool:
    return _get(value, path) is not None


def _gpu_split(test: Callable[[int, int, int | None], bool]) -> Callable[[Any], bool]:
    def reading(spec: Any) -> bool:
        count = _get(spec, "capacity.gpu.count")
        tensor = _get(spec, "capacity.parallelism.tensor")
        if count is None or tensor is None:
            return True
        return test(count, tensor, _get(spec, "capacity.parallelism.pipeline"))

    return reading


def _speculative(method: str, ok: Callable[[int], bool]) -> Callable[[Any], bool]:
    def reading(value: Any) -> bool:
        tokens = _get(value, "numSpeculativeTokens")
        return value.get("method") != method or tokens is None or ok(tokens)

    return reading


# The CRD's CEL rules, by their text, read in Python on the wire form (camelCase, defaults
# applied) of the value the rule is attached to (``self``).
READINGS: dict[str, Callable[[Any], bool]] = {
    "!has(self.storage) || !has(self.model.source) || !has(self.model.source.pvc)": lambda s: (
        not (_has(s, "storage") and _has(s, "model.source.pvc"))
    ),
    "!has(self.capacity) || !has(self.capacity.gpu) || !has(self.capacity.gpu.count) || "
    "!has(self.capacity.parallelism) || !has(self.capacity.parallelism.tensor) || "
    "self.capacity.gpu.count % self.capacity.parallelism.tensor == 0": _gpu_split(
        lambda count, tensor, _: count % tensor == 0
    ),
    "!has(self.capacity) || !has(self.capacity.gpu) || !has(self.capacity.gpu.count) || "
    "!has(self.capacity.parallelism) || !has(self.capacity.parallelism.tensor) || "
    "!has(self.capacity.parallelism.pipeline) || "
    "self.capacity.gpu.count == self.capacity.parallelism.tensor * "
    "self.capacity.parallelism.pipeline": _gpu_split(
        lambda count, tensor, pipeline: pipeline is None or count == tensor * pipeline
    ),
    "!has(self.storage) || !has(self.model.source) || !has(self.model.source.objectStore)": (
        lambda s: not (_has(s, "storage") and _has(s, "model.source.objectStore"))
    ),
    "(has(self.huggingFace) ? 1 : 0) + (has(self.pvc) ? 1 : 0) + "
    "(has(self.objectStore) ? 1 : 0) == 1": lambda s: (
        [_has(s, "huggingFace"), _has(s, "pvc"), _has(s, "objectStore")].count(True) == 1
    ),
    "self.startsWith('s3://') || self.startsWith('gs://')": lambda s: s.startswith(
        ("s3://", "gs://")
    ),
    "has(self.pvc) != has(self.huggingFace)": lambda s: _has(s, "pvc") != _has(s, "huggingFace"),
    "!has(self.maxCpuLoras) || self.maxCpuLoras >= self.maxLoras": lambda s: (
        not _has(s, "maxCpuLoras") or s["maxCpuLoras"] >= s["maxLoras"]
    ),
    "!(has(self.reasoningParser) && has(self.reasoningParserPlugin))": lambda s: (
        not (_has(s, "reasoningParser") and _has(s, "reasoningParserPlugin"))
    ),
    "self > 0.0 && self < 1.0": lambda s: 0.0 < s < 1.0,
    "self.method != 'mtp' || !has(self.numSpeculativeTokens) || "
    "(self.numSpeculativeTokens >= 1 && self.numSpeculativeTokens <= 8)": _speculative(
        "mtp", lambda tokens: 1 <= tokens <= 8
    ),
    "self.method != 'none' || !has(self.numSpeculativeTokens) || "
    "self.numSpeculativeTokens == 0": _speculative("none", lambda tokens: tokens == 0),
    "self in [1, 2, 4, 8, 16, 32, 64]": lambda s: s in (1, 2, 4, 8, 16, 32, 64),
    "self.minReplicas <= self.maxReplicas": lambda s: s["minReplicas"] <= s["maxReplicas"],
    "!has(self.idleSeconds) || self.minReplicas == 0": lambda s: (
        not _has(s, "idleSeconds") or s["minReplicas"] == 0
    ),
    "self.metric != 'kvCacheUsage' || self.value <= 1.0": lambda s: (
        s["metric"] != "kvCacheUsage" or s["value"] <= 1.0
    ),
    "self.provisioner != 'Karpenter' || has(self.karpenter)": lambda s: (
        s["provisioner"] != "Karpenter" or _has(s, "karpenter")
    ),
    "!has(self.karpenter) || self.provisioner == 'Karpenter'": lambda s: (
        not _has(s, "karpenter") or s["provisioner"] == "Karpenter"
    ),
    "!self.shared || self.accessModes.exists(m, m == 'ReadWriteMany')": lambda s: (
        not s["shared"] or "ReadWriteMany" in s["accessModes"]
    ),
    "!has(self.httpRoute) || self.enabled": lambda s: not _has(s, "httpRoute") or s["enabled"],
    "!self.enabled || size(self.apiFromNamespaces) > 0": lambda s: (
        not s["enabled"] or len(s["apiFromNamespaces"]) > 0
    ),
    "!has(self.deviceClassName) || self.allocation == 'DRA'": lambda s: (
        not _has(s, "deviceClassName") or s.get("allocation") == "DRA"
    ),
}
# Rules that compare with the stored object: only kube-apiserver can check them.
TRANSITION_RULES = frozenset({"self == oldSelf"})


@cache
def _schema() -> Schema:
    from nemotron_operator.crd import build_crd  # noqa: PLC0415

    schema: Schema = build_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def parse(obj: dict[str, Any]) -> NemotronDeployment:
    """``obj`` as the operator would read it once kube-apiserver admitted it, or
    :class:`~nemotron_operator.api.errors.SpecError` naming every field it would refuse."""
    from nemotron_operator.api.errors import FieldError, SpecError, parse_deployment  # noqa: PLC0415

    schema = _schema()
    pruned = prune_nulls({k: v for k, v in obj.items() if k != "status"}, schema)
    metadata = pruned.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    errors: list[FieldError] = []
    if isinstance(name, str) and not _SUBDOMAIN.match(name):
        errors.append(FieldError("metadata.name", f"Invalid value: {name!r}: {_SUBDOMAIN_MESSAGE}"))
    try:
        deployment = parse_deployment(pruned)
    except SpecError as exc:
        raise SpecError([*errors, *exc.errors], name=exc.name) from exc
    errors += rule_errors(deployment.spec.to_wire(), schema["properties"]["spec"], "spec")
    if errors:
        raise SpecError(errors, name=deployment.metadata.name)
    return deployment


def prune_nulls(value: Any, schema: Schema) -> Any:
    """A copy of ``value`` without the nulls of fields that are not nullable, as kube-apiserver
    prunes them before it applies defaults."""
    if isinstance(value, dict) and "properties" in schema:
        props: dict[str, Schema] = schema["properties"]
        return {
            key: prune_nulls(item, props.get(key, {}))
            for key, item in value.items()
            if not (item is None and key in props and not props[key].get("nullable"))
        }
    if isinstance(value, dict) and isinstance(schema.get("additionalProperties"), dict):
        extra: Schema = schema["additionalProperties"]
        return {key: prune_nulls(item, extra) for key, item in value.items()}
    if isinstance(value, list) and "items" in schema:
        return [prune_nulls(item, schema["items"]) for item in value]
    return value


def _show(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))  # 1, as the file says, not 1.0
    if isinstance(value, str):
        return json.dumps(value)  # "s3://…", quoted as kube-apiserver quotes a string
    return repr(value)


def rule_errors(value: Any, schema: Schema, path: str) -> list[FieldError]:
    """Every CEL rule under ``schema`` that ``value`` breaks (transition rules aside)."""
    from nemotron_operator.api.errors import FieldError  # noqa: PLC0415

    if value is None:
        return []
    errors: list[FieldError] = []
    for rule in schema.get(RULES, []):
        text = rule["rule"]
        if text in TRANSITION_RULES:
            continue
        reading = READINGS.get(text)
        if reading is None:  # a new rule without a reading: tests/unit/test_cli_checks.py
            raise LookupError(f"no offline reading of the CRD rule {text!r} at {path}")
        if not reading(value):
            where = path + rule.get("fieldPath", "")
            shown = "" if isinstance(value, (dict, list)) else f"Invalid value: {_show(value)}: "
            errors.append(FieldError(where, shown + rule["message"]))
    if isinstance(value, dict):
        props: dict[str, Schema] = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            if key in props:
                errors += rule_errors(item, props[key], f"{path}.{key}")
            elif isinstance(extra, dict):
                errors += rule_errors(item, extra, f"{path}.{key}")
    elif isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            errors += rule_errors(item, schema["items"], f"{path}[{index}]")
    return errors
