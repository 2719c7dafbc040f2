"""The simulated cluster's GPU nodes from a compact description (``--nodes``), such as
``NVIDIA-H200:8x2,NVIDIA-B200:8x1``.

Each entry is ``PRODUCT:GPUSxNODES``: ``NVIDIA-H200:8x2`` is two nodes with eight H200 each;
``PRODUCT:GPUSxNODES:dra`` makes nodes whose GPUs a DRA driver publishes (nemotron_sim.agents
.node_objects); ``none`` is no GPU node.
"""

from __future__ import annotations

import re

from nemotron_sim.agents.node_objects import NodeGroup, NodeSpecError

DEFAULT_NODES = "NVIDIA-H200:8x2,NVIDIA-B200:8x1"
_ENTRY = re.compile(
    r"^(?P<product>[A-Za-z0-9][A-Za-z0-9._-]*):(?P<gpus>[0-9]+)x(?P<nodes>[0-9]+)(?P<dra>:dra)?$"
)


def parse_node_spec(text: str) -> list[NodeGroup]:
    """Parse ``PRODUCT:GPUSxNODES[:dra][,...]``; the same product may not appear twice with
    the same kind of allocation; ``none``: no GPU node at all (Karpenter may launch them)."""
    groups: list[NodeGroup] = []
    if text.strip().lower() == "none":
        return groups
    for raw in text.split(","):
        entry = raw.strip()
        match = _ENTRY.match(entry)
        if match is None:
            raise NodeSpecError(
                f"bad node group {entry!r}: expected PRODUCT:GPUSxNODES, "
                "e.g. NVIDIA-H200:8x2 (two nodes with eight H200 each) or NVIDIA-H200:8x2:dra "
                "(their GPUs published as DRA ResourceSlices)"
            )
        group = NodeGroup(
            match["product"], int(match["gpus"]), int(match["nodes"]), dra=bool(match["dra"])
        )
        if group.gpus_per_node < 1 or group.nodes < 1:
            raise NodeSpecError(f"bad node group {entry!r}: GPUs and nodes must be at least 1")
        if any((g.product, g.dra) == (group.product, group.dra) for g in groups):
            raise NodeSpecError(f"GPU product {group.product} appears twice in {text!r}")
        groups.append(group)
    return groups
