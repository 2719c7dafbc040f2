"""The memory model and the planner (pure): which GPUs a Nemotron deployment needs, how it is laid
out on them, and how many full-length requests it then holds — with the arithmetic."""

from nemotron_operator.sizing.errors import PlanningError
from nemotron_operator.sizing.inventory import (
    GpuInventory,
    GpuNode,
    gpus_by_node,
    inventory_from_nodes,
    inventory_from_usage,
    requested_gpus,
)
from nemotron_operator.sizing.memory import Layout, LayoutMemory, evaluate
from nemotron_operator.sizing.result import PlanResult, plan_deployment
from nemotron_operator.sizing.settings import EngineSettings, resolve_settings

__all__ = [
    "EngineSettings",
    "GpuInventory",
    "GpuNode",
    "Layout",
    "LayoutMemory",
    "PlanResult",
    "PlanningError",
    "evaluate",
    "gpus_by_node",
    "inventory_from_nodes",
    "inventory_from_usage",
    "plan_deployment",
    "requested_gpus",
    "resolve_settings",
]
