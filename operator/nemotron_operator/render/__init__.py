"""Pure builders: (NemotronDeployment, plan, options) → the Kubernetes objects that serve it.

``render_all`` is the entry point; each ``build_<kind>`` is usable on its own. Nothing here reads
the environment, files or the clock, and the output does not depend on dict order.
"""

from nemotron_operator.render.all import KIND_ORDER, render_all
from nemotron_operator.render.errors import RenderError
from nemotron_operator.render.inputs import ModelFacts, Owner, PlanResultLike, RenderOptions
from nemotron_operator.render.monitoring import build_pod_monitor
from nemotron_operator.render.names import Names
from nemotron_operator.render.nodepool import build_node_pool
from nemotron_operator.render.pod import build_pod_template, build_vllm_container
from nemotron_operator.render.services import (
    build_headless_service,
    build_pod_disruption_budget,
    build_service,
)
from nemotron_operator.render.storage import (
    build_download_container,
    build_persistent_volume_claim,
    build_volume_claim_template,
)
from nemotron_operator.render.workload import build_statefulsets, config_hash

__all__ = [
    "KIND_ORDER",
    "ModelFacts",
    "Names",
    "Owner",
    "PlanResultLike",
    "RenderError",
    "RenderOptions",
    "build_download_container",
    "build_headless_service",
    "build_node_pool",
    "build_persistent_volume_claim",
    "build_pod_disruption_budget",
    "build_pod_monitor",
    "build_pod_template",
    "build_service",
    "build_statefulsets",
    "build_vllm_container",
    "build_volume_claim_template",
    "config_hash",
    "render_all",
]
