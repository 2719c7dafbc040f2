"""Pure status computation: (spec facts, plan or problem, capacity, the children's readiness,
previous status, now) → status. No I/O, no clock: the controller passes ``now`` in."""

from nemotron_operator.status import startup
from nemotron_operator.status.capacity import Capacity, check_capacity, node_pool_problem
from nemotron_operator.status.compute import Problem, StatusInputs, compute_status
from nemotron_operator.status.conditions import flipped, transition
from nemotron_operator.status.readiness import Blocker, Readiness, assess_readiness

__all__ = [
    "Blocker",
    "Capacity",
    "Problem",
    "Readiness",
    "StatusInputs",
    "assess_readiness",
    "check_capacity",
    "compute_status",
    "flipped",
    "node_pool_problem",
    "startup",
    "transition",
]
