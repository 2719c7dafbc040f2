"""kopf's retry delays never run out: kopf 1.45 escalates (and the operator exits) once a Sized
list is spent, and a 403 from revoked RBAC would then be a crash loop."""

from __future__ import annotations

import itertools
from collections.abc import Sized

from nemotron_operator.controller.runtime.kopf_wiring import EndlessBackoffs


def test_the_configured_delays_then_the_last_one_for_ever() -> None:
    backoffs = EndlessBackoffs((0.5, 1.0, 8.0))
    assert not isinstance(backoffs, Sized)  # kopf counts attempts only for a Sized
    assert list(itertools.islice(backoffs, 6)) == [0.5, 1.0, 8.0, 8.0, 8.0, 8.0]
    # Every request starts from the first delay again.
    assert next(iter(backoffs)) == 0.5
