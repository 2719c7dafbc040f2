"""Which child kinds a reconcile applies: built-in ones always; an optional kind only when its
CRD was discovered; the gateway's and DRA's only when the operator runs with them; never one
whose watch got a 404."""

from __future__ import annotations

import pytest

from nemotron_operator.controller.watch.served_kinds import served_children
from nemotron_operator.kube.resources import (
    CHILD_RESOURCES,
    DRA_RESOURCES,
    GATEWAY_RESOURCES,
    NODE_POOLS,
    OPTIONAL_RESOURCES,
    STATEFULSETS,
)

BUILT_IN = frozenset(r for r in CHILD_RESOURCES if r not in OPTIONAL_RESOURCES)
EVERYTHING = frozenset(OPTIONAL_RESOURCES)


@pytest.mark.parametrize(
    ("gateway", "dra", "expected"),
    [
        (True, True, BUILT_IN | EVERYTHING),
        (False, True, (BUILT_IN | EVERYTHING) - GATEWAY_RESOURCES),
        (True, False, (BUILT_IN | EVERYTHING) - DRA_RESOURCES),
        (False, False, (BUILT_IN | EVERYTHING) - GATEWAY_RESOURCES - DRA_RESOURCES),
    ],
)
def test_the_gateways_and_dras_kinds_only_where_the_operator_runs_with_them(
    gateway: bool, dra: bool, expected: frozenset[object]
) -> None:
    assert served_children(EVERYTHING, inference_gateway=gateway, dra=dra) == expected


def test_optional_kinds_only_when_discovered_and_never_after_a_404() -> None:
    assert NODE_POOLS in OPTIONAL_RESOURCES
    assert STATEFULSETS in BUILT_IN
    nothing = served_children(frozenset(), inference_gateway=True, dra=True)
    assert NODE_POOLS not in nothing
    assert STATEFULSETS in nothing
    found = served_children(frozenset({NODE_POOLS}), inference_gateway=True, dra=True)
    assert NODE_POOLS in found
    gone = served_children(
        frozenset({NODE_POOLS}), inference_gateway=True, dra=True, unserved=[NODE_POOLS]
    )
    assert NODE_POOLS not in gone
    assert STATEFULSETS in gone
