"""A plan with a given KV-cache size, shared by the plan-check and tracker tests."""

from __future__ import annotations

from nemotron_operator.api import Plan
from tests.status_objects import full_status


def plan(blocks: int = 6000) -> Plan:
    """A plan of ``blocks`` KV blocks, 150 per full-length (262,144-token) request."""
    wire = full_status()["plan"]
    wire.update(kvCacheBlocks=blocks, blocksPerSequence=150, maxModelLen=262144)
    wire.update(maxConcurrency=blocks / 150, kvCacheTokens=int(blocks / 150 * 262144))
    return Plan.model_validate(wire)
