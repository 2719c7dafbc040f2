"""What the renderer needs besides the NemotronDeployment: the plan, facts about the model, and
options the controller (or the CLI) decides."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from nemotron_operator.api import API_VERSION, KIND, Plan


class ModelFacts(Protocol):
    """The catalog facts the vLLM flags depend on (``catalog.ModelEntry`` satisfies it)."""

    @property
    def hf_id(self) -> str: ...
    @property
    def family(self) -> str: ...
    @property
    def layer_pattern(self) -> str: ...
    @property
    def vision(self) -> bool: ...
    @property
    def mtp_layers(self) -> int: ...
    @property
    def trust_remote_code(self) -> bool: ...
    @property
    def default_reasoning_parser(self) -> str | None: ...
    @property
    def default_tool_call_parser(self) -> str | None: ...
    @property
    def max_position_embeddings(self) -> int: ...
    @property
    def trained_context(self) -> int: ...


class PlanResultLike(Protocol):
    """What ``sizing.plan_deployment`` returns, as far as rendering is concerned."""

    @property
    def plan(self) -> Plan: ...
    @property
    def model(self) -> ModelFacts: ...


@dataclass(frozen=True)
class Owner:
    """The NemotronDeployment that owns the namespaced children (for ownerReferences)."""

    name: str
    uid: str
    api_version: str = API_VERSION
    kind: str = KIND

    def reference(self) -> dict[str, object]:
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "name": self.name,
            "uid": self.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }


@dataclass(frozen=True)
class RenderOptions:
    """Decisions that are not in the spec.

    ``owner``: set by the controller; the CLI has no uid and renders no ownerReferences.
    ``allow_remote_code``: the administrator's permission for ``--trust-remote-code`` on models
    outside the catalog (catalog models that need it always get it).
    ``plugin_digest``: a digest of the reasoning-parser ConfigMap's data, when the controller has
    read it, so that editing the plugin file rolls the pods.
    """

    owner: Owner | None = None
    allow_remote_code: bool = False
    plugin_digest: str | None = None
    # spec.networkPolicy lets the operator's namespace reach the API port (its readiness check
    # and scrapes); the CLI renders without one.
    operator_namespace: str | None = None
    # The cluster serves LeaderWorkerSet's CRD: a multi-node replica whose spec names no
    # backend runs on a LeaderWorkerSet (spec.multiNode.backend). The CLI has no cluster.
    leader_worker_set_served: bool = False
