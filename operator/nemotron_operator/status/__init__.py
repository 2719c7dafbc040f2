"""Pure status computation: (spec facts, plan or problem, capacity, observed children, previous
status, now) → status. No I/O, no clock: the controller passes ``now`` in."""

from nemotron_operator.status.capacity import Capacity, check_capacity
from nemotron_operator.status.compute import Problem, StatusInputs, compute_status
from nemotron_operator.status.conditions import flipped, transition
from nemotron_operator.status.observe import Blocker, Observation, observe

__all__ = [
    "Blocker",
    "Capacity",
    "Observation",
    "Problem",
    "StatusInputs",
    "check_capacity",
    "compute_status",
    "flipped",
    "observe",
    "transition",
]
