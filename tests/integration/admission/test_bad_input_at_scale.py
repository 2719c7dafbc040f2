"""Bad input at scale (issue 25, item 9), through the real kube-apiserver.

- **Property-based specs** (hypothesis, 300 examples): the full example mutated at 1–3 spec
  paths — known fields set to values of every JSON type, in and out of range, and unknown
  fields — sent as a server-side dry-run create with strict field validation. Each answer is
  either a refusal that names the field (a ``spec.…`` path in the message or in a cause, never
  a 5xx), or an acceptance; an accepted object, with the API server's defaults, then goes
  through the operator's own reading of it (``controller.decide.desired``: parse, plan against a GPU
  inventory, render) and ends in a stated outcome: rendered children, or a Problem with a
  reason (``InvalidSpec`` or a planner reason behind ``Feasible=False``) — never an exception.
- **50 malformed manifests through ``kubectl apply``**: each fails with kube-apiserver's own
  message (or kubectl's for text that is not YAML), naming what is wrong.

The same kind of specs applied for real to a running operator, counting its writes, are in
tests/integration/operator/test_bad_input.py (docs/reliability.md, case 9c).
"""

from __future__ import annotations

import copy
import json
import time
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nemotron_operator.api import DEFAULT_IMAGE
from nemotron_operator.controller.decide import desired
from nemotron_operator.sizing import GpuInventory
from nemotron_operator.sizing.inventory import GpuNode
from nemotron_operator.status import Problem
from tests.integration.admission.conftest import Admission
from tests.integration.admission.objects import load_example

BASE = load_example("super-vl-bf16-h200.yaml")
INVENTORY = GpuInventory(
    nodes=tuple(
        GpuNode(f"gpu-{i}", "NVIDIA-H200", gpus=8, free_gpus=8, memory_mib=143771,
                compute_capability=(9, 0))
        for i in range(2)
    )
)  # fmt: skip
STATS: dict[str, int] = {}


def leaf_paths(value: Any, prefix: str) -> list[str]:
    if isinstance(value, dict):
        out = [prefix] if prefix != "spec" else []
        for key, item in value.items():
            out += leaf_paths(item, f"{prefix}.{key}")
        return out
    return [prefix]


PATHS = sorted(
    {*leaf_paths(BASE["spec"], "spec"), "spec.replicas", "spec.engine.gpuMemoryUtilization",
     "spec.engine.maxNumSeqs", "spec.capacity.parallelism.tensor", "spec.capacity.gpu.count",
     "spec.networkPolicy.enabled", "spec.networkPolicy.apiFromNamespaces",
     "spec.autoscaling.maxReplicas", "spec.engine.extraArgs", "spec.model.servedName"}
)  # fmt: skip
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**40), max_value=2**40),
    st.sampled_from([0, 1, 2, 3, 4, 8, 64, 65, 262_144, 10**9]),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e6, max_value=1e6),
    st.sampled_from([0.0, 0.5, 0.9, 1.0, 1.5]),
    st.text(max_size=12),
    st.sampled_from(["", "Auto", "None", "mtp", "NVIDIA-H200", "nvidia/x", "A" * 300, "--x"]),
)
VALUES = st.one_of(
    SCALARS,
    st.lists(SCALARS, max_size=3),
    st.dictionaries(st.sampled_from(["enabled", "name", "x"]), SCALARS, max_size=2),
)
MUTATION = st.one_of(
    st.tuples(st.just("set"), st.sampled_from(PATHS), VALUES),
    st.tuples(st.just("unknown"), st.sampled_from(["spec", "spec.engine", "spec.capacity"]),
              st.from_regex(r"\A[a-z][A-Za-z]{2,10}\Z")),
)  # fmt: skip


def mutate(obj: dict[str, Any], mutation: tuple[str, str, Any]) -> None:
    kind, path, value = mutation
    *parents, last = path.split(".")
    node = obj
    for part in parents:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    if kind == "unknown":
        node.setdefault(last, {})
        if isinstance(node[last], dict):
            node[last][value] = 1
    else:
        node[last] = value


def names_a_spec_field(answer: Any) -> bool:
    texts = [answer.message, *(c.field + " " + c.message for c in answer.causes)]
    return any("spec." in t or "spec:" in t or '"spec' in t for t in texts)


@pytest.mark.slow
@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(mutations=st.lists(MUTATION, min_size=1, max_size=3))
def test_random_specs_are_refused_naming_the_field_or_end_in_a_stated_outcome(
    admission: Admission, mutations: list[tuple[str, str, Any]]
) -> None:
    obj = copy.deepcopy(BASE)
    obj["metadata"]["name"] = "fuzz"
    for mutation in mutations:
        mutate(obj, mutation)
    answer = admission.create(obj)
    STATS["sent"] = STATS.get("sent", 0) + 1
    assert answer.code < 500, answer
    if answer.code != 201:
        assert answer.code in (400, 422), answer
        assert names_a_spec_field(answer), answer
        STATS["refused"] = STATS.get("refused", 0) + 1
        return
    # Accepted: what the operator makes of the stored object (defaults applied by the server).
    deployment = desired.parse(answer.body, default_image=DEFAULT_IMAGE)
    outcome = desired.plan_and_render(
        deployment, INVENTORY, allow_remote_code=False, operator_namespace="nemotron-system"
    )
    if isinstance(outcome, Problem):
        assert outcome.reason, outcome
        assert outcome.message, outcome
        STATS[f"accepted, {outcome.reason}"] = STATS.get(f"accepted, {outcome.reason}", 0) + 1
    else:
        assert outcome.desired, "rendered nothing"
        STATS["accepted, rendered"] = STATS.get("accepted, rendered", 0) + 1


def test_bad_input_figures_are_printed() -> None:
    """Prints the tally of the property-based run above (it runs first, in file order)."""
    if STATS:
        print(f"\nFIGURE bad input through kube-apiserver: {json.dumps(STATS, sort_keys=True)}")


def malformed_manifests() -> list[tuple[str, str, str]]:
    """(what, manifest text, a fragment of the expected message): 50 of them."""
    good = copy.deepcopy(BASE)
    good["metadata"]["name"] = "malformed"
    table: list[tuple[str, list[Any], str]] = [
        ("spec.replicas", [-1, -5, "two", 1.5, [1]], "spec.replicas"),
        ("spec.capacity.parallelism.tensor", [3, 5, 0, 128, "four"], "parallelism.tensor"),
        ("spec.engine.gpuMemoryUtilization", [0, 1, 1.5, -0.1, "high"], "gpuMemoryUtilization"),
        ("spec.model.id", ["", "A" * 600, None, 7, ["a"]], "spec.model.id"),
        ("spec.engine.speculativeDecoding.numSpeculativeTokens", [0, 9, -1, "3", 100],
         "spec.engine.speculativeDecoding"),
        ("metadata.name", ["Bad_Name", "UPPER", "-lead", "trail-", "a" * 260], "metadata.name"),
        ("spec.networkPolicy", [{"enabled": True}, {"enabled": True, "apiFromNamespaces": []},
                                {"enabled": "yes"}, {"apiFromNamespaces": ["Not_A_Namespace"]},
                                {"enabled": True, "apiFromNamespaces": ["a" * 64]}],
         "spec.networkPolicy"),
    ]  # fmt: skip
    cases: list[tuple[str, str, str]] = []
    for path, values, expect in table:
        for value in values:
            obj = copy.deepcopy(good)
            if path.endswith("numSpeculativeTokens"):
                obj["spec"]["engine"]["speculativeDecoding"] = {"method": "mtp"}
            mutate(obj, ("set", path, value))
            cases.append((f"{path}={str(value)[:20]}", yaml.safe_dump(obj), expect))
    for where, keys in (
        ("spec", ["replica", "modle", "engin", "capacty", "gatway"]),
        ("spec.engine", ["maxModelLength", "image_", "tp", "quantisation", "gpuMem"]),
    ):
        for key in keys:
            obj = copy.deepcopy(good)
            mutate(obj, ("set", f"{where}.{key}", 1))
            cases.append((f"{where}.{key}", yaml.safe_dump(obj), f'unknown field "{where}.{key}"'))
    without = {k: v for k, v in good.items() if k not in ("kind", "apiVersion")}
    cases += [
        ("no kind", yaml.safe_dump({**without, "apiVersion": good["apiVersion"]}), "kind"),
        ("no apiVersion", yaml.safe_dump({**without, "kind": good["kind"]}), "apiVersion"),
        ("unknown version", yaml.safe_dump({**good, "apiVersion": "serving.nemotron.io/v9"}),
         "no matches for kind"),
        ("spec a list", yaml.safe_dump({**good, "spec": [1]}), "spec"),
        ("not YAML", "apiVersion: [unclosed\nkind: NemotronDeployment\n", "yaml"),
    ]  # fmt: skip
    return cases


def test_fifty_malformed_manifests_get_the_api_servers_messages(admission: Admission) -> None:
    assert admission.cluster is not None
    cases = malformed_manifests()
    assert len(cases) == 50
    started, failures = time.monotonic(), []
    for what, manifest, expect in cases:
        result = admission.cluster.kubectl(
            "apply", "--dry-run=server", "-f", "-", check=False,
            input=manifest.replace("namespace: ai", f"namespace: {admission.namespace}"),
        )  # fmt: skip
        if result.returncode == 0 or expect.lower() not in result.stderr.lower():
            failures.append((what, result.returncode, result.stderr[:300]))
    took = time.monotonic() - started
    print(f"\nFIGURE 50 malformed manifests through kubectl apply: {took:.1f} s")
    assert not failures, failures
