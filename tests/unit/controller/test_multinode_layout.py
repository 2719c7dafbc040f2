"""decide/multinode.py: the MultiNodeBackend condition, and a switch of layout on a live
deployment refused (the running layout kept, the other not applied)."""

from __future__ import annotations

from typing import Any

from nemotron_operator.api.errors import parse_deployment
from nemotron_operator.controller.decide.multinode import decide, lws_by_default
from nemotron_operator.kube.resources import LEADER_WORKER_SETS, STATEFULSETS
from tests.unit.render.fakes import make_plan

TWO = make_plan(nodes_per_replica=2, gpus_per_replica=16, tensor_parallel=8, pipeline_parallel=2)
LWS = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
       "metadata": {"name": "s-lws"}}  # fmt: skip
STS = [{"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": n}}
       for n in ("s-0", "s-0-w")]  # fmt: skip
SERVICE = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}}


def deployment(backend: str | None = None) -> Any:
    spec: dict[str, Any] = {"model": {"id": "nvidia/NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-BF16"}}
    if backend:
        spec["multiNode"] = {"backend": backend}
    return parse_deployment({
        "apiVersion": "serving.nemotron.io/v1alpha1", "kind": "NemotronDeployment",
        "metadata": {"name": "s", "namespace": "ai"}, "spec": spec,
    })  # fmt: skip


def test_the_condition_says_which_layout_and_why() -> None:
    served = frozenset({LEADER_WORKER_SETS})
    layout = decide(deployment(), TWO, [SERVICE, LWS], {}, served)
    assert layout.condition == (
        "True", "LeaderWorkerSet",
        "one LeaderWorkerSet, a group of 2 pods per replica, recreated whole: the cluster "
        "serves LWS's CRD",
    )  # fmt: skip
    layout = decide(deployment("StatefulSet"), TWO, [SERVICE, *STS], {}, served)
    assert layout.condition == (
        "True", "StatefulSet",
        "a leader and a worker StatefulSet per replica (2 nodes): spec.multiNode.backend says so",
    )  # fmt: skip
    assert decide(deployment(), make_plan(), [SERVICE], {}, served).condition is None


def test_a_named_lws_backend_without_its_crd_says_so() -> None:
    layout = decide(deployment("LeaderWorkerSet"), TWO, [SERVICE, LWS], {}, frozenset())
    assert layout.condition is not None
    assert layout.condition[:2] == ("False", "LeaderWorkerSetNotServed")
    assert (
        "install LWS (sigs.k8s.io/lws), or set spec.multiNode.backend: StatefulSet"
        in (layout.condition[2])
    )


def test_switching_layout_on_a_live_deployment_is_refused_and_the_running_one_kept() -> None:
    live = {(STATEFULSETS, "s-0"): {}, (STATEFULSETS, "s-0-w"): {}}
    layout = decide(deployment("LeaderWorkerSet"), TWO, [SERVICE, LWS], live,
                    frozenset({LEADER_WORKER_SETS}))  # fmt: skip
    assert layout.desired == [SERVICE]  # the LeaderWorkerSet is not applied
    assert layout.keep == frozenset(live)  # nor are the StatefulSets pruned
    assert layout.condition is not None
    assert layout.condition[:2] == ("False", "SwitchRefused")
    assert (
        "To switch, delete and recreate the NemotronDeployment; to stay, set "
        in (layout.condition[2])
    )
    assert layout.condition[2].endswith("spec.multiNode.backend: StatefulSet")
    running = {(LEADER_WORKER_SETS, "s-lws"): {}}
    served = frozenset({LEADER_WORKER_SETS})
    back = decide(deployment("StatefulSet"), TWO, [SERVICE, *STS], running, served)
    assert back.desired == [SERVICE]
    assert back.keep == frozenset({(LEADER_WORKER_SETS, "s-lws")})


def test_the_default_keeps_a_deployment_on_the_statefulsets_it_runs_on() -> None:
    served = frozenset({LEADER_WORKER_SETS})
    assert lws_by_default(served, [], [])  # a new deployment: LWS where it is served
    assert not lws_by_default(frozenset(), [], [])  # not served: StatefulSets
    # Running on StatefulSets when LWS's CRD appeared: the default stays there...
    assert not lws_by_default(served, STS, [])
    # ...and a deployment on LWS (whose groups are StatefulSets too) stays on LWS.
    assert lws_by_default(served, STS, [LWS])
    layout = decide(deployment(), TWO, [SERVICE, *STS], {}, served)
    assert layout.condition is not None
    status, reason, message = layout.condition
    assert (status, reason) == ("True", "StatefulSet")
    assert "the default keeps the layout the replicas ran on before LWS's CRD" in message
