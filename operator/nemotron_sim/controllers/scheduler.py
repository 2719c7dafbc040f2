"""Scheduling decisions: which node a pod fits on, or why none does.

A subset of kube-scheduler's filters, in its order (NodeUnschedulable, TaintToleration,
NodeAffinity, NodeResourcesFit), and its failure message format
(``0/3 nodes are available: 3 Insufficient nvidia.com/gpu.``, from
pkg/scheduler/framework/types.go ``FitError.Error``). Scoring is simplified to "least GPUs in
use, then least CPU in use, then name", which spreads like the default LeastAllocated score.
Not simulated: pod (anti-)affinity, topology spread, preemption, host ports, volume topology.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from nemotron_sim.controllers.quantity import parse_quantity

GPU_RESOURCE = "nvidia.com/gpu"
_SCHEDULING_EFFECTS = ("NoSchedule", "NoExecute")
_FINISHED_PHASES = ("Succeeded", "Failed")
_ZERO = Fraction(0)


@dataclass(frozen=True)
class Decision:
    """Either ``node`` is set, or ``message`` says why no node fits."""

    node: str | None
    message: str


def pod_requests(pod: Mapping[str, Any]) -> dict[str, Fraction]:
    """Effective requests: max(sum of containers, largest init container), per resource.

    Limits stand in for missing requests, as the API server defaults them.
    """
    spec = pod.get("spec") or {}
    total: dict[str, Fraction] = {}
    for container in spec.get("containers") or []:
        for name, amount in _container_requests(container).items():
            total[name] = total.get(name, Fraction(0)) + amount
    for container in spec.get("initContainers") or []:
        for name, amount in _container_requests(container).items():
            total[name] = max(total.get(name, Fraction(0)), amount)
    return total


def _container_requests(container: Mapping[str, Any]) -> dict[str, Fraction]:
    resources = container.get("resources") or {}
    merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    return {name: parse_quantity(amount) for name, amount in merged.items()}


Usage = dict[str, dict[str, Fraction]]


def node_usage(pods: Iterable[Mapping[str, Any]]) -> Usage:
    """Requests per node of the bound pods that still hold their resources (one pass)."""
    usage: Usage = {}
    for pod in pods:
        node_name = (pod.get("spec") or {}).get("nodeName")
        if not node_name or (pod.get("status") or {}).get("phase") in _FINISHED_PHASES:
            continue
        add_usage(usage, node_name, pod_requests(pod))
    return usage


def add_usage(usage: Usage, node_name: str, requests: Mapping[str, Fraction]) -> None:
    used = usage.setdefault(node_name, {})
    for name, amount in requests.items():
        used[name] = used.get(name, Fraction(0)) + amount


def tolerates(tolerations: Iterable[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    for toleration in tolerations:
        effect = toleration.get("effect") or ""
        if effect and effect != taint.get("effect"):
            continue
        key = toleration.get("key") or ""
        operator = toleration.get("operator") or "Equal"
        if operator == "Exists":
            if not key or key == taint.get("key"):
                return True
        elif key == taint.get("key") and (toleration.get("value") or "") == (
            taint.get("value") or ""
        ):
            return True
    return False


def _compare_int(label: str, bound: str, greater: bool) -> bool:
    try:
        value, limit = int(label), int(bound)
    except ValueError:
        return False
    return value > limit if greater else value < limit


def _expression_matches(expression: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key = expression.get("key", "")
    operator = expression.get("operator", "")
    values = [str(v) for v in expression.get("values") or []]
    label = labels.get(key)
    if operator in ("Gt", "Lt"):
        return (
            label is not None
            and len(values) == 1
            and _compare_int(label, values[0], operator == "Gt")
        )
    checks = {
        "In": label is not None and label in values,
        "NotIn": label is None or label not in values,
        "Exists": label is not None,
        "DoesNotExist": label is None,
    }
    return checks.get(operator, False)


def _term_matches(term: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    labels = node.get("metadata", {}).get("labels") or {}
    fields = {"metadata.name": node.get("metadata", {}).get("name", "")}
    expressions = term.get("matchExpressions") or []
    field_expressions = term.get("matchFields") or []
    if not expressions and not field_expressions:
        return False  # an empty term matches no node (k8s.io/component-helpers nodeaffinity)
    return all(_expression_matches(e, labels) for e in expressions) and all(
        _expression_matches(e, fields) for e in field_expressions
    )


def matches_node_selection(pod: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """nodeSelector and required node affinity (terms ORed, expressions ANDed)."""
    spec = pod.get("spec") or {}
    labels = node.get("metadata", {}).get("labels") or {}
    for key, value in (spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms")
    if terms is None:
        return True
    return any(_term_matches(term, node) for term in terms)


def filter_node(
    pod: Mapping[str, Any],
    node: Mapping[str, Any],
    used: Mapping[str, Fraction],
    requests: Mapping[str, Fraction] | None = None,
) -> list[str]:
    """Reasons ``node`` cannot take ``pod``, in kube-scheduler's wording; empty when it fits.

    ``requests`` saves recomputing ``pod_requests(pod)`` for every node.
    """
    node_spec = node.get("spec") or {}
    if node_spec.get("unschedulable"):
        return ["node(s) were unschedulable"]
    tolerations = (pod.get("spec") or {}).get("tolerations") or []
    for taint in node_spec.get("taints") or []:
        if taint.get("effect") in _SCHEDULING_EFFECTS and not tolerates(tolerations, taint):
            key, value = taint.get("key", ""), taint.get("value", "")
            return [f"node(s) had untolerated taint {{{key}: {value}}}"]
    if not matches_node_selection(pod, node):
        return ["node(s) didn't match Pod's node affinity/selector"]
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    reasons = []
    wanted = pod_requests(pod) if requests is None else requests
    for name, amount in sorted(wanted.items()):
        if amount <= 0:
            continue
        available = parse_quantity(allocatable.get(name, 0)) - used.get(name, Fraction(0))
        if amount > available:
            reasons.append(f"Insufficient {name}")
    return reasons


def unschedulable_message(node_count: int, reasons: Counter[str]) -> str:
    histogram = sorted(f"{count} {reason}" for reason, count in reasons.items())
    message = f"0/{node_count} nodes are available"
    if histogram:
        message += ": " + ", ".join(histogram)
    return message + "."


def schedule(pod: Mapping[str, Any], nodes: Sequence[Mapping[str, Any]], usage: Usage) -> Decision:
    """Pick a node for ``pod`` given every node and what bound pods already use (``node_usage``).

    The caller adds the pod's requests to ``usage`` after binding it, so a batch of pending pods
    is scheduled with one pass over the existing pods.
    """
    candidates: list[tuple[Fraction, Fraction, str]] = []
    requests = pod_requests(pod)
    # Whether a node fits does not depend on the order of the checks: GPUs first, as most
    # nodes that do not fit are out of GPUs. The reasons are only needed when none fits.
    wanted = sorted(
        ((k, v) for k, v in requests.items() if v > 0), key=lambda i: (i[0] != GPU_RESOURCE, i[0])
    )
    for node in nodes:
        name = node.get("metadata", {}).get("name", "")
        used = usage.get(name, {})
        if _fits(pod, node, used, wanted):
            candidates.append((used.get(GPU_RESOURCE, _ZERO), used.get("cpu", _ZERO), name))
    if not candidates:
        reasons: Counter[str] = Counter()
        for node in nodes:
            used = usage.get(node.get("metadata", {}).get("name", ""), {})
            reasons.update(filter_node(pod, node, used, requests))
        return Decision(None, unschedulable_message(len(nodes), reasons))
    chosen = min(candidates)[2]
    return Decision(chosen, f"Successfully assigned to {chosen}")


def _fits(
    pod: Mapping[str, Any],
    node: Mapping[str, Any],
    used: Mapping[str, Fraction],
    wanted: list[tuple[str, Fraction]],
) -> bool:
    """``not filter_node(...)``, stopping at the first check that fails (``wanted``: the
    positive requests). It raises where filter_node would: on a node whose allocatable
    amounts are not quantities."""
    node_spec = node.get("spec") or {}
    if node_spec.get("unschedulable"):
        return False
    tolerations = (pod.get("spec") or {}).get("tolerations") or []
    for taint in node_spec.get("taints") or []:
        if taint.get("effect") in _SCHEDULING_EFFECTS and not tolerates(tolerations, taint):
            return False
    if not matches_node_selection(pod, node):
        return False
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    # parsed in filter_node's order, so that a bad amount fails as it does
    capacity = {name: parse_quantity(allocatable.get(name, 0)) for name, _ in sorted(wanted)}
    return all(_at_most(amount, capacity[name], used.get(name, _ZERO)) for name, amount in wanted)


def _at_most(amount: Fraction, capacity: Fraction, used: Fraction) -> bool:
    """``amount <= capacity - used``; in plain ints when all three are whole (GPUs, memory),
    which is the same comparison without creating a Fraction."""
    if amount.denominator == capacity.denominator == used.denominator == 1:
        return amount.numerator <= capacity.numerator - used.numerator
    return amount <= capacity - used
